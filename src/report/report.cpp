// SPDX-License-Identifier: MIT
// The report of one run: report.json, summary.csv, per-op CSV and the terminal text
// (docs/report.md). The timeline is in timeline.cpp, the step breakdown in breakdown.cpp.
#include "trnsim/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "common/histogram.hpp"
#include "common/memory.hpp"
#include "chip/op_chip.hpp"
#include "common/network.hpp"
#include "hbm/hbm_stack.hpp"
#include "neuron_core/engines.hpp"
#include "link/link.hpp"
#include "switch/router.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/report/breakdown.hpp"
#include "trnsim/report/figures.hpp"
#include "trnsim/report/version.hpp"

namespace trnsim::report {

double ns_of(const sc_core::sc_time& t) { return double(std::llround(t.to_seconds() * 1e12)) / 1e3; }

namespace {

double ns(std::uint64_t ps) { return double(ps) / 1e3; }
double safe_div(double a, double b) { return b > 0 ? a / b : 0.0; }

bool on_tensor_engine(trace::OpKind k) {
  return k == trace::OpKind::gemm || k == trace::OpKind::attention;
}

// Blocks that report a utilisation, busiest first (ties by name).
std::vector<std::pair<std::string, double>> utilisations(const std::vector<model::BlockStats>& blocks,
                                                         std::string_view prefix = "") {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& b : blocks) {
    if (b.utilisation && *b.utilisation >= 0 && b.name.starts_with(prefix)) {
      out.emplace_back(b.name, *b.utilisation);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// The compute engines both compute tiers have, in the order of a profile's engine_busy_s.
constexpr std::array<std::string_view, 4> kReportEngines{"tensor", "vector", "scalar", "gpsimd"};

// Busy time over the step of every compute engine, named rack.chipN.ncM.<engine> at both tiers:
// the tile tier's engine blocks (their "busy"), the op tier's cores ("<engine>_busy"). The tile
// tier's sync engine (DMA triggers), which the op tier does not have, is left out.
struct ResourceLevels {
  std::vector<std::pair<std::string, double>> engines, cores, resources;
};
constexpr std::size_t kListed = 8;  // entries of report.json's busiest lists

ResourceLevels resource_levels(const std::vector<model::BlockStats>& blocks, double T) {
  ResourceLevels r;
  std::map<std::string, double> core_most;  // a core: its busiest engine
  auto add_engine = [&](const std::string& core, std::string_view engine, double busy_s) {
    const double u = safe_div(busy_s, T);
    r.engines.emplace_back(core + "." + std::string(engine), u);
    double& m = core_most[core];
    m = std::max(m, u);
  };
  for (const auto& b : blocks) {
    const auto dot = b.name.rfind('.');
    const std::string_view last = dot == std::string::npos ? std::string_view() : std::string_view(b.name).substr(dot + 1);
    const bool engine_block = std::find(kReportEngines.begin(), kReportEngines.end(), last) != kReportEngines.end();
    if (const model::Stat* busy = find_stat(b, model::EngineStats::busy); busy && (engine_block || last == "sync")) {
      if (engine_block) add_engine(b.name.substr(0, dot), last, busy->value);
      continue;
    }
    bool op_core = false;
    for (const auto& st : b.stats) {
      if (!model::OpCoreStats::engine_busy.matches(st.name)) continue;
      const std::string engine = st.name.substr(0, st.name.size() - std::string_view("_busy").size());
      if (std::find(kReportEngines.begin(), kReportEngines.end(), engine) == kReportEngines.end()) continue;
      add_engine(b.name, engine, st.value);
      op_core = true;
    }
    if (op_core) continue;
    if (b.utilisation && *b.utilisation >= 0) r.resources.emplace_back(b.name, *b.utilisation);
  }
  for (const auto& [k, v] : core_most) r.cores.emplace_back(k, v);
  r.resources.insert(r.resources.end(), r.engines.begin(), r.engines.end());
  // Busiest first, ties by name: the order a full sort gives, for every busy entry and at least
  // the first `kListed` (what the report's lists show; the summary's busiest_text stops at the
  // first idle one). The idle rest, most of a rack that runs on a few of its chips, stays unsorted.
  auto busiest_first = [](auto& v) {
    const auto before = [](const auto& a, const auto& c) {
      return a.second != c.second ? a.second > c.second : a.first < c.first;
    };
    const auto idle =
        std::partition(v.begin(), v.end(), [](const auto& a) { return a.second > 0; });
    std::sort(v.begin(), idle, before);
    const auto busy = std::size_t(idle - v.begin());
    if (busy < kListed) {
      const auto more = std::min(kListed - busy, std::size_t(v.end() - idle));
      std::partial_sort(idle, idle + std::ptrdiff_t(more), v.end(), before);
    }
  };
  busiest_first(r.engines);
  busiest_first(r.cores);
  busiest_first(r.resources);
  return r;
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

// A time in nanoseconds in the unit that suits it: 812 ns, 31.3 us, 1.69 ms, 2.5 s.
std::string fmt_time(double ns) {
  const double a = std::fabs(ns);
  if (a < 1e3) return fmt::format("{:.3g} ns", ns);
  if (a < 1e6) return fmt::format("{:.3g} us", ns / 1e3);
  if (a < 1e9) return fmt::format("{:.3g} ms", ns / 1e6);
  return fmt::format("{:.3g} s", ns / 1e9);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string phase_name(const trace::Op& op) {
  const auto p = trace::infer_phase(op);
  return p ? std::string(config::enum_name(*p)) : "";
}

// One row per op, by rank and start time.
std::string ops_csv(const run::RunData& d) {
  const trace::Workload& w = *d.workload;
  std::vector<replay::OpRecord> recs = d.records;
  std::sort(recs.begin(), recs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.rank, a.start, a.index) < std::tie(b.rank, b.start, b.index);
  });
  std::string csv = "rank,id,name,kind,phase,layer,start_ns,end_ns,duration_ns,flops\n";
  for (const auto& r : recs) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    const double st = ns_of(r.start), en = ns_of(r.end);
    const auto layer = trace::infer_layer(op);
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", r.rank, op.id, csv_field(op.name),
                       trace::kind_name(op.kind), phase_name(op),
                       layer ? fmt::format("{}", *layer) : "", st, en, ns_of(r.end - r.start),
                       trace::op_flops(op));
  }
  return csv;
}

Json identity_json(const run::RunData& d, const Identity& id) {
  const config::Config& cfg = *d.config;
  Json j;
  j["trnsim_version"] = std::string(version());
  j["git_commit"] = std::string(git_commit());
  j["command_line"] = id.command_line;
  j["config"] = {{"given", id.config},
                 {"files", id.config_files},
                 {"rack", cfg.rack ? cfg.rack->name : ""},
                 {"chip", cfg.chip ? cfg.chip->name : ""}};
  j["trace"] = {{"given", id.trace},
                {"files", id.trace_files},
                {"bytes", id.trace_bytes},
                {"sha256", id.trace_sha256},
                {"name", d.workload->name}};
  j["seed"] = cfg.sim.seed;
  // The fidelity preset (/sim/fidelity as it applied) and the model of each part; compute
  // records, for the op-level tier, how many distinct ops the tile model simulated.
  j["fidelity"] = d.fidelity;
  j["models"] = {{"memory", {{"model", d.memory_model}}},
                 {"compute", {{"model", d.compute_model}}},
                 {"network", {{"model", d.network_model}}}};
  // The flow network's calibration from the packet fabric: each case's inputs and outputs (the
  // same whether it came from the cache or the children; host.json says which).
  if (!d.flow_calibration.is_null()) j["models"]["network"]["flow_calibration"] = d.flow_calibration;
  if (d.compute_calibrated) {
    const double ops = double(d.compute_ops);
    j["models"]["compute"]["shapes_simulated"] = d.compute_shapes_simulated;
    j["models"]["compute"]["ops"] = d.compute_ops;
    j["models"]["compute"]["reuse_rate"] =
        ops > 0 ? 1.0 - double(d.compute_shapes_simulated) / ops : 0.0;
    // The calibration cache's entry for these profiles (the same whether it was found or
    // written; host.json says which): the plan, build and op set they were measured for.
    if (!d.calibration_cache_key.empty()) {
      j["models"]["compute"]["calibration_cache_key"] = d.calibration_cache_key;
    }
  }
  // What fast-forward extrapolated: units are (rank, phase, micro-batch); a fast-forwarded
  // unit's compute ops, sends and collectives were timed from the previous micro-batch's. At the
  // tile tier, ops of which only the head was simulated (model::op_head).
  {
    const auto& f = d.fast_forward_stats;
    j["fast_forward"] = {{"enabled", d.fast_forward},
                         {"tolerance", cfg.sim.fast_forward_tolerance},
                         {"size_tolerance", cfg.sim.fast_forward_size_tolerance},
                         {"units", f.units},
                         {"repeating_units", f.repeating_units},
                         {"units_fast_forwarded", f.units_fast_forwarded},
                         {"ops_fast_forwarded", f.ops_fast_forwarded},
                         {"compute_ops_fast_forwarded", f.compute_fast_forwarded},
                         {"collectives_fast_forwarded", f.collectives_fast_forwarded},
                         {"transfers_charged", f.transfers_accounted},
                         {"bytes_charged", f.bytes_accounted},
                         {"network_charges_links", d.fast_forward_charges_links},
                         {"op_head", d.op_head},
                         {"compute_ops_extrapolated", d.compute_ops_extrapolated}};
  }
  // A cluster: how many UltraServers the run stands for and how many it simulated (folded: one,
  // each of its ranks standing for one rank per UltraServer); its scale-out network is
  // flow-level (docs/scaling.md).
  if (d.cluster_ultraservers > 0) {
    const std::size_t per = d.chips / std::size_t(std::max(1, d.cluster_simulated_ultraservers));
    j["cluster"] = {{"ultraservers", d.cluster_ultraservers},
                    {"chips", std::uint64_t(per) * std::uint64_t(d.cluster_ultraservers)},
                    {"simulated_ultraservers", d.cluster_simulated_ultraservers},
                    {"folded", d.cluster_simulated_ultraservers < d.cluster_ultraservers},
                    {"ranks_per_simulated_rank",
                     d.cluster_ultraservers / std::max(1, d.cluster_simulated_ultraservers)},
                    {"scale_out", {{"model", "flow"}, {"tiers", d.cluster_tiers}}}};
  }
  // Wall time differs between identical runs: it is in host.json, so this file stays
  // byte-identical for the same inputs.
  j["wall_time"] = "host.json";
  return j;
}

// Tokens of one step from the workload's metadata: "tokens", else global_batch * seq_len.
std::optional<double> tokens_of(const trace::Workload& w) {
  const Json& m = w.metadata;
  if (!m.is_object()) return std::nullopt;
  if (m.contains("tokens") && m["tokens"].is_number() && m["tokens"].get<double>() > 0) {
    return m["tokens"].get<double>();
  }
  if (m.contains("global_batch") && m.contains("seq_len") && m["global_batch"].is_number() &&
      m["seq_len"].is_number()) {
    const double t = m["global_batch"].get<double>() * m["seq_len"].get<double>();
    if (t > 0) return t;
  }
  return std::nullopt;
}

Json performance_json(const run::RunData& d, double T, std::size_t chips_used) {
  const trace::Workload& w = *d.workload;
  std::map<DType, double> all, tensor;
  double flops = 0;
  for (const auto& r : w.ranks) {
    for (const auto& op : r.ops) {
      if (!trace::is_compute(op.kind)) continue;
      const double f = trace::op_flops(op);
      flops += f;
      all[op.dtype] += f;
      if (on_tensor_engine(op.kind)) tensor[op.dtype] += f;
    }
  }
  Json j;
  j["step_time_ns"] = ns_of(d.end);
  j["flops"] = flops;
  j["flops_per_s"] = safe_div(flops, T);
  Json by = Json::object();
  double busy_at_peak = 0;  // seconds the Tensor engines would need at their peak
  for (const auto& [dt, f] : all) {
    Json& e = by[std::string(config::enum_name(dt))];
    e = {{"flops", f}, {"flops_per_s", safe_div(f, T)}};
    const auto t = tensor.find(dt);
    if (t == tensor.end()) continue;
    // The type the rack ran it as (resolve/peaks.hpp); a chip without any has no peak for it.
    const DType ran = d.peaks.ran_as(dt).value_or(dt);
    const double peak = d.peaks.tensor(ran) * double(chips_used);
    busy_at_peak += safe_div(t->second, peak);
    e["tensor_flops"] = t->second;
    e["ran_as"] = std::string(config::enum_name(ran));
    e["peak_flops_per_s"] = peak;
    e["fraction_of_peak"] = safe_div(safe_div(t->second, T), peak);
  }
  j["by_dtype"] = by;
  j["tensor_fraction_of_peak"] = safe_div(busy_at_peak, T);
  if (const auto tok = tokens_of(w)) {
    j["tokens"] = *tok;
    j["tokens_per_s"] = safe_div(*tok, T);
  } else {
    j["tokens"] = nullptr;
    j["tokens_per_s"] = nullptr;
  }
  return j;
}

Json parts_json(const Parts& p) {
  return {{"compute_ns", ns(p.compute_ps)},
          {"overlapped_ns", ns(p.overlapped_ps)},
          {"exposed_communication_ns", ns(p.exposed_ps)},
          {"waiting_ns", ns(p.waiting_ps)},
          {"waiting_for_peers_ns", ns(p.waiting_for_peers_ps)}};
}

Json share_json(const Share& s) {
  return {{"ops", s.ops},
          {"compute_ns", s.compute_ns},
          {"overlapped_ns", s.overlapped_ns},
          {"exposed_communication_ns", s.exposed_ns},
          {"waiting_for_peers_ns", s.waiting_for_peers_ns}};
}

void add_share(Share& to, const Share& s, double scale) {
  to.ops += s.ops;
  to.compute_ns += s.compute_ns * scale;
  to.overlapped_ns += s.overlapped_ns * scale;
  to.exposed_ns += s.exposed_ns * scale;
  to.waiting_for_peers_ns += s.waiting_for_peers_ns * scale;
}

Json breakdown_json(const run::RunData& d, const Breakdown& b) {
  const trace::Workload& w = *d.workload;
  Json j;
  Json ranks = Json::array();
  Parts sum;
  std::map<std::string, Share> phases;
  std::map<int, Share> layers;
  const double per_rank = 1.0 / double(std::max<std::size_t>(1, b.ranks.size()));
  for (const auto& r : b.ranks) {
    Json e = parts_json(r.parts);
    e["rank"] = r.rank;
    e["chip"] = d.rank_to_chip.at(std::size_t(r.rank));
    e["end_ns"] = ns(r.end_ps);
    Json ph = Json::object();
    for (const auto& [k, s] : r.by_phase) {
      ph[k] = share_json(s);
      add_share(phases[k], s, per_rank);
    }
    e["by_phase"] = ph;
    Json ly = Json::object();
    for (const auto& [k, s] : r.by_layer) {
      ly[std::to_string(k)] = share_json(s);
      add_share(layers[k], s, per_rank);
    }
    e["by_layer"] = ly;
    ranks.push_back(std::move(e));
    sum.compute_ps += r.parts.compute_ps;
    sum.overlapped_ps += r.parts.overlapped_ps;
    sum.exposed_ps += r.parts.exposed_ps;
    sum.waiting_ps += r.parts.waiting_ps;
    sum.waiting_for_peers_ps += r.parts.waiting_for_peers_ps;
  }
  // The machine: the mean over ranks (so it, too, adds up to the step time).
  Json m = {{"compute_ns", ns(sum.compute_ps) * per_rank},
            {"overlapped_ns", ns(sum.overlapped_ps) * per_rank},
            {"exposed_communication_ns", ns(sum.exposed_ps) * per_rank},
            {"waiting_ns", ns(sum.waiting_ps) * per_rank},
            {"waiting_for_peers_ns", ns(sum.waiting_for_peers_ps) * per_rank}};
  Json ph = Json::object();
  for (const auto& [k, s] : phases) ph[k] = share_json(s);
  m["by_phase"] = ph;
  Json ly = Json::object();
  for (const auto& [k, s] : layers) ly[std::to_string(k)] = share_json(s);
  m["by_layer"] = ly;
  j["step_time_ns"] = ns(b.step_ps);
  j["machine"] = m;
  j["ranks"] = ranks;
  Json path = Json::array();
  const auto& ops = w.ranks[std::size_t(b.slowest_rank)].ops;
  for (const auto& s : b.critical_path) {
    const auto& op = ops[s.index];
    path.push_back({{"id", op.id},
                    {"name", op.name},
                    {"kind", std::string(trace::kind_name(op.kind))},
                    {"phase", phase_name(op)},
                    {"start_ns", ns(s.start_ps)},
                    {"end_ns", ns(s.end_ps)},
                    {"gap_before_ns", ns(s.gap_ps)},
                    {"waiting_for_peers_ns", ns(s.peers_ps)}});
  }
  j["critical_path"] = {{"rank", b.slowest_rank}, {"ops", path}};
  return j;
}

// HBM: the chip-level memory blocks of the used chips, and their stacks where the model has them.
Json memory_json(const run::RunData& d, double T, const std::vector<int>& used) {
  const double stack_peak = d.peaks.hbm_stack_bytes_per_s;
  std::set<std::string> prefixes;
  for (int c : used) prefixes.insert(fmt::format("rack.chip{}.hbm", c));
  double rd = 0, wr = 0, hits = 0, runs = 0;
  Json stacks = Json::array();
  for (const auto& b : d.stats) {
    const auto dot = b.name.find(".hbm");
    if (dot == std::string::npos) continue;
    const std::string base = b.name.substr(0, dot + 4);
    if (!prefixes.count(base)) continue;
    const model::Stat* r = find_stat(b, model::MemoryStats::bytes_read);
    const model::Stat* wv = find_stat(b, model::MemoryStats::bytes_written);
    if (b.name == base && r && wv) {
      rd += r->value;
      wr += wv->value;
    }
    const model::Stat* h = find_stat(b, model::HbmStackStats::row_hits);
    if (h && r && wv) {  // a stack of the detailed model
      const model::Stat* n = find_stat(b, model::HbmStackStats::runs);
      hits += h->value;
      if (n) runs += n->value;
      stacks.push_back({{"name", b.name},
                        {"read_bytes_per_s", safe_div(r->value, T)},
                        {"write_bytes_per_s", safe_div(wv->value, T)},
                        {"fraction_of_peak", safe_div(safe_div(r->value + wv->value, T), stack_peak)},
                        {"row_hit_rate", n && n->value > 0 ? Json(h->value / n->value) : Json()}});
    }
  }
  const double peak = d.peaks.hbm_bytes_per_s * double(used.size());
  Json j = {{"chips", used.size()},
            {"read_bytes", rd},
            {"write_bytes", wr},
            {"read_bytes_per_s", safe_div(rd, T)},
            {"write_bytes_per_s", safe_div(wr, T)},
            {"bytes_per_s", safe_div(rd + wr, T)},
            {"peak_bytes_per_s", peak},
            {"fraction_of_peak", safe_div(safe_div(rd + wr, T), peak)},
            {"stack_peak_bytes_per_s", stack_peak},
            {"row_hit_rate", runs > 0 ? Json(hits / runs) : Json()},
            {"stacks", stacks},
            {"model", d.memory_model}};
  return j;
}

Json fabric_json(const run::RunData& d, double T) {
  const auto& t = d.network;
  // Tiers: both ends in one server (first tier of the topology), or not; and all together.
  // By index, and one figure at a time: a detailed step delivers tens of millions of packets.
  const bool servers = d.first_tier_chips != 0;
  const std::array<const char*, 3> tier_names{"all", servers ? "inside_server" : "fabric",
                                              "across_servers"};
  auto tier_of = [&](int src, int dst) {
    return !servers || src / d.first_tier_chips == dst / d.first_tier_chips ? 1 : 2;
  };
  // The samples of each tier and of all: `value` of every sample whose ends are `src`, `dst`.
  auto by_tier = [&](const auto& samples, auto value) {
    std::array<std::vector<double>, 3> v;
    v[0].reserve(samples.size());
    for (const auto& s : samples) {
      const double x = value(s);
      v[std::size_t(tier_of(s.src, s.dst))].push_back(x);
      v[0].push_back(x);
    }
    return v;
  };
  Json tiers = Json::object();
  // A message is a piece as the workload issued it, whatever the network made of it: each is
  // one sample, whose latency runs to the arrival of the last of the pieces sent with it (what
  // its collective step sends to the same peer at once; run::TransferSample), so both tiers
  // count, weigh and time messages alike.
  std::array<std::vector<double>, 3> msg;
  std::uint64_t messages_simulated = 0;
  for (const auto& x : d.transfers) messages_simulated += x.pieces;
  msg[0].reserve(std::size_t(messages_simulated));
  for (const auto& x : d.transfers) {
    auto& v = msg[std::size_t(tier_of(x.src, x.dst))];
    for (std::uint32_t i = 0; i < x.pieces; ++i) {
      v.push_back(x.latency_s);
      msg[0].push_back(x.latency_s);
    }
  }
  for (std::size_t k = 0; k < 3; ++k) {
    if (!msg[k].empty()) tiers[tier_names[k]]["message_latency_ns"] = percentiles_ns(std::move(msg[k]));
  }
  auto packet_figure = [&](const char* name, auto value) {
    auto v = by_tier(d.packets, value);
    for (std::size_t k = 0; k < 3; ++k) {
      if (tiers.contains(tier_names[k])) tiers[tier_names[k]][name] = percentiles_ns(std::move(v[k]));
    }
  };
  packet_figure("packet_latency_ns", [](const run::PacketSample& p) {
    return double(p.hops_s) + double(p.queueing_s);
  });
  packet_figure("packet_unloaded_latency_ns", [](const run::PacketSample& p) { return double(p.hops_s); });
  packet_figure("packet_queueing_ns", [](const run::PacketSample& p) { return double(p.queueing_s); });
  const auto links = utilisations(d.stats, "rack.fabric.link");
  double mean = 0;
  for (const auto& l : links) mean += l.second;
  std::map<std::string, const model::BlockStats*> by_name;
  for (const auto& b : d.stats) by_name[b.name] = &b;
  // A statistic of a block, 0 when the block does not count it (a flow-level link has no
  // credits or buffers).
  auto stat = [&](const std::string& block, const model::StatKey& key) {
    const auto it = by_name.find(block);
    const model::Stat* st = it == by_name.end() ? nullptr : find_stat(*it->second, key);
    return st ? st->value : 0.0;
  };
  auto link_json = [&](const std::string& name) {
    return Json{{"name", name},
                {"utilisation", stat(name, model::LinkDirectionStats::utilisation)},
                {"credit_stall_ns", stat(name, model::LinkStats::credit_stall_time) * 1e9},
                {"max_buffer_occupancy_flits", stat(name, model::LinkStats::max_buffer_occupancy)},
                {"buffer_per_vc_flits", stat(name, model::LinkStats::buffer_per_vc)}};
  };
  Json hottest = Json::array();
  for (std::size_t i = 0; i < links.size() && i < 10; ++i) hottest.push_back(link_json(links[i].first));
  // Back-pressure: the link directions that waited longest for credits, and the switches whose
  // output ports waited longest (their deepest queue with it).
  std::vector<std::pair<double, std::string>> stalled, switches;
  for (const auto& b : d.stats) {
    if (!b.name.starts_with("rack.fabric.")) continue;
    if (const model::Stat* cs = find_stat(b, model::LinkStats::credit_stall_time);
        cs && cs->value > 0) {
      stalled.emplace_back(cs->value, b.name);
    }
    if (b.name.starts_with("rack.fabric.chip") ||
        !find_stat(b, model::RouterStats::packets_forwarded)) {
      continue;
    }
    double wait = 0;
    for (const auto& st : b.stats) {
      if (model::RouterStats::port_wait_time.matches(st.name)) wait += st.value;
    }
    switches.emplace_back(wait, b.name);
  }
  auto worst_first = [](auto& v) {
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& c) { return a.first > c.first; });
  };
  worst_first(stalled);
  worst_first(switches);
  Json stalled_j = Json::array(), switches_j = Json::array();
  for (std::size_t i = 0; i < stalled.size() && i < 5; ++i) stalled_j.push_back(link_json(stalled[i].second));
  for (std::size_t i = 0; i < switches.size() && i < 5; ++i) {
    double deepest = 0;
    for (const auto& st : by_name[switches[i].second]->stats) {
      if (model::RouterStats::port_max_queue.matches(st.name)) {
        deepest = std::max(deepest, st.value);
      }
    }
    switches_j.push_back({{"name", switches[i].second},
                          {"port_wait_ns", switches[i].first * 1e9},
                          {"max_queue_packets", deepest}});
  }
  // One-tier figures are null where the network has no packets (docs/models/fidelity.md).
  const bool pk = d.network_has_packets;
  const std::uint64_t ff_messages = d.messages_fast_forwarded;
  return {{"model", d.network_model},
          {"messages", messages_simulated + ff_messages},
          {"messages_simulated", messages_simulated},
          {"messages_fast_forwarded", ff_messages},
          {"network_transfers", t.transfers_completed},
          {"packets_delivered", pk ? Json(t.packets_delivered) : Json()},
          {"bytes_delivered", t.bytes_delivered},
          {"wire_bytes", t.wire_bytes},
          {"credit_stall_ns", pk ? Json(t.credit_stall_ns) : Json()},
          {"tiers", tiers},
          {"links", {{"directions", links.size()},
                     // Whether link figures include the transfers fast-forward charged instead of
                     // simulating (false: only where there were such transfers and this network
                     // does not charge them).
                     {"include_fast_forwarded", ff_messages == 0 || d.fast_forward_charges_links},
                     {"mean_utilisation", safe_div(mean, double(links.size()))},
                     {"capacity_bytes_per_s", d.fabric_capacity_bytes_per_s},
                     {"wire_bytes_per_s", safe_div(t.wire_bytes, T)},
                     {"hottest", hottest}}},
          {"back_pressure", {{"links_stalled", stalled.size()},
                             {"most_stalled_links", stalled_j},
                             {"switches_waiting_longest", switches_j}}}};
}

