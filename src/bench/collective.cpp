// SPDX-License-Identifier: MIT
// `trnsim bench collective`: one collective on R ranks of a rack, run through the whole replay
// path (chips, fabric, collective algorithms): time, algorithm bandwidth and bus bandwidth.
#include "trnsim/bench/collective.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/error.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::bench {

namespace {

trace::OpKind kind_of(const std::string& op) {
  if (op == "all-reduce") return trace::OpKind::all_reduce;
  if (op == "all-gather") return trace::OpKind::all_gather;
  if (op == "reduce-scatter") return trace::OpKind::reduce_scatter;
  if (op == "all-to-all") return trace::OpKind::all_to_all;
  throw InputError(fmt::format(
      "--op: expected all-reduce, all-gather, reduce-scatter or all-to-all, got \"{}\"", op));
}

// nccl-tests' bus-bandwidth factors: what each rank's links must carry relative to the size.
double bus_factor(trace::OpKind k, int n) {
  if (n <= 1) return 0;
  return k == trace::OpKind::all_reduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
}

// The rack config: ConfigError when it has none.
config::LoadedConfig load_rack(const ConfigSource& source) {
  auto cfg = source.load();
  if (!cfg.config.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: bench collective needs a rack preset",
                                  cfg.path));
  }
  return cfg;
}

// The rack as the benchmark builds it (resolve::Purpose::bench_collective: the detailed models
// unless the config names others).
resolve::RackPlan rack_plan(const config::LoadedConfig& cfg) {
  return *resolve::plan(cfg, resolve::Purpose::bench_collective).rack;
}

// Everything a point of the sweep needs besides its size.
struct Setup {
  std::string op;
  int ranks = 0, per_chip = 1;
};

// The config a point runs: --ranks-per-chip as /replay/placement block.
config::LoadedConfig point_config(const ConfigSource& source, const Setup& su) {
  if (su.per_chip == 1) return load_rack(source);
  ConfigSource with = source;
  with.sets.push_back("replay.placement=block");
  with.sets.push_back(fmt::format("replay.ranks_per_chip={}", su.per_chip));
  return load_rack(with);
}

// The link direction that carried the most bytes for its bandwidth over the run, as a fraction
// of what it could have carried (wire bytes, headers included), and its block name. A link's
// own "utilisation" counts the time a packet held it, which includes waiting for the packet's
// tail from upstream, so it is not used here.
std::pair<double, std::string> busiest_link(const run::RunData& d, const topo::Topology& t,
                                            double seconds) {
  std::pair<double, std::string> best{0, ""};
  if (seconds <= 0) return best;
  for (const auto& b : d.stats) {
    const auto at = b.name.find(".link");
    if (at == std::string::npos) continue;
    const std::size_t idx = std::strtoul(b.name.c_str() + at + 5, nullptr, 10);
    if (idx >= t.links().size()) continue;
    if (const model::Stat* st = model::find_stat(b, model::LinkDirectionStats::wire_bytes)) {
      const double u = st->value / (t.links()[idx].bandwidth.si * seconds);
      if (u > best.first) best = {u, b.name};
    }
  }
  return best;
}

// What limits a point: the part of the critical member's time that dominates, or a link that
// was busy most of the time.
std::string limit_of(const replay::CollectiveRecord::Breakdown& b, double link_util) {
  const double runtime = b.launch_s + b.descriptor_s + b.sync_s;
  const double total = runtime + b.wire_s + b.reduce_s;
  if (total <= 0) return "none";
  if (link_util >= 0.8) return "link";
  if (runtime >= 0.5 * total) return "runtime costs";
  if (b.reduce_s >= 0.3 * total) return "reductions";
  if (link_util < 0.1) return "latency (endpoints, hops, per-transfer costs)";
  return "transfers (DMA, contention)";
}

Json measure(const ConfigSource& source, const Setup& su, std::uint64_t bytes) {
  return run_isolated([&]() -> Json {
    const auto cfg = point_config(source, su);
    const int n = su.ranks;
    trace::Workload w;
    w.name = fmt::format("{} {}", su.op, bytes);
    w.ranks.resize(std::size_t(n));
    for (int r = 0; r < n; ++r) {
      w.groups["world"].push_back(r);
      trace::Op op;
      op.id = 0;
      op.kind = kind_of(su.op);
      op.group = "world";
      op.bytes = bytes;
      w.ranks[std::size_t(r)].rank = r;
      w.ranks[std::size_t(r)].ops = {op};
    }
    const auto out = run::run_workload(cfg, w, {}, resolve::Purpose::bench_collective);
    const double t = out.end.to_seconds();
    if (out.collectives.size() != 1) throw InternalError("bench collective: no collective ran");
    const auto& c = out.collectives[0];
    const auto& b = c.breakdown;
    const double algbw = t > 0 ? double(bytes) / t : 0;
    const auto [link_util, link] = busiest_link(out, rack_plan(cfg).topology, t);
    return {{"op", su.op},
            {"ranks", n},
            {"ranks_per_chip", su.per_chip},
            {"bytes", bytes},
            {"algorithm", std::string(replay::algorithm_name(c.algorithm))},
            {"rings", c.rings},
            {"time_ns", t * 1e9},
            {"algbw_bytes_per_s", algbw},
            {"busbw_bytes_per_s", algbw * bus_factor(kind_of(su.op), n)},
            {"breakdown_ns",
             {{"launch", b.launch_s * 1e9},
              {"descriptor", b.descriptor_s * 1e9},
              {"sync", b.sync_s * 1e9},
              {"wire", b.wire_s * 1e9},
              {"reduction", b.reduce_s * 1e9}}},
            {"fabric_bytes", out.network.bytes_injected},
            {"busiest_link", link},
            {"busiest_link_utilisation", link_util},
            {"limit", limit_of(b, link_util)},
            {"wall_time_s", out.wall_seconds}};
  });
}

