// SPDX-License-Identifier: MIT
#include "flow_calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
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

std::string_view op_name(trace::OpKind k) {
  switch (k) {
    case trace::OpKind::all_to_all: return "all-to-all";
    case trace::OpKind::all_gather: return "all-gather";
    case trace::OpKind::reduce_scatter: return "reduce-scatter";
    default: return "all-reduce";
  }
}

// One collective on every chip of the rack, as `trnsim bench collective` runs it.
trace::Workload canonical_workload(const CalCase& c, int n) {
  trace::Workload w;
  w.name = fmt::format("flow calibration {} {}", op_name(c.op), replay::algorithm_name(c.algorithm));
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
  return w;
}

// The config of one run of a case: the network named outright (packet or flow), the flow one
// uncalibrated, the case's algorithm, no fast-forward, one rank per chip.
config::LoadedConfig case_config(const config::LoadedConfig& loaded, const CalCase& c,
                                 bool packet) {
  config::LoadedConfig cfg = loaded;
  auto& fabric = cfg.config.rack->fabric;
  fabric.model = packet ? "packet" : "flow";
  fabric.flow_calibration = config::FlowCalibration::none;
  cfg.config.sim.fidelity = packet ? config::Fidelity::detailed : config::Fidelity::fast;
  cfg.config.sim.fast_forward = false;
  cfg.config.replay.collectives.algorithm = c.algorithm;
  cfg.config.replay.placement = config::RankPlacement::chip;
  cfg.config.replay.ranks_per_chip = 1;
  return cfg;
}

// {"time_ns", "algorithm"} of one run of a case, in this (child) process.
std::string run_case(const config::LoadedConfig& loaded, const CalCase& c, int n, bool packet,
                     double efficiency) {
  const config::LoadedConfig cfg = case_config(loaded, c, packet);
  const trace::Workload w = canonical_workload(c, n);
  TraceReplay driver(w);
  Simulation sim(cfg, driver, resolve::Purpose::bench_collective);
  if (!packet) {
    std::array<double, 16> e{};
    e.fill(efficiency);
    sim.set_flow_efficiency(e);
  }
  const RunData out = sim.run();
  if (out.collectives.size() != 1) throw InternalError("flow calibration: no collective ran");
  return json{{"time_ns", out.end.to_seconds() * 1e9},
              {"algorithm", std::string(replay::algorithm_name(out.collectives[0].algorithm))}}
      .dump();
}

// The canonical key: everything the packet runs depend on (the whole config but the settings
// that only choose models or budgets), the method and this build.
json canonical_key(const config::LoadedConfig& loaded) {
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
  return json{{"format", kFlowCalibrationFormat},
              {"build", build_identity()},
              {"bytes_per_rank", kFlowCalibrationBytes},
              {"config", cfg}};
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

FlowCalibrationResult calibrate_flow(const config::LoadedConfig& loaded,
                                     const resolve::RackPlan& plan, const CacheSettings& cache,
                                     int parallel) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!loaded.config.rack) throw InternalError("flow calibration without a rack");
  // Hashed as every other cache's key (profile_cache.hpp): the file name; the entry's key is
  // compared in full before it is trusted.
  const CacheKey key = cache_key(canonical_key(loaded));
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
  const int n = int(plan.topology.chip_count());
  // Three runs per case: the packet fabric, the flow network at full and at half efficiency.
  std::vector<std::function<std::string()>> jobs;
  for (const CalCase& c : kCalCases) {
    jobs.push_back([&loaded, c, n] { return run_case(loaded, c, n, true, 1.0); });
    jobs.push_back([&loaded, c, n] { return run_case(loaded, c, n, false, 1.0); });
    jobs.push_back([&loaded, c, n] { return run_case(loaded, c, n, false, kProbeEfficiency); });
  }
  logger("run")->info("flow calibration: {} canonical cases on the packet fabric of {} chips",
                      std::size(kCalCases), n);
  const std::vector<std::string> out = run_forked(jobs, std::max(1, parallel));
  FlowCalibrationResult r;
  json cases = json::array();
  std::array<bool, 16> set{};
  for (std::size_t i = 0; i < std::size(kCalCases); ++i) {
    const CalCase& c = kCalCases[i];
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
    // The pattern is that of the algorithm that ran (one that cannot run on this rack falls
    // back to the ring, whose case comes first).
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
                {"algorithm", std::string(replay::algorithm_name(c.algorithm))},
                {"ran", ran},
                {"op", std::string(op_name(c.op))},
                {"bytes_per_rank", kFlowCalibrationBytes},
                {"ranks", n},
                {"packet_ns", tp},
                {"flow_ns", t1},
                {"flow_half_ns", t2},
                {"fixed_ns", fixed},
                {"data_ns", data},
                {"efficiency", eff},
                {"applied", used}};
    if (!note.empty()) row["note"] = note;
    cases.push_back(row);
  }
  r.provenance = {{"method", "packet"},
                  {"format", kFlowCalibrationFormat},
                  {"cases", cases}};
  if (!path.empty()) {
    write_entry(path, canonical, r);
    evict_least_recently_used(fs::path(path).parent_path().string(), ".json", path,
                              cache.max_bytes, "flow calibration");
  }
  return finish(std::move(r), "simulated");
}

}  // namespace trnsim::run
