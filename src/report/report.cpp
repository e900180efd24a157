// SPDX-License-Identifier: MIT
// The report of one run: summary JSON, per-op CSV, Perfetto timeline and the terminal text.
#include "trnsim/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "common/histogram.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::report {
namespace {

// Peak dense FLOP/s of one chip for the FP8 family (MXFP8 where the chip has it).
double fp8_peak(const config::ChipParams& c) {
  const auto& t = c.core.tensor;
  const double macs = std::max(t.macs_per_pe_cycle.mxfp8, t.macs_per_pe_cycle.fp8);
  return double(c.cores) * t.rows * t.cols * 2.0 * macs * t.clock.si;
}

// Blocks that report a utilisation, busiest first (ties by name).
std::vector<std::pair<std::string, double>> utilisations(const std::vector<model::BlockStats>& blocks) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& b : blocks) {
    if (b.utilisation && *b.utilisation >= 0) out.emplace_back(b.name, *b.utilisation);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// stats.json: every block's statistics by hierarchical name, each value with its unit.
Json stats_json(const std::vector<model::BlockStats>& blocks) {
  Json j = Json::object();
  for (const auto& b : blocks) {
    Json& g = j[b.name];
    g = Json::object();
    for (const auto& st : b.stats) {
      g[st.name] = {{"value", st.value}, {"unit", std::string(model::unit_symbol(st.unit))}};
    }
  }
  return j;
}

std::string fmt_si(double v, const char* unit) { return format_si(v, unit, 3); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Op records ordered by rank, then start time.
std::vector<replay::OpRecord> ordered_records(const run::RunData& d) {
  std::vector<replay::OpRecord> recs = d.records;
  std::sort(recs.begin(), recs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.rank, a.start, a.index) < std::tie(b.rank, b.start, b.index);
  });
  return recs;
}

// One row per op.
std::string ops_csv(const run::RunData& d) {
  const trace::Workload& w = *d.workload;
  std::string csv = "rank,id,name,kind,start_ns,end_ns,duration_ns,flops\n";
  for (const auto& r : ordered_records(d)) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    const double st = r.start.to_seconds() * 1e9, en = r.end.to_seconds() * 1e9;
    csv += fmt::format("{},{},{},{},{},{},{},{}\n", r.rank, op.id, csv_field(op.name),
                       trace::kind_name(op.kind), st, en, en - st, trace::op_flops(op));
  }
  return csv;
}

// Chrome/Perfetto trace events: one per op, on the first lane of its rank free at its start.
Json timeline(const run::RunData& d) {
  const trace::Workload& w = *d.workload;
  Json events = Json::array();
  std::map<int, std::vector<sc_core::sc_time>> lanes;  // per rank: end time of each lane
  for (const auto& r : ordered_records(d)) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    const double st = r.start.to_seconds() * 1e9, en = r.end.to_seconds() * 1e9;
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
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

// The terminal summary, from the summary JSON `s`.
std::string summary_text(const Json& s, const run::RunData& d) {
  const config::Config& cfg = *d.config;
  const trace::Workload& w = *d.workload;
  const double T = d.end.to_seconds();
  const auto& totals = d.network;
  const double power = s["energy"]["average_power_w"].get<double>();
  std::string t;
  t += fmt::format("trnsim run: {} ({} x {}), workload {} ({} ranks, {} ops)\n", cfg.rack->name,
                   d.chips, cfg.chip->name, w.name, w.num_ranks(),
                   s["workload"]["ops"].get<std::size_t>());
  const Json& fid = s["fidelity"];
  t += fmt::format("  fidelity             {}: network {}, compute {}, memory {}\n",
                   fid["preset"].get<std::string>(), fid["network"].get<std::string>(),
                   fid["compute"].get<std::string>(), fid["memory"].get<std::string>());
  t += fmt::format("  step time            {:.3f} ms\n", T * 1e3);
  t += fmt::format("  achieved             {:.2f} PFLOPS = {:.1f} % of {:.1f} PFLOPS FP8 peak ({} chips)\n",
                   s["achieved_pflops"].get<double>(), 100 * s["fraction_of_peak"].get<double>(),
                   s["peak_pflops"].get<double>(), w.num_ranks());
  t += fmt::format("  HBM                  {}/s over the step = {:.1f} % of peak\n",
                   fmt_si(d.hbm_bytes / std::max(T, 1e-30), "B"),
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
                   d.energy.total().si, power / 1e3, power / double(d.chips),
                   s["energy"]["tflops_per_w"].get<double>());
  t += "  busiest resources   ";
  const Json& busiest = s["busiest"];
  for (std::size_t i = 0; i < busiest.size() && i < 5; ++i) {
    t += fmt::format(" {} {:.0f} %{}", busiest[i]["name"].get<std::string>(),
                     100 * busiest[i]["utilisation"].get<double>(), i + 1 < 5 ? "," : "");
  }
  t += "\n";
  for (const auto& n : d.notes) t += fmt::format("  note: {}\n", n);
  if (!w.warnings.empty()) {
    t += fmt::format("  note: the trace reader reported {} warnings\n", w.warnings.size());
  }
  return t;
}

}  // namespace

