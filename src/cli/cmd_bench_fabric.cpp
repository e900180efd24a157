// SPDX-License-Identifier: MIT
// Placeholder until the fabric model lands: registers no benchmark.
#include "bench_common.hpp"

namespace trnsim::cli {

void register_bench_fabric(CLI::App& /*bench*/, Registry& /*reg*/) {}

}  // namespace trnsim::cli
