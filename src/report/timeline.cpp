// SPDX-License-Identifier: MIT
// timeline.json: Chrome/Perfetto trace events of a run (docs/report.md, "Timeline"). One process
// per used chip with a thread per lane of concurrent ops, a "machine" process with the counter
// tracks, flow arrows from the member that started a collective last to the others.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "trnsim/config/schema.hpp"
#include "trnsim/report/breakdown.hpp"
#include "trnsim/report/report.hpp"

namespace trnsim::report {

namespace {

double us(const sc_core::sc_time& t) { return ns_of(t) / 1e3; }

Json meta(const char* what, int pid, int tid, const std::string& name) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

Json op_args(const trace::Op& op) {
  Json a = {{"id", op.id}, {"kind", std::string(trace::kind_name(op.kind))}};
  if (const auto p = trace::infer_phase(op)) a["phase"] = std::string(config::enum_name(*p));
  if (const auto l = trace::infer_layer(op)) a["layer"] = *l;
  if (trace::is_compute(op.kind) && op.kind != trace::OpKind::delay) {
    a["flops"] = trace::op_flops(op);
    a["dtype"] = std::string(config::enum_name(op.dtype));
  }
  if (const double b = trace::comm_bytes(op); b > 0) a["bytes"] = b;
  if (!op.group.empty()) a["group"] = op.group;
  if (trace::is_p2p(op.kind)) a["peer"] = op.peer;
  return a;
}

}  // namespace

TimelineSelection select_timeline_ops(const run::RunData& d, const TimelineOptions& o) {
  TimelineSelection sel;
  const std::set<int> ranks(o.ranks.begin(), o.ranks.end());
  for (std::size_t i = 0; i < d.records.size(); ++i) {
    const auto& r = d.records[i];
    if (!ranks.empty() && !ranks.count(r.rank)) continue;
    // Drawn whole if it overlaps [from, to) (an instant op if it lies in it).
    const double start = ns_of(r.start), end = ns_of(r.end);
    if (start >= o.window_to_ns || (end <= o.window_from_ns && start < o.window_from_ns)) continue;
    sel.keep.push_back(i);
  }
  sel.selected = sel.keep.size();
  if (sel.keep.size() > o.max_events) {
    std::stable_sort(sel.keep.begin(), sel.keep.end(), [&](std::size_t a, std::size_t b) {
      return d.records[a].end - d.records[a].start > d.records[b].end - d.records[b].start;
    });
    sel.keep.resize(o.max_events);
  }
  return sel;
}

Json make_timeline(const run::RunData& d, const TimelineOptions& o) {
  const trace::Workload& w = *d.workload;
  Json events = Json::array();
  TimelineSelection sel = select_timeline_ops(d, o);
  std::vector<std::size_t>& keep = sel.keep;
  const std::size_t dropped = sel.selected - keep.size();
  std::sort(keep.begin(), keep.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = d.records[a];
    const auto& y = d.records[b];
    return std::tie(x.rank, x.start, x.index) < std::tie(y.rank, y.start, y.index);
  });
  const int machine_pid = int(d.chips);
  events.push_back(meta("process_name", machine_pid, 0, "machine (counters)"));
  events.push_back(meta("process_sort_index", machine_pid, 0, "0"));
  std::set<int> named;
  // Lanes of each rank: compute lanes 0.., communication lanes from 1000 (sorted apart).
  std::map<std::pair<int, int>, std::vector<sc_core::sc_time>> lanes;
  std::map<std::pair<int, std::size_t>, std::pair<int, int>> where;  // (rank, op) -> (pid, tid)
  for (std::size_t k : keep) {
    const auto& r = d.records[k];
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    const int pid = d.rank_to_chip.at(std::size_t(r.rank));
    if (named.insert(pid).second) {
      events.push_back(meta("process_name", pid, 0, fmt::format("chip {} (rank {})", pid, r.rank)));
    }
    const bool comm = is_communication(op.kind);
    auto& l = lanes[{r.rank, comm ? 1 : 0}];
    std::size_t lane = 0;
    while (lane < l.size() && l[lane] > r.start) ++lane;
    if (lane == l.size()) {
      l.push_back(r.end);
      events.push_back(meta("thread_name", pid, int(lane) + (comm ? 1000 : 0),
                            fmt::format("{} {}", comm ? "communication" : "compute", lane)));
    } else {
      l[lane] = r.end;
    }
    const int tid = int(lane) + (comm ? 1000 : 0);
    where[{r.rank, r.index}] = {pid, tid};
    events.push_back({{"name", op.name.empty() ? std::string(trace::kind_name(op.kind)) : op.name},
                      {"cat", std::string(trace::kind_name(op.kind))},
                      {"ph", "X"},
                      {"ts", us(r.start)},
                      {"dur", us(r.end - r.start)},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", op_args(op)}});
  }
  if (o.flows) {
    // Collective instance (group, k) -> its members' (rank, op) in topological order matching.
    std::map<std::pair<std::string, int>, std::vector<std::pair<int, std::size_t>>> members;
    for (int r = 0; r < w.num_ranks(); ++r) {
      std::map<std::string, int> seq;
      const auto& ops = w.ranks[std::size_t(r)].ops;
      for (std::size_t i : trace::topological_order(w.ranks[std::size_t(r)])) {
        if (trace::is_collective(ops[i].kind)) members[{ops[i].group, seq[ops[i].group]++}].push_back({r, i});
      }
    }
    std::map<std::pair<int, std::size_t>, const replay::OpRecord*> rec;
    for (const auto& r : d.records) rec[{r.rank, r.index}] = &r;
    std::uint64_t flow_id = 0;
    for (const auto& c : d.collectives) {
      const auto m = members.find({c.group, c.sequence});
      if (m == members.end()) continue;
      // The member that arrived last released the others: arrows from its start to their ends.
      const std::pair<int, std::size_t>* last = nullptr;
      for (const auto& x : m->second) {
        if (rec.count(x) && (!last || rec[x]->start > rec[*last]->start)) last = &x;
      }
      if (!last || !where.count(*last)) continue;
      const auto [spid, stid] = where[*last];
      for (const auto& x : m->second) {
        if (&x == last || !where.count(x) || !rec.count(x)) continue;
        const auto [dpid, dtid] = where[x];
        const std::string name = fmt::format("{}#{}", c.group, c.sequence);
        ++flow_id;
        events.push_back({{"name", name}, {"cat", "collective"}, {"ph", "s"}, {"id", flow_id},
                          {"ts", us(rec[*last]->start)}, {"pid", spid}, {"tid", stid}});
        events.push_back({{"name", name}, {"cat", "collective"}, {"ph", "f"}, {"bp", "e"},
                          {"id", flow_id}, {"ts", us(rec[x]->end)}, {"pid", dpid}, {"tid", dtid}});
      }
    }
  }
  if (o.counters && d.samples.size() > 1) {
    for (std::size_t i = 1; i < d.samples.size(); ++i) {
      const auto& a = d.samples[i - 1];
      const auto& b = d.samples[i];
      const double dt = b.t_s - a.t_s;
      if (dt <= 0) continue;
      const double ts = a.t_s * 1e6;
      auto counter = [&](const char* name, const char* key, double v) {
        events.push_back({{"name", name}, {"ph", "C"}, {"ts", ts}, {"pid", machine_pid},
                          {"tid", 0}, {"args", {{key, v}}}});
      };
      counter("HBM bandwidth (all chips)", "GB/s", (b.hbm_bytes - a.hbm_bytes) / dt / 1e9);
      counter("link utilisation (mean over link directions)", "fraction",
              d.fabric_capacity_bytes_per_s > 0
                  ? (b.fabric_wire_bytes - a.fabric_wire_bytes) / dt / d.fabric_capacity_bytes_per_s
                  : 0.0);
    }
    // The workload's power over each sample interval (report.json's peak_power_w is over a
    // fixed window, /sim/peak_power_window, sampled more finely).
    for (const PowerInterval& i : workload_power(d, used_chips(d)).intervals) {
      events.push_back({{"name", "power of the used chips and the fabric"}, {"ph", "C"},
                        {"ts", i.start_s * 1e6}, {"pid", machine_pid}, {"tid", 0},
                        {"args", {{"W", i.watts}}}});
    }
    // The busiest link directions over the step, one counter track each.
    std::vector<std::size_t> order(d.link_names.size());
    std::iota(order.begin(), order.end(), 0);
    const auto& last = d.samples.back().link_busy_s;
    if (last.size() == order.size()) {
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return last[a] > last[b]; });
      order.resize(std::min<std::size_t>(order.size(), o.link_tracks));
      const int links_pid = machine_pid + 1;
      if (!order.empty()) {
        events.push_back(meta("process_name", links_pid, 0, "busiest links (utilisation)"));
      }
      for (std::size_t l : order) {
        const std::string& full = d.link_names[l];
        const std::string name = full.starts_with("rack.fabric.") ? full.substr(12) : full;
        for (std::size_t i = 1; i < d.samples.size(); ++i) {
          const double dt = d.samples[i].t_s - d.samples[i - 1].t_s;
          if (dt <= 0) continue;
          const double u = (double(d.samples[i].link_busy_s[l]) - double(d.samples[i - 1].link_busy_s[l])) / dt;
          events.push_back({{"name", name}, {"ph", "C"}, {"ts", d.samples[i - 1].t_s * 1e6},
                            {"pid", links_pid}, {"tid", 0}, {"args", {{"fraction", std::clamp(u, 0.0, 1.0)}}}});
        }
      }
    }
  }
  // Moved in, not copied from an initializer list: the events are most of a large run's report
  // (200,000 drawn ops of the default step), and a copy doubled the peak memory of `run --out`.
  Json out = Json::object();
  out["traceEvents"] = std::move(events);
  out["displayTimeUnit"] = "ns";
  Json window = Json::object();
  window["from_ns"] = o.window_from_ns;
  window["to_ns"] = std::isfinite(o.window_to_ns) ? Json(o.window_to_ns) : Json(nullptr);
  out["otherData"] = {{"ops", d.records.size()},      {"ops_selected", sel.selected},
                      {"ops_drawn", keep.size()},     {"ops_dropped", dropped},
                      {"max_events", o.max_events},   {"ranks", o.ranks},
                      {"window", window}};
  return out;
}

}  // namespace trnsim::report