// The note of a peak power above what the used chips and the fabric can draw.
std::string peak_power_violation(const Json& e, double tdp_w) {
  return fmt::format(
      "peak power {} exceeds what the used chips and the fabric can draw, {} ({} chips x TDP {} "
      "+ the fabric's static power and all its links busy): a model counted energy outside the "
      "time it was spent, so the peak is wrong; please report it",
      fmt_si(e["peak_power_w"].get<double>(), "W"), fmt_si(e["peak_power_bound_w"].get<double>(), "W"),
      e["chips_used"].get<std::size_t>(), fmt_si(tdp_w, "W"));
}

struct EnergyFigures {
  Json json;
  double total = 0, average_power = 0, peak_power = 0;
  double peak_bound = 0;  // the used chips' TDPs and the fabric's maximum
  bool within_bound = true;
};

// Energy of the workload: its chips whole, the fabric's dynamic energy and the share of the
// fabric's static energy of the chips it uses; the rest of the rack apart.
EnergyFigures energy_json(const run::RunData& d, double T, const std::vector<int>& used,
                          double flops, std::optional<double> tokens) {
  std::map<std::string, double> comp;
  double used_static = 0, used_dynamic = 0, idle_static = 0, idle_dynamic = 0, chips_total = 0;
  std::vector<bool> is_used(d.chip_energy.size(), false);
  for (int c : used) is_used.at(std::size_t(c)) = true;
  for (std::size_t c = 0; c < d.chip_energy.size(); ++c) {
    const auto& e = d.chip_energy[c];
    chips_total += e.total().si;
    if (!is_used[c]) {
      idle_static += e.static_.si;
      idle_dynamic += e.dynamic.si;
      continue;
    }
    used_static += e.static_.si;
    used_dynamic += e.dynamic.si;
    for (const auto& [k, v] : e.by_category_joules) comp["chip_" + k] += v;
  }
  const double share = safe_div(double(used.size()), double(d.chip_energy.size()));
  const double fabric_static_used = d.fabric_energy.static_.si * share;
  comp["chip_static"] = used_static;
  comp["fabric_dynamic"] = d.fabric_energy.dynamic.si;
  comp["fabric_static"] = fabric_static_used;
  // Blocks outside the chips and the fabric (none today) count with the workload.
  comp["other"] = d.energy.total().si - chips_total - d.fabric_energy.total().si;
  double total = 0;
  for (const auto& [k, v] : comp) total += v;
  EnergyFigures f;
  f.total = total;
  f.average_power = safe_div(total, T);
  // Peak: the largest average dynamic power of the used chips and the fabric over any window
  // of /sim/peak_power_window (run::PeakWindow), plus the static power, which is constant. A
  // fixed window, not the sample series' interval, which grows with the samples taken and so
  // differs by fidelity tier.
  f.peak_power = std::max(workload_static_power(d, used) + d.peak_dynamic_w, f.average_power);
  // Peak power can never exceed what the used chips and the whole fabric can draw: their TDPs,
  // and the fabric's static power with every link direction busy. A peak above it means a model
  // counted energy out of its time (as the op tier once did, a whole op's energy at its end).
  f.peak_bound = double(used.size()) * d.chip_tdp_w + safe_div(d.fabric_energy.static_.si, T) +
                 d.fabric_max_dynamic_w;
  f.within_bound = !(d.chip_tdp_w > 0 && f.peak_power > f.peak_bound * (1 + 1e-9));
  Json c = Json::object();
  for (const auto& [k, v] : comp) c[k] = v;
  f.json = {{"chips_used", used.size()},
            {"total_j", total},
            {"components_j", c},
            {"dynamic_j", used_dynamic + d.fabric_energy.dynamic.si},
            {"static_j", used_static + fabric_static_used},
            {"average_power_w", f.average_power},
            {"average_power_per_chip_w", safe_div(f.average_power, double(used.size()))},
            {"peak_power_w", f.peak_power},
            {"peak_power_window_ns", std::round(d.peak_power_length_s * 1e12) / 1e3},
            {"power_sample_interval_ns", d.sample_interval_s * 1e9},
            {"peak_power_bound_w", f.peak_bound},
            {"peak_power_within_bound", f.within_bound},
            {"flops_per_j", safe_div(flops, total)},
            {"tflops_per_w", safe_div(flops, total) / 1e12},
            {"tokens_per_j", tokens ? Json(safe_div(*tokens, total)) : Json()},
            {"idle_chips", {{"chips", d.chip_energy.size() - used.size()},
                            {"static_j", idle_static},
                            {"dynamic_j", idle_dynamic},
                            {"fabric_static_j", d.fabric_energy.static_.si - fabric_static_used}}},
            {"rack_total_j", d.energy.total().si}};
  return f;
}

