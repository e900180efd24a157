// SPDX-License-Identifier: MIT
// One whole-rack simulation: elaborate, replay, collect, summarise.
#include "trnsim/run/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "common/activity.hpp"
#include "common/block.hpp"
#include "rack.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::run {
namespace {

Json percentiles_ns(std::vector<double> v) {
  if (v.empty()) return Json::object();
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    const auto k = std::size_t(std::ceil(p * double(v.size())));
    return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)] * 1e9;
  };
  double sum = 0;
  for (double x : v) sum += x;
  return {{"count", v.size()},
          {"mean", sum / double(v.size()) * 1e9},
          {"p50", q(0.5)},
          {"p99", q(0.99)},
          {"max", v.back() * 1e9}};
}

// Peak dense FLOP/s of one chip for the FP8 family (MXFP8 where the chip has it).
double fp8_peak(const config::ChipParams& c) {
  const auto& t = c.core.tensor;
  const double macs = std::max(t.macs_per_pe_cycle.mxfp8, t.macs_per_pe_cycle.fp8);
  return double(c.cores) * t.rows * t.cols * 2.0 * macs * t.clock.si;
}

// Utilisation of every block that reports one (links: "utilisation"; engines: "busy" seconds;
// HBM stacks: achieved bandwidth over their share of the chip's peak).
std::vector<std::pair<std::string, double>> utilisations(const Json& stats, double elapsed,
                                                         double stack_peak) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, group] : stats.items()) {
    double u = -1;
    if (group.contains("utilisation")) {
      u = group["utilisation"]["value"].get<double>();
    } else if (group.contains("busy") && group["busy"]["unit"] == "s" && elapsed > 0) {
      u = group["busy"]["value"].get<double>() / elapsed;
    } else if (group.contains("bus_busy_time") && group.contains("achieved_bandwidth") &&
               stack_peak > 0) {
      u = group["achieved_bandwidth"]["value"].get<double>() / stack_peak;
    }
    if (u >= 0) out.emplace_back(name, u);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::string fmt_si(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

RunOutput run_workload(const config::LoadedConfig& loaded, const trace::Workload& w) {
  const config::Config& cfg = loaded.config;
  if (!cfg.chip || !cfg.rack) {
    throw ConfigError(fmt::format("{}:{}: missing: a run needs a rack preset (with chip and rack)",
                                  loaded.path, cfg.chip ? "/rack" : "/chip"));
  }
  const auto topology = topo::build_topology(cfg.rack->topology, &*cfg.chip,
                                             {&loaded.provenance, "/rack/topology",
                                              config::memory_budget(cfg.sim)});
  const auto t0 = std::chrono::steady_clock::now();
  Rack rack("rack", cfg, topology);
  replay::Replay replay("replay", w, rack, cfg.replay);
  const auto activations0 = model::activation_counts();
  const auto t1 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const auto t2 = std::chrono::steady_clock::now();
  replay.check_finished();
  const sc_core::sc_time end = replay.makespan();
  rack.fabric().finish(end);
  for (int c = 0; c < rack.chip_count(); ++c) rack.chip(c).account_until(end);

  RunOutput out;
  out.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.simulation_seconds = std::chrono::duration<double>(t2 - t1).count();
  out.delta_cycles = sc_core::sc_delta_count();
  for (int k = 0; k < model::kActivityKinds; ++k) {
    const std::uint64_t n = model::activation_counts()[std::size_t(k)] - activations0[std::size_t(k)];
    out.activations_by_kind[model::kActivityNames[k]] = n;
    out.activations += n;
  }
  const double T = end.to_seconds();
  out.stats = model::collect_stats();
  const auto energy = model::collect_energy(Duration(T));

  // ---- work and rates --------------------------------------------------------------------------
  double flops = 0;
  for (const auto& r : w.ranks) flops += trace::total_flops(r);
  const int chips_used = w.num_ranks();
  const double peak = fp8_peak(*cfg.chip) * chips_used;
  const double hbm_peak = cfg.chip->hbm.bandwidth.si * chips_used;
  const auto totals = rack.fabric().totals();

  Json& s = out.summary;
  s["rack"] = cfg.rack->name;
  s["chip"] = cfg.chip->name;
  s["chips"] = topology.chip_count();
  s["workload"] = {{"name", w.name}, {"ranks", w.num_ranks()}};
  std::size_t nops = 0;
  for (const auto& r : w.ranks) nops += r.ops.size();
  s["workload"]["ops"] = nops;
  s["step_time_ns"] = T * 1e9;
  s["flops"] = flops;
  s["achieved_pflops"] = T > 0 ? flops / T / 1e15 : 0.0;
  s["peak_pflops"] = peak / 1e15;
  s["fraction_of_peak"] = T > 0 && peak > 0 ? flops / T / peak : 0.0;
  s["hbm"] = {{"bytes", rack.hbm_bytes()},
              {"bytes_per_s", T > 0 ? rack.hbm_bytes() / T : 0.0},
              {"peak_bytes_per_s", hbm_peak},
              {"fraction_of_peak", T > 0 ? rack.hbm_bytes() / T / hbm_peak : 0.0}};
  s["fabric"] = {{"transfers", totals.transfers_completed},
                 {"bytes_delivered", totals.bytes_delivered},
                 {"packets_delivered", totals.packets_delivered},
                 {"credit_stall_ns", totals.credit_stall_ns},
                 {"transfer_latency_ns", percentiles_ns(rack.transfer_latencies())},
                 {"packet_latency_ns", percentiles_ns(rack.packet_latencies())}};
  Json by_cat = Json::object();
  for (const auto& [k, v] : energy.by_category_joules) by_cat[k] = v;
  const double power = T > 0 ? energy.total().si / T : 0.0;
  s["energy"] = {{"total_j", energy.total().si},
                 {"dynamic_j", energy.dynamic.si},
                 {"static_j", energy.static_.si},
                 {"average_power_w", power},
                 {"average_power_per_chip_w", power / double(topology.chip_count())},
                 {"tflops_per_w", energy.total().si > 0 ? flops / energy.total().si / 1e12 : 0.0},
                 {"dynamic_by_category_j", by_cat}};
  // Collectives by kind.
  Json coll = Json::object();
  for (const auto& c : replay.collectives()) {
    Json& k = coll[std::string(trace::kind_name(c.kind))];
    if (k.is_null()) k = {{"count", 0}, {"time_ns", 0.0}, {"wire_bytes", 0.0}};
    k["count"] = k["count"].get<int>() + 1;
    k["time_ns"] = k["time_ns"].get<double>() + (c.end - c.first_arrival).to_seconds() * 1e9;
    k["wire_bytes"] = k["wire_bytes"].get<double>() + double(c.wire_bytes);
    std::string alg = std::string(replay::algorithm_name(c.algorithm));
    Json& a = k["algorithms"][alg];
    a = a.is_null() ? 1 : a.get<int>() + 1;
  }
  s["collectives"] = coll;
  // Compute time by op kind (summed over ranks) and the busiest resources.
  Json kinds = Json::object();
  for (const auto& r : replay.records()) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    Json& k = kinds[std::string(trace::kind_name(op.kind))];
    if (k.is_null()) k = {{"count", 0}, {"time_ns", 0.0}};
    k["count"] = k["count"].get<int>() + 1;
    k["time_ns"] = k["time_ns"].get<double>() + (r.end - r.start).to_seconds() * 1e9;
  }
  s["ops_by_kind"] = kinds;
  const auto util = utilisations(out.stats, T, cfg.chip->hbm.bandwidth.si / cfg.chip->hbm.stacks);
  Json busiest = Json::array();
  for (std::size_t i = 0; i < util.size() && i < 8; ++i) {
    busiest.push_back({{"name", util[i].first}, {"utilisation", util[i].second}});
  }
  s["busiest"] = busiest;
  Json notes = Json::array();
  for (const auto& n : rack.notes()) notes.push_back(n);
  for (const auto& n : w.warnings) notes.push_back(n);
  s["notes"] = notes;

  // ---- per-op outputs -------------------------------------------------------------------------
  std::vector<replay::OpRecord> recs = replay.records();
  std::sort(recs.begin(), recs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.rank, a.start, a.index) < std::tie(b.rank, b.start, b.index);
  });
  out.ops_csv = "rank,id,name,kind,start_ns,end_ns,duration_ns,flops\n";
  Json events = Json::array();
  std::map<int, std::vector<sc_core::sc_time>> lanes;  // per rank: end time of each lane
  for (const auto& r : recs) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    const double st = r.start.to_seconds() * 1e9, en = r.end.to_seconds() * 1e9;
    out.ops_csv += fmt::format("{},{},{},{},{},{},{},{}\n", r.rank, op.id, csv_field(op.name),
                               trace::kind_name(op.kind), st, en, en - st, trace::op_flops(op));
    auto& l = lanes[r.rank];
    std::size_t lane = 0;
    while (lane < l.size() && l[lane] > r.start) ++lane;
    if (lane == l.size()) l.push_back(r.end); else l[lane] = r.end;
    events.push_back({{"name", op.name.empty() ? std::string(trace::kind_name(op.kind)) : op.name},
                      {"cat", std::string(trace::kind_name(op.kind))},
                      {"ph", "X"},
                      {"ts", st / 1e3},
                      {"dur", (en - st) / 1e3},
                      {"pid", r.rank},
                      {"tid", lane}});
  }
  out.timeline = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};

  // ---- text ---------------------------------------------------------------------------------
  std::string& t = out.text;
  t += fmt::format("trnsim run: {} ({} x {}), workload {} ({} ranks, {} ops)\n", cfg.rack->name,
                   topology.chip_count(), cfg.chip->name, w.name, w.num_ranks(), nops);
  t += fmt::format("  step time            {:.3f} ms\n", T * 1e3);
  t += fmt::format("  achieved             {:.2f} PFLOPS = {:.1f} % of {:.1f} PFLOPS FP8 peak ({} chips)\n",
                   s["achieved_pflops"].get<double>(), 100 * s["fraction_of_peak"].get<double>(),
                   peak / 1e15, chips_used);
  t += fmt::format("  HBM                  {}/s over the step = {:.1f} % of peak\n",
                   fmt_si(rack.hbm_bytes() / std::max(T, 1e-30), "B"),
                   100 * s["hbm"]["fraction_of_peak"].get<double>());
  const Json& pl = s["fabric"]["packet_latency_ns"];
  const Json& tl = s["fabric"]["transfer_latency_ns"];
  if (!pl.empty()) {
    t += fmt::format("  fabric               {} transfers, {} delivered; packet latency mean "
                     "{:.0f} ns, p99 {:.0f} ns; transfer latency p99 {:.1f} us\n",
                     totals.transfers_completed, fmt_si(double(totals.bytes_delivered), "B"),
                     pl["mean"].get<double>(), pl["p99"].get<double>(),
                     tl["p99"].get<double>() / 1e3);
  }
  t += fmt::format("  energy               {:.3f} J, {:.1f} kW average ({:.0f} W per chip), "
                   "{:.3f} TFLOPS/W\n",
                   energy.total().si, power / 1e3, power / double(topology.chip_count()),
                   s["energy"]["tflops_per_w"].get<double>());
  t += "  busiest resources   ";
  for (std::size_t i = 0; i < util.size() && i < 5; ++i) {
    t += fmt::format(" {} {:.0f} %{}", util[i].first, 100 * util[i].second, i + 1 < 5 ? "," : "");
  }
  t += "\n";
  for (const auto& n : rack.notes()) t += fmt::format("  note: {}\n", n);
  if (!w.warnings.empty()) t += fmt::format("  note: the trace reader reported {} warnings\n", w.warnings.size());
  return out;
}

std::size_t rack_chip_count(const config::LoadedConfig& loaded) {
  if (!loaded.config.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: expected a rack preset", loaded.path));
  }
  return topo::build_topology(loaded.config.rack->topology,
                              loaded.config.chip ? &*loaded.config.chip : nullptr,
                              {&loaded.provenance, "/rack/topology"})
      .chip_count();
}

void write_outputs(const std::string& dir, const RunOutput& out, const config::LoadedConfig& cfg) {
  OutputDir d(dir);  // all five files appear together or not at all
  d.add("summary.json", out.summary.dump(2) + "\n");
  d.add("config.json", config::to_json(cfg.config).dump(2) + "\n");
  d.add("stats.json", out.stats.dump(1) + "\n");
  d.add("ops.csv", out.ops_csv);
  d.add("timeline.json", out.timeline.dump() + "\n");
  d.commit();
}

}  // namespace trnsim::run
