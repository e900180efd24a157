// SPDX-License-Identifier: MIT
// `trnsim serve --estimate`: what a serving run knows before it simulates anything (its requests
// and their tokens, the iterations and distinct shapes they bound, one iteration's run estimate)
// and the expected wall range, without simulating (docs/serving.md, "Estimate").
#pragma once

#include <cstdint>
#include <string>

#include "trnsim/run/run.hpp"
#include "trnsim/serve/serve.hpp"

namespace trnsim::serve {

// Grid mode: the largest shape a run's requests can reach in each dimension, and the fixed grid's
// parameters; grid_box counts the grid's points up to it. A run reaching less in every dimension
// has its points among these, so runs sharing a shape cache's key and these parameters (a curve's
// points on one rack) simulate at most grid_box of their largest reach between them.
struct GridReach {
  std::uint64_t decode = 0, context = 0, prefill = 0, prefill_context = 0;
  std::uint64_t tile = 1, dp = 1;  // the key and row tile; the layout's attention groups
  int per_octave = 2;
};

// The points of the fixed grid reachable up to `r` (pure decodes, pure prefills, mixed chunks
// and their anchor decodes off the decode box): serve --estimate's grid bound.
std::uint64_t grid_box(const GridReach& r);

struct ServeEstimate {
  std::uint64_t requests = 0;             // issued, warm-up included
  double input_tokens = 0, output_tokens = 0;
  std::uint64_t max_input = 0, max_output = 0;  // of one request
  // Iterations without preemptions: at least the longest request's output tokens and the tokens
  // over the token budget, at most one per token (each iteration moves at least one).
  std::uint64_t iterations_min = 0, iterations_max = 0;
  // Distinct shapes simulated, at most: grid, the points of the timer's fixed grid the requests
  // can reach (decode batch and KV length; prefill chunk and its context; a mixed iteration's
  // batch on the mixed grid, its chunk and context) and 14 an iteration; exact, one an iteration.
  std::uint64_t shapes_max = 0, grid_box = 0;
  // Grid mode: the reach grid_box was counted to, and what the shapes' costs are simulated from
  // besides the shape (the shape cache's key without the build: the rack as loaded, the model,
  // layout, dtypes, runtime costs, routing seed, buckets) with the grid's points per octave.
  // Runs with the same `shape_group` share their shapes through the cache; empty in exact mode.
  GridReach reach;
  std::string shape_group;
  // The run estimates (run::estimate_workload) of the smallest and the largest shape.
  run::EstimateReport smallest, largest;
  Shape smallest_shape, largest_shape;
  int parallel = 1;
  // The serving process (requests, records) and `parallel` iteration children at once.
  double memory_bytes = 0, parent_bytes = 0;
  // One shape at the smallest's short end to shapes_max at the largest's (events at the fast rate), over
  // `parallel` children.
  double wall_s_short = 0, wall_s = 0;
  std::string text;
};

// Reads the spec, its rack, model and requests as serve() does, and estimates; ConfigError as
// serve() for bad specs. Not for --solve-users (its requests are not known before it runs).
ServeEstimate estimate(const ServeOptions& o);

}  // namespace trnsim::serve
