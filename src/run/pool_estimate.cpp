// SPDX-License-Identifier: MIT
// The estimate of a pool of runs (`sweep --estimate`): what each run's estimate adds up to when
// `jobs` of them run at once.
#include <algorithm>
#include <functional>
#include <queue>

#include "trnsim/run/run.hpp"

namespace trnsim::run {

namespace {

// The end of running `walls` in order on `jobs` workers, each run on the first worker free.
double pool_end(const std::vector<double>& walls, int jobs) {
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int i = 0; i < jobs; ++i) free_at.push(0.0);
  double end = 0;
  for (double w : walls) {
    const double start = free_at.top();
    free_at.pop();
    free_at.push(start + w);
    end = std::max(end, start + w);
  }
  return end;
}

}  // namespace

PoolEstimate estimate_pool(const std::vector<EstimateReport>& runs, int jobs) {
  PoolEstimate p;
  p.jobs = std::max(1, jobs);
  std::vector<double> shorts, longs, memory;
  for (const EstimateReport& r : runs) {
    p.events += r.events;
    p.cpu_s_short += r.wall_s_short;
    p.cpu_s += r.wall_s;
    shorts.push_back(r.wall_s_short);
    longs.push_back(r.wall_s);
    memory.push_back(r.memory_bytes);
    p.memory_budget = std::max(p.memory_budget, r.memory_budget);
    p.beyond_budgets += r.fits ? 0 : 1;
  }
  p.wall_s_short = pool_end(shorts, p.jobs);
  p.wall_s = pool_end(longs, p.jobs);
  std::sort(memory.begin(), memory.end(), std::greater<>());
  for (std::size_t i = 0; i < memory.size() && i < std::size_t(p.jobs); ++i) {
    p.memory_peak_bytes += memory[i];
  }
  return p;
}

}  // namespace trnsim::run
