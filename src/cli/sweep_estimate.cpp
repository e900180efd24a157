// SPDX-License-Identifier: MIT
#include "sweep_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "bench_common.hpp"
#include "trace_input.hpp"

namespace trnsim::cli {

SweepEstimate estimate_sweep(const sweep::Sweep& s, const std::vector<sweep::Point>& points, int jobs) {
  // The workload of every point: read once, as each point's `trnsim run` reads it.
  TraceInput in;
  in.path = s.trace;
  in.log_warnings = true;
  const LoadedTrace trace = load_trace(in, data_path(kDefaultRunTrace));
  SweepEstimate out;
  std::vector<std::string> head{"point"};
  for (const auto& a : s.axes) head.push_back(a.name);
  std::vector<std::vector<std::string>> table;
  for (const auto& p : points) {
    const config::LoadedConfig cfg = config::load_config(s.config, sweep::point_sets(s, p));
    run::EstimateReport e = run::estimate_workload(cfg, trace.workload);
    std::vector<std::string> r{p.id};
    for (const auto& v : p.values) r.push_back(sweep::value_text(v));
    r.push_back(fmt::format("{:.3g}", e.events));
    r.push_back(fmt::format("{:.3g} GB", e.memory_bytes / 1e9));
    r.push_back(fmt::format("{:.3g} to {:.3g} s", e.wall_s_short, e.wall_s));
    r.push_back(e.fits ? "" : "beyond the budgets: refused");
    table.push_back(std::move(r));
    e.text.clear();  // each point's lines are the row above
    out.points.push_back(std::move(e));
  }
  head.insert(head.end(), {"events", "memory", "wall time", ""});
  table.insert(table.begin(), head);
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& r : table) {
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  for (const auto& r : table) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) line += fmt::format("{:<{}}  ", r[i], w[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.text += line + "\n";
  }
  out.total = run::estimate_pool(out.points, jobs);
  const run::PoolEstimate& t = out.total;
  out.text += fmt::format(
      "estimate of sweep {} ({} points of workload {}, -j {}):\n"
      "  events       {:.3g}, all points together\n"
      "  CPU time     about {:.3g} to {:.3g} s, the points' wall times summed\n"
      "  wall time    about {:.3g} to {:.3g} s: {} (the points' simulations only, at the rates "
      "of `run --estimate`; a guide, not a bound)\n"
      "  memory       {:.3g} GB at most at once: {} (budget {:.3g} GB a point, "
      "/sim/memory_budget)\n"
      "  {}\n",
      s.name, points.size(), trace.files.empty() ? s.trace : trace.files.front(), t.jobs,
      t.events, t.cpu_s_short, t.cpu_s, t.wall_s_short, t.wall_s,
      t.jobs == 1 ? std::string("the points one after the other")
                  : fmt::format("the points in order, each on the first of the {} workers free", t.jobs),
      t.memory_peak_bytes / 1e9,
      std::min<std::size_t>(std::size_t(t.jobs), points.size()) == 1
          ? std::string("the largest point")
          : fmt::format("the {} largest points together",
                        std::min<std::size_t>(std::size_t(t.jobs), points.size())),
      t.memory_budget / 1e9,
      t.beyond_budgets == 0
          ? std::string("every point within the budgets: each would start")
          : fmt::format("{} of {} points beyond the budgets: they would be refused (and fail)",
                        t.beyond_budgets, points.size()));
  return out;
}

}  // namespace trnsim::cli
