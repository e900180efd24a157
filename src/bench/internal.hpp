// SPDX-License-Identifier: MIT
// What the benchmark drivers share and the CLI does not see.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/power.hpp"
#include "trnsim/config/config.hpp"

namespace trnsim::bench {

// The chip of the loaded config; ConfigError naming `file` (the config as the user gave it;
// empty: the loaded path) when it has none.
const config::ChipParams& chip_of(const config::LoadedConfig& c, const std::string& file);

// The power model the config chooses (/chip/power/model), for the chip as configured.
std::unique_ptr<model::PowerModel> power_of(const config::LoadedConfig& c);

// Host seconds since `t0`: the wall-time figures of the benchmarks.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace trnsim::bench
