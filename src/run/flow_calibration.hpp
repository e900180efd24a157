// SPDX-License-Identifier: MIT
// The flow network's calibration from the packet fabric (rack.fabric.flow_calibration packet or
// workload; docs/models/fidelity.md, "Flow calibration"), as the op tier is calibrated from the
// tile tier.
//
// packet: for each traffic pattern (replay::traffic_pattern: a collective and the algorithm `auto` picks
// for it), one canonical case: that collective with that algorithm, kFlowCalibrationBytes per
// rank on every chip of the rack, run in child processes on the packet fabric and twice on the
// flow network (links at full and at half efficiency). The two flow runs split the flow time
// into a part that does not scale with link bandwidth (latency, endpoint and runtime costs,
// reductions off the links) and one that does (data); the pattern's efficiency is the flow data
// time over the packet time less that fixed part, at most 1. A flow of that pattern then drains
// its wire bytes over it.
//
// workload: the cases are the workload's own collectives instead (WorkSource::calibration_ops):
// one per class of kind, group size and size range, its median instance on its own group at its
// own size (up to 1 GiB per rank), with the config's algorithm and rank placement; the classes
// with the most bytes set a pattern first. A collective whose traffic crosses the rack as the
// workload's does (a 16-member expert-parallel all-to-all across servers) loses what the packet
// fabric loses on it, which a whole-rack case of another size does not show.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trnsim/config/config.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/run/run.hpp"

namespace trnsim::run {

// Per rank of each canonical case: a few packets per pair of a 144-chip all-to-all, seconds of
// packet simulation on the largest preset.
inline constexpr std::uint64_t kFlowCalibrationBytes = 32ull << 20;

struct FlowCalibrationResult {
  std::array<double, 16> efficiency{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  // What was calibrated, from what, and what came out: one object per case (report.json
  // identity.models.network.flow_calibration).
  nlohmann::json provenance;
  std::string from;  // "simulated" or "cache"
  std::string cache_key, cache_file;
  double wall_time_s = 0;
};

// Calibrates the flow network of `plan` (the rack as `loaded` configures it). Deterministic: the
// same config and build give the same efficiencies. Kept in the calibration cache's folder
// (flow_calibration/<key>.json, `cache`; off when it is disabled) and reused on a match of the
// whole canonical key (with `workload`, the cases' ops too). `source` is the run's work (needed
// with `workload` only); none when it has no collective to calibrate on.
std::optional<FlowCalibrationResult> calibrate_flow(const config::LoadedConfig& loaded,
                                                    const resolve::RackPlan& plan,
                                                    const CacheSettings& cache, int parallel,
                                                    const replay::WorkSource* source);

}  // namespace trnsim::run
