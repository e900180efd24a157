// SPDX-License-Identifier: MIT
#include "flow_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include "profile_cache.hpp"
#include "trace_replay.hpp"
#include "trnsim/error.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/log.hpp"
#include "trnsim/replay/collectives.hpp"
#include "trnsim/replay/pattern.hpp"
#include "trnsim/run/simulation.hpp"

namespace trnsim::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using config::CollectiveAlgorithm;

// Bumped whenever an entry's layout or the method changes.
constexpr const char* kFlowCalibrationFormat = "trnsim-flow-calibration-2";
// Lowest efficiency a pattern can get: a guard against a canonical case whose packet time is
// all fixed costs, never reached on the presets.
constexpr double kMinEfficiency = 0.05;
// The flow network's links at this efficiency in the second flow run of a case.
constexpr double kProbeEfficiency = 0.5;

// The canonical case of each pattern (replay::traffic_pattern): its collective with its
// algorithm. Mesh below mesh_max_bytes stands for every collective there: its all-gather.
struct CalCase {
  CollectiveAlgorithm algorithm;
  trace::OpKind op;
};
constexpr CalCase kCalCases[] = {
    {CollectiveAlgorithm::mesh, trace::OpKind::all_to_all},
    {CollectiveAlgorithm::ring, trace::OpKind::all_gather},
    {CollectiveAlgorithm::multi_ring, trace::OpKind::all_gather},
    {CollectiveAlgorithm::rdh, trace::OpKind::all_gather},
    {CollectiveAlgorithm::hierarchical, trace::OpKind::all_gather},
    {CollectiveAlgorithm::ring, trace::OpKind::reduce_scatter},
    {CollectiveAlgorithm::multi_ring, trace::OpKind::reduce_scatter},
    {CollectiveAlgorithm::rdh, trace::OpKind::reduce_scatter},
    {CollectiveAlgorithm::hierarchical, trace::OpKind::reduce_scatter},
    {CollectiveAlgorithm::ring, trace::OpKind::all_reduce},
    {CollectiveAlgorithm::multi_ring, trace::OpKind::all_reduce},
    {CollectiveAlgorithm::rdh, trace::OpKind::all_reduce},
    {CollectiveAlgorithm::hierarchical, trace::OpKind::all_reduce},
    {CollectiveAlgorithm::mesh, trace::OpKind::all_gather},
};

// Workload cases (`workload`): at most this many classes of the workload's collectives, those
// with the most bytes; the rest keep the nominal bandwidth (a bound on the packet simulation a
// trace with many group sizes could ask for).
constexpr std::size_t kMaxWorkloadCases = 8;
// A workload case's collective sends at most this much per rank (a larger one is scaled down,
// its per-peer sizes in proportion): seconds of packet simulation per group of 16 chips.
constexpr std::uint64_t kMaxWorkloadCaseBytes = 1ull << 30;

// What a collective sends per member: its size, or an all_to_all_v's per-peer sizes together.
std::uint64_t op_bytes(const trace::Op& op) {
  if (op.kind != trace::OpKind::all_to_all_v) return op.bytes;
  std::uint64_t sum = 0;
  for (auto b : op.send_bytes) sum += b;
  return sum;
}

std::string_view op_name(trace::OpKind k) {
  switch (k) {
    case trace::OpKind::all_to_all: return "all-to-all";
    case trace::OpKind::all_to_all_v: return "all-to-all-v";
    case trace::OpKind::all_gather: return "all-gather";
    case trace::OpKind::reduce_scatter: return "reduce-scatter";
    default: return "all-reduce";
  }
}

bool calibrated_kind(trace::OpKind k) {
  using K = trace::OpKind;
  return k == K::all_to_all || k == K::all_to_all_v || k == K::all_gather ||
         k == K::reduce_scatter || k == K::all_reduce;
}

