// SPDX-License-Identifier: MIT
// `trnsim run`: one whole-rack simulation of a workload, and what it reports.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trnsim/config/config.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

using Json = nlohmann::json;

struct RunOutput {
  Json summary;            // deterministic: same inputs, same bytes
  Json stats;              // every block's statistics by hierarchical name
  Json timeline;           // Chrome/Perfetto trace events, one per op
  std::string ops_csv;     // one row per op: rank, id, name, kind, start, end
  std::string text;        // the human-readable summary
  // Wall times are not part of the summary (they would break byte-identical reports).
  double wall_seconds = 0;        // elaboration + simulation
  double simulation_seconds = 0;  // sc_start() alone
  std::uint64_t delta_cycles = 0;
  std::uint64_t activations = 0;  // model process activations (common/activity.hpp)
  std::map<std::string, std::uint64_t> activations_by_kind;
};

// Elaborates the rack of `cfg` (chips, fabric), replays `workload` on it and collects the
// report. SystemC allows one elaboration per process: call this once per process.
// Throws InputError for configs, topologies and traces that cannot run (and for a replay that
// deadlocks), InternalError for broken invariants.
RunOutput run_workload(const config::LoadedConfig& cfg, const trace::Workload& workload);

// Chips of the rack of `cfg` (builds and validates its topology; no simulation).
std::size_t rack_chip_count(const config::LoadedConfig& cfg);

// Writes summary.json, config.json (fully resolved), stats.json, ops.csv and timeline.json into
// `dir` (created if missing), each atomically.
void write_outputs(const std::string& dir, const RunOutput& out, const config::LoadedConfig& cfg);

}  // namespace trnsim::run
