// SPDX-License-Identifier: MIT
// `trnsim serve`: a serving run (docs/serving.md). The spec names the rack, the model and its
// layout; the KV capacity of a replica comes from infer::kv_capacity; the requests run through
// the scheduler (serve/engine.hpp) whose iterations are timed on the rack (serve/timer.hpp); the
// figures (latency percentiles, throughput, goodput under the SLO, energy) are computed here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/serve/engine.hpp"
#include "trnsim/serve/spec.hpp"

namespace trnsim::serve {

using Json = config::Json;

struct ServeOptions {
  std::string spec_path;                  // the spec file
  std::vector<std::string> spec_sets;     // --set (on the spec)
  std::string rack;                       // --config (replaces the spec's rack); empty: the spec's
  std::vector<std::string> rack_sets;     // --rack-set (on the rack preset)
  std::vector<std::string> command_line;  // for the report's provenance
};

// Nearest-rank percentile (the smallest value with at least p of the values at or below it);
// 0 for none.
double percentile(std::vector<double> v, double p);

// The figures of a finished engine run: the "results" object of report.json. `chips` are the
// chips the replicas run on; `static_w` the static power of one replica's chips.
Json figures(const EngineResult& r, const SloParams& slo, int replicas, double chips,
             double static_w);

struct ServeResult {
  Json report;       // report.json
  std::string text;  // the summary printed
  std::vector<std::pair<std::string, std::string>> summary_csv;  // (column, value)
  std::string requests_csv;
  double wall_s = 0;
};

// Runs a serving spec. ConfigError / InputError (exit 2) for bad specs, racks and request files.
ServeResult serve(const ServeOptions& o);

}  // namespace trnsim::serve
