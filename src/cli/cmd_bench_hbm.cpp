// SPDX-License-Identifier: MIT
// Placeholder until the hbm model lands: registers no benchmark.
#include "bench_common.hpp"

namespace trnsim::cli {

void register_bench_hbm(CLI::App& /*bench*/, Registry& /*reg*/) {}

}  // namespace trnsim::cli
