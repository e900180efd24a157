// SPDX-License-Identifier: MIT
// `trnsim bench kernel`: the activation rate of a bare SystemC event loop on this machine, the
// yardstick for the models' own rate (`trnsim run` prints process activations per second).
#pragma once

#include <cstdint>

#include "trnsim/bench/bench.hpp"

namespace trnsim::bench {

struct KernelArgs {
  int processes = 20000;
  std::uint64_t activations = 20'000'000;
  bool threads = false;  // SC_THREADs that wait(period) instead of SC_METHODs
};

// Runs `processes` self-retriggering method (or, with `threads`, thread) processes for `activations` activations in a
// child: the wall time and the activations per second.
Json kernel(const KernelArgs& a);

}  // namespace trnsim::bench