// One case: a collective on some of the ranks, run on the packet fabric and twice on the flow
// network.
struct Case {
  trace::Workload workload;
  trace::OpKind op = trace::OpKind::all_to_all;
  std::string asked;        // the algorithm the case's config asks for
  bool canonical = true;    // its algorithm and one rank per chip forced; else the config's
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::auto_;  // canonical: the one forced
  std::uint64_t bytes_per_rank = 0;
  int ranks = 0;
  json describe;  // what the case is beyond that (a workload case's class, group, count)
};

// One collective on every chip of the rack, as `trnsim bench collective` runs it.
Case canonical_case(const CalCase& c, int n) {
  Case out;
  trace::Workload& w = out.workload;
  w.name = fmt::format("flow calibration {} {}", op_name(c.op),
                       replay::algorithm_name(c.algorithm));
  w.ranks.resize(std::size_t(n));
  for (int r = 0; r < n; ++r) {
    w.groups["world"].push_back(r);
    trace::Op op;
    op.id = 0;
    op.kind = c.op;
    op.group = "world";
    op.bytes = kFlowCalibrationBytes;
    w.ranks[std::size_t(r)].rank = r;
    w.ranks[std::size_t(r)].ops = {op};
  }
  out.op = c.op;
  out.asked = std::string(replay::algorithm_name(c.algorithm));
  out.canonical = true;
  out.algorithm = c.algorithm;
  out.bytes_per_rank = kFlowCalibrationBytes;
  out.ranks = n;
  return out;
}

