// SPDX-License-Identifier: MIT
#include "sweep_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "bench_common.hpp"
#include "trace_input.hpp"
#include "trnsim/serve/estimate.hpp"

namespace trnsim::cli {
namespace {

// The table of points: a header row, then one row per point; columns padded to their widest.
std::string aligned(std::vector<std::vector<std::string>> table) {
  std::vector<std::size_t> w;
  for (const auto& r : table) {
    w.resize(std::max(w.size(), r.size()), 0);
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string text;
  for (const auto& r : table) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) line += fmt::format("{:<{}}  ", r[i], w[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

std::vector<std::string> point_row(const sweep::Point& p) {
  std::vector<std::string> r{p.id};
  for (const auto& v : p.values) r.push_back(sweep::value_text(v));
  return r;
}

// A serving sweep: each point's `serve --estimate` (serve::estimate on the point's spec and rack
// sets, as the point's `trnsim serve` would read them) and their total at -j. Points that share
// a shape group (grid timing, one rack as loaded, model, layout, ...: the shape cache's key) share
// their shapes through the cache, so together they simulate at most the grid up to their largest
// reach in each dimension (serve::grid_box), or their bounds' sum if that is smaller; each point's
// wall range counts its share of that (its bound over the group's sum).
SweepEstimate estimate_serve_sweep(const sweep::Sweep& s, const std::vector<sweep::Point>& points,
                                   int jobs) {
  SweepEstimate out;
  std::vector<std::string> head{"point"};
  for (const auto& a : s.axes) head.push_back(a.name);
  head.insert(head.end(), {"requests", "shapes (at most)", "memory", "wall time", ""});
  std::vector<std::vector<std::string>> table{head};
  std::vector<serve::ServeEstimate> ests;
  for (const auto& p : points) {
    const sweep::ServeArgs a = sweep::serve_args(s.config, sweep::point_sets(s, p));
    serve::ServeOptions so;
    so.spec_path = s.serving;
    so.spec_sets = a.spec_sets;
    so.rack = a.rack;
    so.rack_sets = a.rack_sets;
    ests.push_back(serve::estimate(so));
    const serve::ServeEstimate& e = ests.back();
    std::vector<std::string> row = point_row(p);
    row.push_back(fmt::format("{}", e.requests));
    row.push_back(fmt::format("{}", e.shapes_max));
    row.push_back(fmt::format("{:.3g} GB", e.memory_bytes / 1e9));
    row.push_back(fmt::format("{:.3g} to {:.3g} s", e.wall_s_short, e.wall_s));
    row.push_back(e.smallest.fits && e.largest.fits ? "" : "beyond the budgets: refused");
    table.push_back(std::move(row));
  }
  // The shape groups, in the order of their first point: the points' bounds summed, and the
  // grid up to their largest reach.
  struct Group {
    std::string key;
    double sum = 0;
    serve::GridReach reach;
    std::size_t points = 0;
  };
  std::vector<Group> groups;
  std::vector<std::size_t> group_of(ests.size(), 0);
  double alone = 0;  // every point's own bound, summed
  for (std::size_t i = 0; i < ests.size(); ++i) {
    const serve::ServeEstimate& e = ests[i];
    alone += double(e.shapes_max);
    std::size_t g = 0;
    while (g < groups.size() && (e.shape_group.empty() || groups[g].key != e.shape_group)) ++g;
    if (g == groups.size()) groups.push_back({e.shape_group, 0, e.reach, 0});
    Group& gr = groups[g];
    gr.sum += double(e.shapes_max);
    ++gr.points;
    gr.reach.decode = std::max(gr.reach.decode, e.reach.decode);
    gr.reach.context = std::max(gr.reach.context, e.reach.context);
    gr.reach.prefill = std::max(gr.reach.prefill, e.reach.prefill);
    gr.reach.prefill_context = std::max(gr.reach.prefill_context, e.reach.prefill_context);
    group_of[i] = g;
  }
  double shapes = 0;
  std::vector<double> share(groups.size(), 1.0);  // the group's bound over its points' sum
  for (std::size_t g = 0; g < groups.size(); ++g) {
    double bound = groups[g].sum;
    if (!groups[g].key.empty()) bound = std::min(bound, double(serve::grid_box(groups[g].reach)));
    if (groups[g].sum > 0) share[g] = bound / groups[g].sum;
    shapes += bound;
  }
  for (std::size_t i = 0; i < ests.size(); ++i) {
    const serve::ServeEstimate& e = ests[i];
    // What the pool needs of a point: its wall range (its share of its group's shapes), its
    // memory and whether it would start.
    run::EstimateReport r;
    r.memory_bytes = e.memory_bytes;
    r.memory_budget = e.largest.memory_budget;
    r.wall_s_short = e.wall_s_short;
    r.wall_s = std::max(e.wall_s_short, e.wall_s * share[group_of[i]]);
    r.fits = e.smallest.fits && e.largest.fits;
    out.points.push_back(std::move(r));
  }
  out.text = aligned(std::move(table));
  out.total = run::estimate_pool(out.points, jobs);
  const run::PoolEstimate& t = out.total;
  out.text += fmt::format(
      "estimate of serving sweep {} ({} points of {}, -j {}):\n"
      "  shapes       {:.4g} at most, all points together: {} shape group{} (points on one rack, "
      "model, layout and grid share their shapes through the shape cache: a group's grid up to its "
      "largest reach, counted once; {:.4g} the points' bounds summed)\n"
      "  CPU time     about {:.3g} to {:.3g} s, the points' wall times summed (each point's share "
      "of its group's shapes)\n"
      "  wall time    about {:.3g} to {:.3g} s: the points in order, each on the first of the {} "
      "workers free (each point's `serve --estimate` range, its share of its group's shapes; a "
      "guide, not a bound)\n"
      "  memory       {:.3g} GB at most at once\n",
      s.name, points.size(), s.serving, t.jobs, shapes, groups.size(), groups.size() == 1 ? "" : "s",
      alone, t.cpu_s_short, t.cpu_s, t.wall_s_short, t.wall_s, t.jobs, t.memory_peak_bytes / 1e9);
  return out;
}

}  // namespace

SweepEstimate estimate_sweep(const sweep::Sweep& s, const std::vector<sweep::Point>& points, int jobs) {
  if (s.kind() == sweep::RunKind::serve) return estimate_serve_sweep(s, points, jobs);
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
    std::vector<std::string> r = point_row(p);
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
  out.text = aligned(std::move(table));
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
