// SPDX-License-Identifier: MIT
// The report layer: turns what a run measured (run::RunData) into the files and text a user
// reads. It formats; it never simulates, and it reads the models only through their statistics.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/run/run.hpp"

namespace trnsim::report {

using Json = nlohmann::json;

struct Report {
  Json summary;          // deterministic: same inputs, same bytes
  Json stats;            // every block's statistics by hierarchical name
  Json timeline;         // Chrome/Perfetto trace events, one per op
  std::string ops_csv;   // one row per op: rank, id, name, kind, start, end
  std::string text;      // the human-readable summary
};

Report make_report(const run::RunData& run);

// count, mean, p50, p99 and max of `seconds`, in nanoseconds (nearest-rank percentiles); an empty
// object for no values.
Json percentiles_ns(std::vector<double> seconds);

// Writes summary.json, config.json (fully resolved), stats.json, ops.csv and timeline.json into
// `dir` (created if missing), each atomically.
void write_outputs(const std::string& dir, const Report& report, const config::LoadedConfig& cfg);

}  // namespace trnsim::report