// The workload's own cases: its collectives in classes of one kind, group size and size range
// (below mesh_max_bytes, below rdh_max_bytes, above: the ranges `auto` picks an algorithm by),
// the classes with the most bytes first. A class's case is its median collective by size (the
// first visited of that size), on the group it ran on and every other rank idle, each member
// sending that size, with the config's algorithm and placement. An all_to_all_v's members send
// their own per-peer sizes of that instance (the op of the same name on the same group at each
// member), then the instance transposed, so that the case has the instance's imbalance in both
// directions (a routed dispatch's busiest receivers are its combine's busiest senders) rather
// than every link loaded alike; where the members' ops cannot be told apart by name (a name
// missing or repeated on a member), each member sends the representative's sizes rotated by its
// place in the group, once. Deterministic: the source visits its ops in a fixed order.
std::vector<Case> workload_cases(const config::LoadedConfig& loaded,
                                 const replay::WorkSource& source) {
  const auto& params = loaded.config.replay.collectives;
  const auto& groups = source.groups();
  struct Key {
    trace::OpKind kind;
    std::size_t members;
    int range;
    auto operator<=>(const Key&) const = default;
  };
  struct Class {
    std::vector<std::uint64_t> sizes;  // every instance's, in visit order
    double bytes = 0;                  // all its members send, over every instance
  };
  std::map<Key, Class> classes;
  source.calibration_ops([&](int, const trace::Op& op) {
    if (!calibrated_kind(op.kind)) return;
    const auto g = groups.find(op.group);
    if (g == groups.end() || g->second.size() < 2) return;
    const std::uint64_t b = op_bytes(op);
    const bool a2a = op.kind == trace::OpKind::all_to_all || op.kind == trace::OpKind::all_to_all_v;
    const int range = a2a ? 0 : double(b) < params.mesh_max_bytes.si ? 0
                           : double(b) < params.rdh_max_bytes.si   ? 1
                                                                   : 2;
    Class& c = classes[Key{op.kind, g->second.size(), range}];
    c.sizes.push_back(b);
    c.bytes += double(b);
  });
  // The classes with the most bytes (ties: in key order), and each one's median size.
  std::vector<std::pair<Key, const Class*>> order;
  for (const auto& [k, c] : classes) order.emplace_back(k, &c);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->bytes > b.second->bytes; });
  if (order.size() > kMaxWorkloadCases) {
    logger("run")->warn("flow calibration: the workload's collectives fall in {} classes; the {} "
                        "with the most bytes are calibrated, the others keep the links' nominal "
                        "bandwidth",
                        order.size(), kMaxWorkloadCases);
    order.resize(kMaxWorkloadCases);
  }
  std::map<Key, std::uint64_t> median;
  for (const auto& [k, c] : order) {
    std::vector<std::uint64_t> s = c->sizes;
    std::nth_element(s.begin(), s.begin() + std::ptrdiff_t(s.size() / 2), s.end());
    median[k] = s[s.size() / 2];
  }
  // Each class's representative: the first instance visited of its median size.
  std::map<Key, trace::Op> chosen;
  source.calibration_ops([&](int, const trace::Op& op) {
    if (!calibrated_kind(op.kind)) return;
    const auto g = groups.find(op.group);
    if (g == groups.end() || g->second.size() < 2) return;
    for (const auto& [k, m] : median) {
      if (k.kind == op.kind && k.members == g->second.size() && m == op_bytes(op) &&
          !chosen.count(k)) {
        chosen.emplace(k, op);
      }
    }
  });
  // An all_to_all_v representative's instance: at each member (by rank), the first op of its
  // name, kind and group, and how many such ops the member has.
  struct Row {
    int ops = 0;
    std::vector<std::uint64_t> send_bytes;
  };
  std::map<Key, std::map<int, Row>> rows;
  source.calibration_ops([&](int rank, const trace::Op& op) {
    if (op.kind != trace::OpKind::all_to_all_v) return;
    for (const auto& [k, rep] : chosen) {
      if (k.kind != op.kind || rep.name.empty() || op.name != rep.name || op.group != rep.group) {
        continue;
      }
      Row& row = rows[k][rank];
      if (++row.ops == 1) row.send_bytes = op.send_bytes;
    }
  });
  std::vector<Case> out;
  for (const auto& [k, c] : order) {
    trace::Op rep = chosen.at(k);
    const std::vector<int>& members = groups.at(rep.group);
    const std::uint64_t size = op_bytes(rep);
    const std::uint64_t sent = std::min(size, kMaxWorkloadCaseBytes);
    Case cs;
    trace::Workload& w = cs.workload;
    w.name = fmt::format("flow calibration {} on {} ({} members)", op_name(k.kind),
                         rep.group, members.size());
    w.groups[rep.group] = members;
    w.ranks.resize(std::size_t(source.num_ranks()));
    for (int r = 0; r < source.num_ranks(); ++r) w.ranks[std::size_t(r)].rank = r;
    const std::size_t n = members.size();
    // An all_to_all_v's rows: each member's own, when every member has exactly one op of the
    // representative's name (and as many peers); else the representative's, rotated.
    std::vector<std::vector<std::uint64_t>> own;
    if (k.kind == trace::OpKind::all_to_all_v) {
      const auto& by_rank = rows[k];
      for (std::size_t i = 0; i < n; ++i) {
        const auto m = by_rank.find(members[i]);
        if (m == by_rank.end() || m->second.ops != 1 || m->second.send_bytes.size() != n) {
          own.clear();
          break;
        }
        own.push_back(m->second.send_bytes);
      }
    }
    // Scaled down in proportion to the cap, by the busiest member's total when the rows are
    // the members' own (exact when it is not reached).
    double scale = double(sent) / double(size);
    if (!own.empty()) {
      std::uint64_t most = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t sends = 0, receives = 0;
        for (std::size_t j = 0; j < n; ++j) {
          sends += own[i][j];
          receives += own[j][i];
        }
        most = std::max({most, sends, receives});
      }
      scale = most > kMaxWorkloadCaseBytes ? double(kMaxWorkloadCaseBytes) / double(most) : 1.0;
    }
    for (std::size_t i = 0; i < n; ++i) {
      trace::Op op;
      op.id = 0;
      op.kind = k.kind;
      op.group = rep.group;
      op.dtype = rep.dtype;
      if (k.kind == trace::OpKind::all_to_all_v) {
        op.send_bytes.resize(n);
        for (std::size_t j = 0; j < n; ++j) {
          const std::uint64_t b = own.empty() ? rep.send_bytes.at((j + n - i) % n) : own[i][j];
          op.send_bytes[j] = scale == 1.0 ? b : std::uint64_t(double(b) * scale);
        }
      } else {
        op.bytes = sent;
      }
      w.ranks[std::size_t(members[i])].ops = {op};
      if (own.empty()) continue;
      // Then the instance transposed (each member sends what it received): its busiest
      // receivers become its busiest senders, as a dispatch's are a combine's, and the two
      // directions of imbalance lose differently in the packet fabric.
      trace::Op back = op;
      back.id = 1;
      back.deps = {0};
      for (std::size_t j = 0; j < n; ++j) {
        const std::uint64_t b = own[j][i];
        back.send_bytes[j] = scale == 1.0 ? b : std::uint64_t(double(b) * scale);
      }
      w.ranks[std::size_t(members[i])].ops.push_back(back);
    }
    cs.op = k.kind;
    cs.asked = std::string(replay::algorithm_name(params.algorithm));
    cs.canonical = false;
    cs.bytes_per_rank = sent;
    cs.ranks = int(n);
    cs.describe = {{"group", rep.group},
                   {"instances", c->sizes.size()},
                   {"class_bytes", c->bytes},
                   {"median_bytes_per_rank", size}};
    if (k.kind == trace::OpKind::all_to_all_v) {
      cs.describe["instance"] = rep.name;
      cs.describe["rows"] = own.empty() ? "rotated" : "own, then transposed";
    }
    if (scale != 1.0) cs.describe["scaled_to"] = own.empty() ? sent : std::uint64_t(double(size) * scale);
    out.push_back(std::move(cs));
  }
  return out;
}