Json collectives_json(const run::RunData& d) {
  Json coll = Json::object();
  for (const auto& c : d.collectives) {
    Json& k = coll[std::string(trace::kind_name(c.kind))];
    if (k.is_null()) k = {{"count", 0}, {"time_ns", 0.0}, {"wire_bytes", 0.0}};
    k["count"] = k["count"].get<int>() + 1;
    k["time_ns"] = k["time_ns"].get<double>() + ns_of(c.end - c.first_arrival);
    k["wire_bytes"] = k["wire_bytes"].get<double>() + double(c.wire_bytes);
    std::string alg = std::string(replay::algorithm_name(c.algorithm));
    Json& a = k["algorithms"][alg];
    a = a.is_null() ? 1 : a.get<int>() + 1;
  }
  return coll;
}

Json ops_by_kind_json(const run::RunData& d) {
  const trace::Workload& w = *d.workload;
  Json kinds = Json::object();
  for (const auto& r : d.records) {
    const auto& op = w.ranks[std::size_t(r.rank)].ops[r.index];
    Json& k = kinds[std::string(trace::kind_name(op.kind))];
    if (k.is_null()) k = {{"count", 0}, {"busy_ns_summed_over_ranks", 0.0}};
    k["count"] = k["count"].get<int>() + 1;
    k["busy_ns_summed_over_ranks"] = k["busy_ns_summed_over_ranks"].get<double>() + ns_of(r.end - r.start);
  }
  return kinds;
}