// The topology's bound on bus bandwidth per rank. Ring family and mesh reductions: a chip's
// links carry at most one ring stream per ring step whatever the ranks on it do among
// themselves, so busbw <= the chip's injection bandwidth. All-to-all: each of the K ranks of a
// chip sends (n-K)/n of its data off the chip, so busbw = S/t (n-1)/n <= inj (n-1)/(K (n-K));
// and the bisection carries (n/2)(n/2) messages of S/n each way.
Json bound_of(const topo::Topology& topology, const Setup& su) {
  const auto sum = topo::summarize(topology);
  const double inj = sum.injection_min.si;
  const double n = su.ranks, k = su.per_chip;
  if (kind_of(su.op) != trace::OpKind::all_to_all) {
    return {{"busbw_bytes_per_s", inj}, {"by", "injection (a chip's links, per direction)"}};
  }
  double bound = n > k ? inj * (n - 1) / (k * (n - k)) : inj;
  std::string by = "injection (a chip's links, per direction, shared by its ranks' off-chip data)";
  const double half = std::floor(n / 2), other = n - half;
  const double bis = sum.bisection.si * (n - 1) / (half * other);
  if (bis < bound) {
    bound = bis;
    by = "bisection";
  }
  return {{"busbw_bytes_per_s", bound}, {"by", by}};
}

// The sizes to measure: the sweep's, or --bytes.
std::vector<std::uint64_t> sizes_of(const CollectiveArgs& a) {
  std::vector<std::uint64_t> sizes;
  if (a.sweep) {
    if (a.sweep_factor < 2) {
      throw InputError(fmt::format("--sweep-factor: expected at least 2, got {}", a.sweep_factor));
    }
    for (std::uint64_t b = 1024; b <= (1ULL << 30); b *= std::uint64_t(a.sweep_factor)) {
      sizes.push_back(b);
    }
    return sizes;
  }
  Bytes b{};
  try {
    b = parse_bytes(a.bytes);
  } catch (const UnitError& e) {
    throw InputError(fmt::format("--bytes: {}", e.what()));
  }
  if (b.si < 1) throw InputError("--bytes: expected at least 1 byte");
  sizes.push_back(whole_bytes(b));
  return sizes;
}

}  // namespace

Json collective(const ConfigSource& config, const CollectiveArgs& a) {
  kind_of(a.op);
  const auto cfg = load_rack(config);
  const int cores = cfg.config.chip ? cfg.config.chip->cores : 1;
  if (a.ranks_per_chip < 1 || a.ranks_per_chip > cores) {
    throw InputError(fmt::format("--ranks-per-chip: expected 1 to {} (the cores of a chip), got {}",
                                 cores, a.ranks_per_chip));
  }
  // Every chip of the rack by default: count them from the plan, without elaborating.
  const resolve::RackPlan rack = rack_plan(cfg);
  const int chips = int(rack.topology.chip_count());
  const int slots = chips * a.ranks_per_chip;
  const int ranks = a.ranks ? *a.ranks : slots;  // an explicit --ranks 0 is refused below
  if (ranks < 2 || ranks > slots) {
    throw InputError(fmt::format("--ranks: expected 2 to {} ({} chips x {} ranks per chip), got {}",
                                 slots, chips, a.ranks_per_chip, ranks));
  }
  const Setup su{a.op, ranks, a.ranks_per_chip};
  const Json bound = bound_of(rack.topology, su);
  Json points = Json::array();
  for (auto s : sizes_of(a)) {
    Json p = measure(config, su, s);
    p["bound_busbw_bytes_per_s"] = bound["busbw_bytes_per_s"];
    points.push_back(std::move(p));
  }
  return {{"rack", cfg.config.rack->name},
          {"ranks", ranks},
          {"ranks_per_chip", a.ranks_per_chip},
          {"bound", bound},
          {"points", points}};
}

}  // namespace trnsim::bench