// The config of one run of a case: the network named outright (packet or flow), the flow one
// uncalibrated, /sim's defaults with the run's seed, no fast-forward; a canonical case's
// algorithm and one rank per chip.
config::LoadedConfig case_config(const config::LoadedConfig& loaded, const Case& c,
                                 bool packet) {
  config::LoadedConfig cfg = loaded;
  auto& fabric = cfg.config.rack->fabric;
  fabric.model = packet ? "packet" : "flow";
  fabric.flow_calibration = config::FlowCalibration::none;
  // /sim at its defaults but the seed, as the cache key has it: the run's own settings (a
  // thread count for the fast tier's cores, budgets for its whole workload) are not the case's.
  const auto seed = cfg.config.sim.seed;
  cfg.config.sim = config::SimParams{};
  cfg.config.sim.seed = seed;
  cfg.config.sim.fidelity = packet ? config::Fidelity::detailed : config::Fidelity::fast;
  cfg.config.sim.fast_forward = false;
  if (c.canonical) {
    cfg.config.replay.collectives.algorithm = c.algorithm;
    cfg.config.replay.placement = config::RankPlacement::chip;
    cfg.config.replay.ranks_per_chip = 1;
  }
  return cfg;
}

// {"time_ns", "algorithm"} of one run of a case, in this (child) process.
std::string run_case(const config::LoadedConfig& loaded, const Case& c, bool packet,
                     double efficiency) {
  const config::LoadedConfig cfg = case_config(loaded, c, packet);
  TraceReplay driver(c.workload);
  Simulation sim(cfg, driver, resolve::Purpose::bench_collective);
  if (!packet) {
    std::array<double, 16> e{};
    e.fill(efficiency);
    sim.set_flow_efficiency(e);
  }
  const RunData out = sim.run();
  if (out.collectives.empty()) throw InternalError("flow calibration: no collective ran");
  return json{{"time_ns", out.end.to_seconds() * 1e9},
              {"algorithm", std::string(replay::algorithm_name(out.collectives[0].algorithm))}}
      .dump();
}