double pct(double part, double whole) { return 100 * safe_div(part, whole); }

// "1 rank", "16 ranks".
std::string count_of(std::uint64_t n, std::string_view what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

// Sorted ranks as runs: 0-3, 7.
std::string ranges_text(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  std::string t;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    t += fmt::format("{}{}", t.empty() ? "" : ", ", j == i ? fmt::format("{}", v[i]) : fmt::format("{}-{}", v[i], v[j]));
    i = j + 1;
  }
  return t;
}

// The timeline line of the summary: only when timeline.json holds less than the whole run.
std::string timeline_line(const Json& tl) {
  const auto ops = tl["ops"].get<std::size_t>(), selected = tl["ops_selected"].get<std::size_t>();
  const auto drawn = tl["ops_drawn"].get<std::size_t>(), dropped = tl["ops_dropped"].get<std::size_t>();
  if (drawn == ops) return "";
  std::string chosen;
  if (!tl["ranks"].empty()) chosen += fmt::format(" of {} {}", tl["ranks"].size() == 1 ? "rank" : "ranks",
                                                  ranges_text(tl["ranks"].get<std::vector<int>>()));
  const Json& win = tl["window"];
  if (win["from_ns"].get<double>() > 0 || !win["to_ns"].is_null()) {
    chosen += fmt::format(" in {} to {}", fmt_time(win["from_ns"].get<double>()),
                          win["to_ns"].is_null() ? std::string("the end") : fmt_time(win["to_ns"].get<double>()));
  }
  std::string t = fmt::format("  timeline             {} of {} ops drawn{}", drawn, ops, chosen);
  if (dropped > 0) {
    t += fmt::format(", the longest: {}{} dropped by the cap of {} (--timeline-max-events raises it; "
                     "--timeline-ranks and --timeline-window keep ranks or a time window whole)",
                     dropped, selected < ops ? fmt::format(" of the {} selected", selected) : "",
                     tl["max_events"].get<std::size_t>());
  }
  return t + "\n";
}

