// SPDX-License-Identifier: MIT
// `trnsim bench hbm`: the HBM of one chip under many concurrent requesters.
#pragma once

#include <string>

#include "trnsim/bench/bench.hpp"

namespace trnsim::bench {

struct HbmArgs {
  std::string pattern = "seq-read";  // seq-read, seq-write, copy, random-read or streams
  std::string bytes = "256MiB";
  std::string chunk = "64KiB";
  int requesters = 64;
  // streams only; a default derived from the others unless given (see `given`).
  std::string stride, group_stride, second_base;
  int group = 0, depth = 1;
  // Which streams options the user gave: any of them with another pattern is an error.
  struct Given {
    bool stride = false, group = false, group_stride = false, depth = false, second_base = false;
  } given;
};

// Achieved bandwidth, row-buffer behaviour and energy of the HBM of the config's chip. Checks
// the arguments, loads `config`, then measures in a child.
Json hbm(const ConfigSource& config, const HbmArgs& a);

}  // namespace trnsim::bench