// The canonical key: everything the packet runs depend on (the whole config but the settings
// that only choose models or budgets), the method and this build.
json canonical_key(const config::LoadedConfig& loaded, const std::vector<Case>& cases,
                   bool workload) {
  json cfg = config::to_json(loaded.config);
  if (cfg.contains("sim")) {
    const json seed = cfg["sim"].value("seed", json(1));
    cfg["sim"] = json{{"seed", seed}};
  }
  if (cfg.contains("rack") && cfg["rack"].contains("fabric")) {
    cfg["rack"]["fabric"].erase("model");
    cfg["rack"]["fabric"].erase("flow_calibration");
  }
  cfg.erase("name");
  cfg.erase("description");
  json key = {{"format", kFlowCalibrationFormat},
              {"build", build_identity()},
              {"bytes_per_rank", kFlowCalibrationBytes},
              {"config", cfg}};
  if (!workload) return key;
  // A workload's cases: every op each runs, where.
  json runs = json::array();
  for (const Case& c : cases) {
    json ranks = json::array();
    for (const auto& r : c.workload.ranks) {
      for (const auto& op : r.ops) {
        ranks.push_back({r.rank, trace::kind_name(op.kind), op.group, op.bytes, op.send_bytes});
      }
    }
    runs.push_back({{"members", c.workload.groups}, {"ops", ranks}});
  }
  key["workload_cases"] = runs;
  return key;
}

std::optional<FlowCalibrationResult> read_entry(const std::string& path,
                                                const std::string& canonical) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const json j = json::parse(ss.str(), nullptr, false);
  try {
    if (j.is_discarded() || j.at("format") != kFlowCalibrationFormat ||
        j.at("key").get<std::string>() != canonical) {
      logger("run")->warn("flow calibration cache: ignoring {} (not an entry for this key)",
                          path);
      return std::nullopt;
    }
    FlowCalibrationResult r;
    r.efficiency = j.at("efficiency").get<std::array<double, 16>>();
    r.provenance = j.at("provenance");
    return r;
  } catch (const json::exception&) {
    logger("run")->warn("flow calibration cache: ignoring {} (a field is missing or of the "
                        "wrong type)",
                        path);
    return std::nullopt;
  }
}

void write_entry(const std::string& path, const std::string& canonical,
                 const FlowCalibrationResult& r) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream f(tmp);
    f << json{{"format", kFlowCalibrationFormat},
              {"key", canonical},
              {"efficiency", r.efficiency},
              {"provenance", r.provenance}}
             .dump(1);
    if (!f) {
      logger("run")->warn("flow calibration cache: cannot write {}", tmp);
      return;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) logger("run")->warn("flow calibration cache: cannot write {}: {}", path, ec.message());
}

}  // namespace

