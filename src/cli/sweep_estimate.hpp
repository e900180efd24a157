// SPDX-License-Identifier: MIT
// `trnsim sweep FILE --estimate`: each point's `run --estimate` (run::estimate_workload on the
// point's config and the sweep's workload, read once) and their total at the sweep's -j
// (run::estimate_pool), printed without running anything. docs/sweeps.md.
#pragma once

#include <string>
#include <vector>

#include "trnsim/run/run.hpp"
#include "trnsim/sweep/sweep.hpp"

namespace trnsim::cli {

// What `trnsim run` reads without --trace: a whole DeepSeek-V3 training step.
inline constexpr const char* kDefaultRunTrace = "traces/deepseek-v3-step-144.json.gz";

struct SweepEstimate {
  std::vector<run::EstimateReport> points;  // in the order of the points given
  run::PoolEstimate total;
  std::string text;
};

// The estimate of running `points` of `s` on `jobs` workers.
SweepEstimate estimate_sweep(const sweep::Sweep& s, const std::vector<sweep::Point>& points, int jobs);

}  // namespace trnsim::cli
