// SPDX-License-Identifier: MIT
// `trnsim serve`: a serving run (docs/serving.md). The spec names the rack, the model and its
// layout; the KV capacity of a replica comes from infer::kv_capacity; the requests run through
// the scheduler (serve/engine.hpp) whose iterations are timed on the rack (serve/timer.hpp); the
// figures (latency percentiles, throughput, goodput under the SLO, energy) are computed here.
#pragma once

#include <cstdint>
#include <functional>
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
  // --solve-users: the largest closed-loop concurrency whose p50 tokens/s per user meets this
  // target (0: no search; the spec's arrivals run as given).
  double solve_users_target = 0;
  std::uint64_t solve_max_users = 65536;     // --solve-max-users: the search's upper end
  std::uint64_t solve_requests_per_user = 4;  // --solve-requests-per-user: measured requests a point
  bool timeline = false;                      // build ServeResult::timeline (serve/timeline.hpp)
  bool no_cache = false;  // --no-cache: shape costs neither read from nor kept on disk
  // --held-back: grid shapes of the run simulated exactly after it, against their interpolation
  std::uint64_t held_back = 0;
};

// One concurrency tried by solve_users.
struct UsersPoint {
  std::uint64_t users = 0;
  double tokens_per_s_per_user = 0;
  bool meets = false;
};

struct UsersSolution {
  std::uint64_t users = 0;  // the largest concurrency found that meets the target (0: not even one)
  bool capped = false;      // max_users met the target: the answer is at least max_users
  std::vector<UsersPoint> points;  // in the order tried
};

// The largest concurrency n in [1, max_users] whose per_user(n) (tokens/s per user) is at least
// `target`: doubling from 1 until a point misses or max_users is reached, then bisection between
// the largest that met and the smallest that missed. Assumes per-user speed does not rise with
// users (each point is evaluated once). docs/serving.md#users-at-an-interactivity.
UsersSolution solve_users(const std::function<double(std::uint64_t)>& per_user, double target,
                          std::uint64_t max_users);

// Nearest-rank percentile (the smallest value with at least p of the values at or below it);
// 0 for none.
double percentile(std::vector<double> v, double p);

// percentile(v, p) for each p of `ps` (ascending), each rank selected in the part of the values
// above the rank before (std::nth_element: linear in the values, where a sort per percentile
// made report.json's figures O(n log n) in a run's tokens); the same values.
std::vector<double> percentiles(std::vector<double> v, const std::vector<double>& ps);

// The figures of a finished engine run: the "results" object of report.json. `chips` are the
// chips the replicas run on; `static_w` the static power of one replica's chips.
Json figures(const EngineResult& r, const SloParams& slo, int replicas, double chips,
             double static_w);

struct ServeResult {
  Json report;       // report.json
  std::string text;  // the summary printed
  std::vector<std::pair<std::string, std::string>> summary_csv;  // (column, value)
  std::string requests_csv;
  std::string timeline;  // timeline.json, when ServeOptions::timeline
  double wall_s = 0;
};

// Runs a serving spec. ConfigError / InputError (exit 2) for bad specs, racks and request files.
ServeResult serve(const ServeOptions& o);

}  // namespace trnsim::serve
