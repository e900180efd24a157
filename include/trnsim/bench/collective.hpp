// SPDX-License-Identifier: MIT
// `trnsim bench collective`: one collective on R ranks of a rack, through the whole replay path
// (chips, fabric, collective algorithms).
#pragma once

#include <optional>

#include <string>

#include "trnsim/bench/bench.hpp"

namespace trnsim::bench {

struct CollectiveArgs {
  std::string op = "all-reduce";  // all-reduce, all-gather, reduce-scatter or all-to-all
  std::string bytes = "1MiB";     // per rank, as in nccl-tests
  std::optional<int> ranks;       // ranks 0..R-1; none: every slot of the rack (0 is refused)
  int ranks_per_chip = 1;         // consecutive ranks per chip (/replay/placement block when > 1)
  bool sweep = false;             // sizes from 1 KiB to 1 GiB instead of `bytes`
  int sweep_factor = 4;           // steps of the sweep
};

// {"rack": its name, "ranks": R, "ranks_per_chip": K, "bound": the topology's bus-bandwidth
// bound, "points": [one object per size: time, algorithm, bus bandwidth, the critical member's
// time broken into launch, descriptor, sync, wire and reduction, the busiest link, and what
// limits the point]}. Loads `config` to check the ranks, then runs each size in its own child, which
// loads it again.
Json collective(const ConfigSource& config, const CollectiveArgs& a);

}  // namespace trnsim::bench
