// SPDX-License-Identifier: MIT
// `trnsim bench ping` and `trnsim bench traffic`: the packet-level fabric of a rack preset.
#pragma once

#include <string>

#include "trnsim/bench/bench.hpp"

namespace trnsim::bench {

struct PingArgs {
  std::string bytes = "64";  // 0 is a bare completion
};

// One message between every ordered pair of chips, one pair at a time on an idle fabric: the
// latency distribution and the breakdown of the worst pair. Runs in a child, which loads
// `config`.
Json ping(const ConfigSource& config, const PingArgs& a);

struct TrafficArgs {
  std::string pattern = "uniform";  // uniform, all-to-all or bisection
  double load = 0.5;                // uniform: fraction of injection bandwidth
  bool sweep = false;               // uniform: loads 0.1, 0.2, ... 1.0
  std::string bytes;                // empty: one packet (uniform), 1MiB per pair (the others)
  std::string window = "20us";      // uniform: measurement window
  std::string warmup = "5us";       // uniform: warm-up before it
  // Which uniform-only options the user gave: any of them with another pattern is an error.
  struct Given {
    bool load = false, sweep = false, window = false, warmup = false;
  } given;
};

// Throughput and latency of the whole fabric under the pattern; with `sweep`, one point per load
// and the saturation figures. Each point runs in its own child, which loads `config`.
Json traffic(const ConfigSource& config, const TrafficArgs& a);

}  // namespace trnsim::bench