Json percentiles_ns(std::vector<double> seconds) {
  const model::Histogram h(std::move(seconds));
  if (h.empty()) return Json::object();
  return {{"count", h.count()},
          {"mean", h.mean() * 1e9},
          {"p50", h.quantile(0.5) * 1e9},
          {"p99", h.quantile(0.99) * 1e9},
          {"max", h.max() * 1e9}};
}

Report make_report(const run::RunData& d) {
  const config::Config& cfg = *d.config;
  const trace::Workload& w = *d.workload;
  const double T = d.end.to_seconds();
  Report out;
  out.stats = stats_json(d.stats);
  const auto& energy = d.energy;
  const auto& totals = d.network;
  // ---- work and rates --------------------------------------------------------------------------
  double flops = 0;
  for (const auto& r : w.ranks) flops += trace::total_flops(r);
  const int chips_used = w.num_ranks();
  const double peak = fp8_peak(*cfg.chip) * chips_used;
  const double hbm_peak = cfg.chip->hbm.bandwidth.si * chips_used;
  
  Json& s = out.summary;
  s["rack"] = cfg.rack->name;
  s["chip"] = cfg.chip->name;
  s["chips"] = d.chips;
  s["workload"] = {{"name", w.name}, {"ranks", w.num_ranks()}};
  std::size_t nops = 0;
  for (const auto& r : w.ranks) nops += r.ops.size();
  s["workload"]["ops"] = nops;
  s["fidelity"] = {{"preset", d.fidelity},
                   {"network", d.network_model},
                   {"compute", d.compute_model},
                   {"memory", d.memory_model}};
  s["step_time_ns"] = T * 1e9;
  s["flops"] = flops;
  s["achieved_pflops"] = T > 0 ? flops / T / 1e15 : 0.0;
  s["peak_pflops"] = peak / 1e15;
  s["fraction_of_peak"] = T > 0 && peak > 0 ? flops / T / peak : 0.0;
  s["hbm"] = {{"bytes", d.hbm_bytes},
              {"bytes_per_s", T > 0 ? d.hbm_bytes / T : 0.0},
              {"peak_bytes_per_s", hbm_peak},
              {"fraction_of_peak", T > 0 ? d.hbm_bytes / T / hbm_peak : 0.0}};
  s["fabric"] = {{"transfers", totals.transfers_completed},
                 {"bytes_delivered", totals.bytes_delivered},
                 {"packets_delivered", totals.packets_delivered},
                 {"credit_stall_ns", totals.credit_stall_ns},
                 {"transfer_latency_ns", percentiles_ns(d.transfer_latencies)},
                 {"packet_latency_ns", percentiles_ns(d.packet_latencies)}};
  Json by_cat = Json::object();
  for (const auto& [k, v] : energy.by_category_joules) by_cat[k] = v;
  const double power = T > 0 ? energy.total().si / T : 0.0;
  s["energy"] = {{"total_j", energy.total().si},
                 {"dynamic_j", energy.dynamic.si},
                 {"static_j", energy.static_.si},
                 {"average_power_w", power},
                 {"average_power_per_chip_w", power / double(d.chips)},
                 {"tflops_per_w", energy.total().si > 0 ? flops / energy.total().si / 1e12 : 0.0},
                 {"dynamic_by_category_j", by_cat}};
  // Collectives by kind.
  Json coll = Json::object();
  for (const auto& c : d.collectives) {
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
  for (const auto& r : d.records) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    Json& k = kinds[std::string(trace::kind_name(op.kind))];
    if (k.is_null()) k = {{"count", 0}, {"time_ns", 0.0}};
    k["count"] = k["count"].get<int>() + 1;
    k["time_ns"] = k["time_ns"].get<double>() + (r.end - r.start).to_seconds() * 1e9;
  }
  s["ops_by_kind"] = kinds;
  if (d.compute_model == "op") {
    const double ops = double(d.compute_ops);
    s["compute"] = {{"model", d.compute_model},
                    {"shapes_simulated", d.compute_shapes_simulated},
                    {"ops", d.compute_ops},
                    {"reuse_rate", ops > 0 ? 1.0 - d.compute_shapes_simulated / ops : 0.0}};
  }
  const auto util = utilisations(d.stats);
  Json busiest = Json::array();
  for (std::size_t i = 0; i < util.size() && i < 8; ++i) {
    busiest.push_back({{"name", util[i].first}, {"utilisation", util[i].second}});
  }
  s["busiest"] = busiest;
  Json notes = Json::array();
  for (const auto& n : d.notes) notes.push_back(n);
  for (const auto& n : w.warnings) notes.push_back(n);
  s["notes"] = notes;

  out.ops_csv = ops_csv(d);
  out.timeline = timeline(d);
  out.text = summary_text(s, d);
  return out;
}

void write_outputs(const std::string& dir, const Report& out, const config::LoadedConfig& cfg) {
  OutputDir d(dir);  // all five files appear together or not at all
  d.add("summary.json", out.summary.dump(2) + "\n");
  d.add("config.json", config::to_json(cfg.config).dump(2) + "\n");
  d.add("stats.json", out.stats.dump(1) + "\n");
  d.add("ops.csv", out.ops_csv);
  d.add("timeline.json", out.timeline.dump() + "\n");
  d.commit();
}

}  // namespace trnsim::report