std::optional<FlowCalibrationResult> calibrate_flow(const config::LoadedConfig& loaded,
                                                    const resolve::RackPlan& plan,
                                                    const CacheSettings& cache, int parallel,
                                                    const replay::WorkSource* source) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!loaded.config.rack) throw InternalError("flow calibration without a rack");
  const bool from_workload = plan.fabric.params.flow_calibration == config::FlowCalibration::workload;
  if (from_workload && !source) throw InternalError("flow calibration: no workload to calibrate on");
  std::vector<Case> cases;
  if (from_workload) {
    cases = workload_cases(loaded, *source);
    if (cases.empty()) {
      // Nothing to calibrate on (a serving iteration declares its compute ops only): said when
      // the config asked for it by name.
      const bool asked =
          loaded.config.rack->fabric.flow_calibration == config::FlowCalibration::workload;
      logger("run")->log(asked ? spdlog::level::warn : spdlog::level::debug,
                         "flow calibration: the workload declares no collective on a group of 2 "
                         "or more ranks; every link keeps its nominal bandwidth");
      return std::nullopt;
    }
  } else {
    for (const CalCase& c : kCalCases) cases.push_back(canonical_case(c, int(plan.topology.chip_count())));
  }
  // Hashed as every other cache's key (profile_cache.hpp): the file name; the entry's key is
  // compared in full before it is trusted.
  const CacheKey key = cache_key(canonical_key(loaded, cases, from_workload));
  const std::string& canonical = key.canonical;
  const std::string& hex = key.hex;
  const std::string path =
      cache.enabled ? (fs::path(cache.dir) / "flow_calibration" / (hex + ".json")).string() : "";
  auto finish = [&](FlowCalibrationResult r, const char* from) {
    r.from = from;
    r.cache_key = hex;
    r.cache_file = path;
    r.wall_time_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.provenance["cache_key"] = hex;
    return r;
  };
  if (!path.empty()) {
    if (auto hit = read_entry(path, canonical)) {
      std::error_code ec;
      fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
      logger("run")->info("flow calibration from the cache ({})", path);
      return finish(std::move(*hit), "cache");
    }
  }
  // Three runs per case: the packet fabric, the flow network at full and at half efficiency.
  std::vector<std::function<std::string()>> jobs;
  for (const Case& c : cases) {
    jobs.push_back([&loaded, &c] { return run_case(loaded, c, true, 1.0); });
    jobs.push_back([&loaded, &c] { return run_case(loaded, c, false, 1.0); });
    jobs.push_back([&loaded, &c] { return run_case(loaded, c, false, kProbeEfficiency); });
  }
  if (from_workload) {
    logger("run")->info("flow calibration: {} of the workload's collectives on the packet fabric",
                        cases.size());
  } else {
    logger("run")->info("flow calibration: {} canonical cases on the packet fabric of {} chips",
                        cases.size(), plan.topology.chip_count());
  }
  const std::vector<std::string> out = run_forked(jobs, std::max(1, parallel));
  FlowCalibrationResult r;
  json rows = json::array();
  std::array<bool, 16> set{};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const json p = json::parse(out[3 * i]), f1 = json::parse(out[3 * i + 1]),
               f2 = json::parse(out[3 * i + 2]);
    const double tp = p.at("time_ns"), t1 = f1.at("time_ns"), t2 = f2.at("time_ns");
    // The flow time is fixed + data / efficiency: two efficiencies give both parts.
    const double data = (t2 - t1) / (1.0 / kProbeEfficiency - 1.0);
    const double fixed = t1 - data;
    double eff = 1.0;
    std::string note;
    if (data > 0 && tp - fixed > 0) {
      eff = data / (tp - fixed);
    } else {
      note = "no data time to scale";
    }
    if (eff > 1.0) note = "packet faster than the flow network's full bandwidth: kept at 1";
    if (eff < kMinEfficiency) note = fmt::format("below {}: kept at it", kMinEfficiency);
    eff = std::clamp(eff, kMinEfficiency, 1.0);
    // The pattern is that of the algorithm that ran (a canonical case's algorithm that cannot
    // run on this rack falls back to the ring, whose case comes first; a workload case's is
    // what `auto` or the config chose). Cases come in order of precedence: the first of a
    // pattern sets it.
    const std::string ran = p.at("algorithm");
    CollectiveAlgorithm alg = c.algorithm;
    for (const auto& [a, name] : enum_names(CollectiveAlgorithm{})) {
      if (name == ran) alg = a;
    }
    const std::size_t pattern = replay::traffic_pattern(c.op, alg);
    const bool used = pattern != 0 && !set[pattern];
    if (used) {
      r.efficiency[pattern] = eff;
      set[pattern] = true;
    }
    json row = {{"pattern", pattern},
                {"algorithm", c.asked},
                {"ran", ran},
                {"op", std::string(op_name(c.op))},
                {"bytes_per_rank", c.bytes_per_rank},
                {"ranks", c.ranks},
                {"packet_ns", tp},
                {"flow_ns", t1},
                {"flow_half_ns", t2},
                {"fixed_ns", fixed},
                {"data_ns", data},
                {"efficiency", eff},
                {"applied", used}};
    if (!c.describe.is_null()) row["workload"] = c.describe;
    if (!note.empty()) row["note"] = note;
    rows.push_back(row);
  }
  r.provenance = {{"method", from_workload ? "workload" : "packet"},
                  {"format", kFlowCalibrationFormat},
                  {"cases", rows}};
  if (!path.empty()) {
    write_entry(path, canonical, r);
    evict_least_recently_used(fs::path(path).parent_path().string(), ".json", path,
                              cache.max_bytes, "flow calibration");
  }
  return finish(std::move(r), "simulated");
}

}  // namespace trnsim::run