// A name cut to at most `max` bytes around an ellipsis, keeping its head and its tail (a kernel's
// 300-character name, a PyTorch operator's signature), never inside a UTF-8 character.
std::string cut_name(const std::string& name, std::size_t max = 60) {
  if (name.size() <= max) return name;
  const auto boundary = [&](std::size_t i) {
    while (i > 0 && i < name.size() && (static_cast<unsigned char>(name[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const std::size_t tail = max / 3, head = boundary(max - tail - 3);
  return name.substr(0, head) + "..." + name.substr(boundary(name.size() - tail));
}

// A block's kind: its name with every number a star (rack.chip*.nc*).
std::string kind_of(const std::string& name) {
  std::string k;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      k += '*';
      while (i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
    } else {
      k += name[i];
    }
  }
  return k;
}

// The busiest distinct resources: blocks busiest first, where one of the kind of a block already
// named (the name with numbers as stars) within a percentage point of it is counted with it, not
// named (32 NeuronCores at 72 % are one entry, not five).
std::string busiest_text(const std::vector<std::pair<std::string, double>>& util, std::size_t entries) {
  std::vector<std::pair<std::size_t, std::size_t>> shown;  // (index into util, how many like it)
  std::vector<std::string> kinds;
  for (std::size_t i = 0; i < util.size() && util[i].second > 0; ++i) {
    const std::string k = kind_of(util[i].first);
    bool counted = false;
    for (std::size_t j = 0; j < shown.size() && !counted; ++j) {
      if (kinds[j] == k && util[shown[j].first].second - util[i].second <= 0.01) {
        ++shown[j].second;
        counted = true;
      }
    }
    if (!counted && shown.size() < entries) {
      shown.emplace_back(i, 0);
      kinds.push_back(k);
    }
  }
  std::string t;
  for (const auto& [i, like] : shown) {
    t += fmt::format("{} {} {:.0f} %", t.empty() ? "" : ",", cut_name(util[i].first), 100 * util[i].second);
    if (like > 0) t += fmt::format(" (+{} like it)", like);
  }
  return t;
}

// The terminal summary, from report.json `s`: the breakdown first.
std::string summary_text(const Json& s, const run::RunData& d, const ResourceLevels& levels) {
  const config::Config& cfg = *d.config;
  const trace::Workload& w = *d.workload;
  const Json& id = s["identity"];
  const Json& b = s["breakdown"];
  const Json& m = b["machine"];
  const double T = b["step_time_ns"].get<double>();
  std::string t;
  // A cluster by its own name (its UltraServers' rack is the "cluster" line's business).
  const std::string machine =
      d.cluster_ultraservers > 0
          ? fmt::format("{} ({} UltraServers of {} x {})", cfg.name.empty() ? "cluster" : cfg.name,
                        d.cluster_ultraservers, d.chips / std::size_t(std::max(1, d.cluster_simulated_ultraservers)),
                        cfg.chip->name)
          : fmt::format("{} ({} x {})", cfg.rack->name, d.chips, cfg.chip->name);
  t += fmt::format("trnsim run: {}, workload {} ({} on {} of {} chips, {})\n", machine, w.name,
                   count_of(std::uint64_t(w.num_ranks()), "rank"),
                   s["energy"]["chips_used"].get<std::size_t>(), d.chips,
                   count_of(s["workload"]["ops"].get<std::uint64_t>(), "op"));
  if (!id["config"]["given"].get<std::string>().empty()) {
    t += fmt::format("  config               {}\n", id["config"]["given"].get<std::string>());
  }
  const Json& models = id["models"];
  // A calibrated flow network says from what and the range of its applied efficiencies.
  std::string calibrated;
  if (const auto fc = models["network"].find("flow_calibration"); fc != models["network"].end()) {
    double lo = 1, hi = 0;
    std::size_t applied = 0;
    for (const Json& c : (*fc)["cases"]) {
      if (!c["applied"].get<bool>()) continue;
      ++applied;
      lo = std::min(lo, c["efficiency"].get<double>());
      hi = std::max(hi, c["efficiency"].get<double>());
    }
    const std::string from = (*fc)["method"].get<std::string>() == "workload"
                                 ? "the workload's collectives"
                                 : "whole-rack cases";
    calibrated = applied == 0
                     ? fmt::format(" calibrated from {} (no pattern applied)", from)
                     : fmt::format(" calibrated from {} on the packet fabric ({} at {:.3g} to "
                                   "{:.3g} of link bandwidth)",
                                   from, count_of(applied, "traffic pattern"), lo, hi);
  }
  t += fmt::format("  fidelity             {}: network {}{}, compute {}, memory {}\n",
                   id["fidelity"].get<std::string>(),
                   models["network"]["model"].get<std::string>(), calibrated,
                   models["compute"]["model"].get<std::string>(),
                   models["memory"]["model"].get<std::string>());
  // Fast-forward is reported where the trace has repeated micro-batches for it to skip.
  if (const Json& ff = id["fast_forward"]; ff["enabled"].get<bool>() && ff["units"].get<std::uint64_t>() > 0) {
    t += fmt::format("  fast-forward         {} of {} micro-batch units timed from the one before "
                     "({} compute ops, {} collectives; {:.3g} GB charged to the links{})\n",
                     ff["units_fast_forwarded"].get<std::uint64_t>(), ff["units"].get<std::uint64_t>(),
                     ff["compute_ops_fast_forwarded"].get<std::uint64_t>(),
                     ff["collectives_fast_forwarded"].get<std::uint64_t>(),
                     ff["bytes_charged"].get<double>() / 1e9,
                     ff["network_charges_links"].get<bool>() ? "" : ": not by this network");
    if (const auto n = ff["compute_ops_extrapolated"].get<std::uint64_t>(); n > 0) {
      t += fmt::format("  inside ops           {} compute ops simulated only for their head ({:.3g} "
                       "of their repeated work, a minimum each), the rest timed from profiles\n",
                       n, ff["op_head"].get<double>());
    }
  }
  t += fmt::format("  step time            {} (slowest rank {})\n",
                   T >= 1e6 ? fmt::format("{:.3f} ms", T / 1e6) : fmt_time(T),
                   b["critical_path"]["rank"].get<int>());
  t += fmt::format("  step breakdown       mean over ranks: compute {:.1f} %, overlapped {:.1f} %, "
                   "exposed communication {:.1f} %, waiting {:.1f} % ({:.1f} % for peers)\n",
                   pct(m["compute_ns"].get<double>(), T), pct(m["overlapped_ns"].get<double>(), T),
                   pct(m["exposed_communication_ns"].get<double>(), T),
                   pct(m["waiting_ns"].get<double>(), T), pct(m["waiting_for_peers_ns"].get<double>(), T));
  std::string phases;
  for (const auto& [k, v] : m["by_phase"].items()) {
    const double busy = v["compute_ns"].get<double>() + v["overlapped_ns"].get<double>() +
                        v["exposed_communication_ns"].get<double>() + v["waiting_for_peers_ns"].get<double>();
    phases += fmt::format("{}{} {:.1f} %", phases.empty() ? "" : ", ", k, pct(busy, T));
  }
  if (!phases.empty()) t += fmt::format("    by phase           {}\n", phases);
  // The longest ops of the critical path.
  std::vector<std::pair<double, std::string>> longest;
  for (const auto& op : b["critical_path"]["ops"]) {
    const double dur = op["end_ns"].get<double>() - op["start_ns"].get<double>();
    longest.emplace_back(dur, fmt::format("{} {} ({} to {})", cut_name(op["name"].get<std::string>()),
                                          fmt_time(dur), fmt_time(op["start_ns"].get<double>()),
                                          fmt_time(op["end_ns"].get<double>())));
  }
  std::stable_sort(longest.begin(), longest.end(), [](const auto& a, const auto& c) { return a.first > c.first; });
  std::string lp;
  for (std::size_t i = 0; i < longest.size() && i < 3; ++i) lp += (i ? ", " : "") + longest[i].second;
  t += fmt::format("    critical path      {}; longest {}\n",
                   count_of(b["critical_path"]["ops"].size(), "op"), lp);
  const Json& p = s["performance"];
  std::string peaks;
  for (const auto& [k, v] : p["by_dtype"].items()) {
    if (!v.contains("peak_flops_per_s")) continue;
    const std::string ran = v["ran_as"].get<std::string>();
    std::string label = ran;
    std::transform(label.begin(), label.end(), label.begin(), ::toupper);
    peaks += fmt::format("{}{} {}{}", peaks.empty() ? "" : ", ", label,
                         fmt_si(v["peak_flops_per_s"].get<double>(), "FLOPS"),
                         ran == k ? "" : fmt::format(" (for {})", k));
  }
  if (peaks.empty()) {
    t += "  achieved             no floating-point work (the trace has no compute ops)\n";
  } else {
    t += fmt::format("  achieved             {} = {:.1f} % of the Tensor peak of the types run ({})\n",
                     fmt_si(p["flops_per_s"].get<double>(), "FLOPS"),
                     100 * p["tensor_fraction_of_peak"].get<double>(), peaks);
  }
  if (!p["tokens_per_s"].is_null()) {
    t += fmt::format("  tokens               {:.0f} per step, {} tokens/s\n", p["tokens"].get<double>(),
                     fmt_si(p["tokens_per_s"].get<double>(), ""));
  }
  if (id.contains("cluster")) {
    const Json& c = id["cluster"];
    const int n = c["ultraservers"].get<int>(), sim = c["simulated_ultraservers"].get<int>();
    t += fmt::format("  cluster              {} UltraServers, {} chips; {} simulated{}; scale-out "
                     "flow-level, {} tiers; {} over the cluster\n",
                     n, c["chips"].get<std::uint64_t>(), sim,
                     c["folded"].get<bool>()
                         ? fmt::format(" (folded: each rank stands for {})",
                                       c["ranks_per_simulated_rank"].get<int>())
                         : "",
                     c["scale_out"]["tiers"].get<int>(),
                     fmt_si(p["flops_per_s"].get<double>() * double(n) / double(std::max(1, sim)),
                            "FLOPS"));
  }
  const Json& h = s["memory"];
  t += fmt::format("  HBM                  read {}/s, write {}/s = {:.1f} % of peak{}\n",
                   fmt_si(h["read_bytes_per_s"].get<double>(), "B"),
                   fmt_si(h["write_bytes_per_s"].get<double>(), "B"),
                   100 * h["fraction_of_peak"].get<double>(),
                   h["row_hit_rate"].is_null() ? std::string()
                       : fmt::format(", row hits {:.1f} %", 100 * h["row_hit_rate"].get<double>()));
  const Json& f = s["fabric"];
  // Packets and credits exist only where the network has them (the packet network of the
  // detailed tier); elsewhere the summary says so rather than print a figure that is not there.
  const bool packets = d.network_has_packets;
  const std::string detailed_only = one_tier_text("detailed");
  const auto messages = f["messages"].get<std::uint64_t>();
  const auto ff_messages = f["messages_fast_forwarded"].get<std::uint64_t>();
  t += fmt::format("  fabric               {}{}, {} delivered; packets {}\n", count_of(messages, "message"),
                   ff_messages > 0 ? fmt::format(" ({} fast-forwarded, without a latency)", ff_messages) : "",
                   fmt_si(double(f["bytes_delivered"].get<std::uint64_t>()), "B"),
                   packets ? fmt::format("{}", f["packets_delivered"].get<std::uint64_t>()) : detailed_only);
  for (const auto& [k, v] : f["tiers"].items()) {
    if (f["messages_simulated"].get<std::uint64_t>() == 0) break;
    if (k == "all" && f["tiers"].size() > 2) continue;
    const Json& ml = v["message_latency_ns"];
    const Json& pl = v["packet_latency_ns"];
    const Json& ul = v["packet_unloaded_latency_ns"];
    t += fmt::format("    {:<18} message p50 {}, p99 {}", k, fmt_time(ml["p50"].get<double>()),
                     fmt_time(ml["p99"].get<double>()));
    if (!pl.empty()) {
      t += fmt::format("; packet p50 {}, p99 {} (unloaded p99 {})", fmt_time(pl["p50"].get<double>()),
                       fmt_time(pl["p99"].get<double>()), fmt_time(ul["p99"].get<double>()));
    } else if (!packets) {
      t += "; packet latency " + detailed_only;
    }
    t += "\n";
  }
  const Json& hot = f["links"]["hottest"];
  if (!hot.empty() && messages > 0) {
    t += fmt::format("    links              mean {:.1f} %, hottest {} {:.1f} %; {}{}\n",
                     100 * f["links"]["mean_utilisation"].get<double>(),
                     cut_name(hot[0]["name"].get<std::string>()), 100 * hot[0]["utilisation"].get<double>(),
                     packets ? fmt::format("{} waited for credits",
                                           count_of(f["back_pressure"]["links_stalled"].get<std::size_t>(),
                                                    "direction"))
                             : "credit stalls " + detailed_only,
                     f["links"]["include_fast_forwarded"].get<bool>()
                         ? ""
                         : "; without the fast-forwarded messages (this network does not charge them)");
  }
  const Json& e = s["energy"];
  // Joules to the millijoule from 1 J up (as always), with an SI prefix below (a 12 us step).
  const auto joules = [](double j) { return j >= 1 ? fmt::format("{:.3f} J", j) : fmt_si(j, "J"); };
  const double idle_j = e["idle_chips"]["static_j"].get<double>() +
                        e["idle_chips"]["dynamic_j"].get<double>() +
                        e["idle_chips"]["fabric_static_j"].get<double>();
  t += fmt::format("  energy               {} over {}: {} average, {} peak{}; idle chips {} apart\n",
                   joules(e["total_j"].get<double>()),
                   count_of(e["chips_used"].get<std::size_t>(), "chip"),
                   fmt_si(e["average_power_w"].get<double>(), "W"), fmt_si(e["peak_power_w"].get<double>(), "W"),
                   e["flops_per_j"].get<double>() > 0
                       ? fmt::format(", {} ({:.3f} TFLOPS/W)", fmt_si(e["flops_per_j"].get<double>(), "FLOP/J"),
                                     e["tflops_per_w"].get<double>())
                       : "",
                   joules(idle_j));
  const std::string busy = busiest_text(levels.resources, 5);
  if (!busy.empty()) t += fmt::format("  busiest resources   {}\n", busy);
  if (s.contains("timeline")) t += timeline_line(s["timeline"]);
  for (const auto& n : d.notes) t += fmt::format("  note: {}\n", n);
  if (!e["peak_power_within_bound"].get<bool>()) {
    t += fmt::format("  warning: {}\n", peak_power_violation(e, d.chip_tdp_w));
  }
  for (const auto& x : w.warnings) t += fmt::format("  warning: {}\n", x);
  return t;
}

std::string number(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_field(v.get<std::string>());
  return v.dump();
}

}  // namespace

std::vector<int> used_chips(const run::RunData& d) {
  std::set<int> s(d.rank_to_chip.begin(), d.rank_to_chip.end());
  return {s.begin(), s.end()};
}

double workload_static_power(const run::RunData& d, const std::vector<int>& used) {
  double used_static = 0;
  for (int c : used) used_static += d.chip_energy.at(std::size_t(c)).static_.si;
  const double share = safe_div(double(used.size()), double(d.chip_energy.size()));
  return safe_div(used_static + d.fabric_energy.static_.si * share, d.end.to_seconds());
}

WorkloadPower workload_power(const run::RunData& d, const std::vector<int>& used) {
  const double T = d.end.to_seconds();
  WorkloadPower p;
  p.static_w = workload_static_power(d, used);
  for (std::size_t i = 1; i < d.samples.size(); ++i) {
    const auto& a = d.samples[i - 1];
    const auto& b = d.samples[i];
    double e = b.fabric_dynamic_j - a.fabric_dynamic_j;
    e += b.used_chips_dynamic_j - a.used_chips_dynamic_j;
    // The last interval may reach past the step's end: divide by the part inside it.
    const double dt = std::min(b.t_s, T) - a.t_s;
    if (dt > 0) p.intervals.push_back({a.t_s, p.static_w + e / dt});
  }
  return p;
}

Json percentiles_ns(std::vector<double> seconds) {
  if (seconds.empty()) return Json::object();
  // The figures of model::Histogram (the mean summed in the samples' order, nearest ranks),
  // without its sorted copy.
  const double mean = model::Histogram::mean_of(seconds);
  Json out = {{"count", seconds.size()}, {"mean", mean * 1e9}};
  std::size_t from = 0;
  for (const auto& [key, q] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1.0}}) {
    out[key] = model::nearest_rank_in_place(seconds, q, from) * 1e9;
    from = model::nearest_rank_index(seconds.size(), q);
  }
  return out;
}

Report make_report(const run::RunData& d, const Identity& identity, const TimelineOptions& tl,
                   ReportParts parts) {
  const config::Config& cfg = *d.config;
  const trace::Workload& w = *d.workload;
  if (!cfg.chip || !cfg.rack) throw InternalError("make_report: a run without chip or rack");
  const double T = d.end.to_seconds();
  Report out;
  if (parts.stats) out.stats = stats_json(d.stats);
  const std::vector<int> used = used_chips(d);
  Json& s = out.report;
  s["schema"] = "trnsim-report";
  s["schema_version"] = kSchemaVersion;
  s["identity"] = identity_json(d, identity);
  std::size_t nops = 0;
  for (const auto& r : w.ranks) nops += r.ops.size();
  s["workload"] = {{"name", w.name}, {"ranks", w.num_ranks()}, {"ops", nops}};
  s["machine"] = {{"rack", cfg.rack->name}, {"chip", cfg.chip->name}, {"chips", d.chips},
                  {"chips_used", used.size()}, {"chips_per_server", d.first_tier_chips}};
  s["performance"] = performance_json(d, T, used.size());
  const Breakdown b = compute_breakdown(w, d.records, d.collectives, d.end);
  s["breakdown"] = breakdown_json(d, b);
  s["memory"] = memory_json(d, T, used);
  s["fabric"] = fabric_json(d, T);
  const EnergyFigures e = energy_json(d, T, used, s["performance"]["flops"].get<double>(),
                                      tokens_of(w));
  s["energy"] = e.json;
  s["collectives"] = collectives_json(d);
  s["ops_by_kind"] = ops_by_kind_json(d);
  // The busiest resources at one level at every tier: compute engines (rack.chipN.ncM.tensor),
  // link directions, HBM stacks where modelled; then engines alone, and cores (a core as busy as
  // its busiest engine, as the op tier's cores report utilisation).
  const ResourceLevels levels = resource_levels(d.stats, T);
  auto top = [](const std::vector<std::pair<std::string, double>>& util, std::size_t n) {
    Json list = Json::array();
    for (std::size_t i = 0; i < util.size() && i < n; ++i) {
      list.push_back({{"name", util[i].first}, {"utilisation", util[i].second}});
    }
    return list;
  };
  s["busiest"] = top(levels.resources, kListed);
  s["busiest_engines"] = top(levels.engines, kListed);
  s["busiest_cores"] = top(levels.cores, kListed);
  Json notes = Json::array();
  for (const auto& n : d.notes) notes.push_back(n);
  if (!e.within_bound) notes.push_back(peak_power_violation(s["energy"], d.chip_tdp_w));
  for (const auto& n : w.warnings) notes.push_back(n);
  s["notes"] = notes;
  // The figures that mean the same at every tier (figures.hpp), each with its value; a one-tier
  // figure elsewhere is null with the tier that has it.
  Json figures = Json::array();
  for (const Figure& f : kFigures) {
    const Json::json_pointer at{std::string(f.pointer)};
    Json v = s.contains(at) ? s.at(at) : Json();
    // A one-tier figure is null where the network has no packets: packets and credits do not
    // exist there, and it gives a merged transfer's pieces one arrival, its end.
    if (!f.only_at.empty() && !d.network_has_packets) v = Json();
    Json fig = {{"name", f.name}, {"unit", f.unit}, {"value", v}};
    if (!f.only_at.empty()) fig["only_at"] = f.only_at;
    figures.push_back(std::move(fig));
  }
  s["figures"] = figures;

  // summary.csv: the same columns for every run (summary.hpp), empty where a figure does not
  // exist.
  std::string header, line;
  for (std::size_t i = 0; i < kSummaryColumns.size(); ++i) {
    const Json::json_pointer at{std::string(kSummaryColumns[i].pointer)};
    header += fmt::format("{}{}", i ? "," : "", kSummaryColumns[i].name);
    line += fmt::format("{}{}", i ? "," : "", s.contains(at) ? number(s.at(at)) : "");
  }
  out.summary_csv = header + "\n" + line + "\n";
  if (parts.ops_and_timeline) {
    out.ops_csv = ops_csv(d);
    out.timeline = make_timeline(d, tl);
    // What timeline.json holds of the run, so a cap that dropped ops is said where it is read.
    s["timeline"] = out.timeline["otherData"];
  }
  out.text = summary_text(s, d, levels);
  Json by_kind = Json::object();
  for (const auto& [k, n] : d.activations_by_kind) by_kind[k] = n;
  out.host = {{"wall_time_s", d.wall_seconds},
              {"simulation_wall_time_s", d.simulation_seconds},
              {"process_activations", d.activations},
              {"process_activations_by_kind", by_kind},
              {"delta_cycles", d.delta_cycles},
              {"chip_models_elaborated", d.chip_models_built},
              {"glibc_tunables", malloc_tunables()}};
  if (!d.flow_calibration_from.empty()) {
    out.host["flow_calibration"] = {{"from", d.flow_calibration_from},
                                    {"wall_time_s", d.flow_calibration_seconds},
                                    {"cache_file", d.flow_calibration_file}};
  }
  if (!d.calibration_from.empty()) {
    out.host["calibration"] = {{"from", d.calibration_from},
                               {"wall_time_s", d.calibration_seconds},
                               {"cache_key", d.calibration_cache_key},
                               {"cache_file", d.calibration_cache_file},
                               {"ops_simulated", d.calibration_ops_simulated},
                               {"ops_from_cache", d.calibration_ops_from_cache}};
  }
  return out;
}

std::vector<std::string> output_file_names() {
  return {"report.json", "summary.csv", "host.json", "config.json",
          "stats.json",  "ops.csv",     "timeline.json"};
}

void write_outputs(const std::string& dir, const Report& out, const config::LoadedConfig& cfg) {
  write_outputs(dir, out, cfg, output_file_names());
}

void write_outputs(const std::string& dir, const Report& out, const config::LoadedConfig& cfg,
                   const std::vector<std::string>& files) {
  OutputDir d(dir);  // all files appear together or not at all
  const std::vector<std::string> names = output_file_names();
  const auto wanted = [&](std::size_t i) { return std::find(files.begin(), files.end(), names[i]) != files.end(); };
  if (wanted(0)) d.add(names[0], out.report.dump(2) + "\n");
  if (wanted(1)) d.add_ref(names[1], out.summary_csv);
  if (wanted(2)) d.add(names[2], out.host.dump(2) + "\n");
  if (wanted(3)) d.add(names[3], config::to_json(cfg.config).dump(2) + "\n");
  if (wanted(4)) d.add(names[4], out.stats.dump(1) + "\n");
  if (wanted(5)) d.add_ref(names[5], out.ops_csv);
  if (wanted(6)) d.add(names[6], out.timeline.dump() + "\n");
  d.also_replaces(names);
  d.commit();
}

}  // namespace trnsim::report
