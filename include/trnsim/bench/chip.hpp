// SPDX-License-Identifier: MIT
// `trnsim bench gemm` and `trnsim bench dma`: the chip model of the config, as configured.
#pragma once

#include <cstdint>
#include <string>

#include "trnsim/bench/bench.hpp"

namespace trnsim::bench {

struct GemmArgs {
  std::uint64_t m = 8192, k = 8192, n = 8192, batch = 1;
  std::string dtype = "bf16";
  bool sweep = false;            // square 128..16384 and skinny shapes instead of m x k x n
  bool fallback_memory = false;  // the bandwidth memory model instead of the configured one
};

// One GEMM on one chip: time, TFLOPS, utilisation, energy and power. With `sweep`,
// {"gemm_sweep": [one such object per shape]}. Each shape runs in its own child, which loads
// `config`.
Json gemm(const ConfigSource& config, const GemmArgs& a);

struct DmaArgs {
  std::string bytes = "32768";
  std::string direction = "hbm-to-sbuf";  // or sbuf-to-hbm
  int engines = 1;
  bool cross_engine = false;  // the trigger waits on another engine's semaphore
  bool fallback_memory = false;
};

// One DMA between HBM and SBUF of core 0: time, bandwidth and where the time went. Runs in a
// child, which loads `config`.
Json dma(const ConfigSource& config, const DmaArgs& a);

}  // namespace trnsim::bench
