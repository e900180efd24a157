// SPDX-License-Identifier: MIT
// `trnsim bench collective`: one collective on R ranks of a rack, run through the whole replay
// path (chips, fabric, collective algorithms): time, algorithm bandwidth and bus bandwidth.
#include "trnsim/bench/collective.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/error.hpp"
#include "trnsim/run/run.hpp"

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
  // A benchmark measures the detailed models unless the config asks otherwise.
  if (!cfg.config.sim.fidelity) cfg.config.sim.fidelity = config::Fidelity::detailed;
  return cfg;
}

Json measure(const ConfigSource& source, const std::string& op_name, int n,
             std::uint64_t bytes) {
  return run_isolated([&]() -> Json {
    const auto cfg = load_rack(source);
    trace::Workload w;
    w.name = fmt::format("{} {}", op_name, bytes);
    w.ranks.resize(std::size_t(n));
    for (int r = 0; r < n; ++r) {
      w.groups["world"].push_back(r);
      trace::Op op;
      op.id = 0;
      op.kind = kind_of(op_name);
      op.group = "world";
      op.bytes = bytes;
      w.ranks[std::size_t(r)].rank = r;
      w.ranks[std::size_t(r)].ops = {op};
    }
    const auto out = run::run_workload(cfg, w);
    const double t = out.end.to_seconds();
    std::string alg;
    for (const auto& c : out.collectives) alg = std::string(replay::algorithm_name(c.algorithm));
    const double algbw = t > 0 ? double(bytes) / t : 0;
    return {{"op", op_name},       {"ranks", n},
            {"bytes", bytes},      {"algorithm", alg},
            {"time_ns", t * 1e9},  {"algbw_bytes_per_s", algbw},
            {"busbw_bytes_per_s", algbw * bus_factor(kind_of(op_name), n)},
            {"wall_time_s", out.wall_seconds}};
  });
}

// The sizes to measure: the sweep's, or --bytes.
std::vector<std::uint64_t> sizes_of(const CollectiveArgs& a) {
  std::vector<std::uint64_t> sizes;
  if (a.sweep) {
    for (std::uint64_t b = 1024; b <= (1ULL << 30); b *= 4) sizes.push_back(b);
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
  // Every chip of the rack by default: count them from a topology summary without elaborating.
  const int chips = int(run::rack_chip_count(cfg));
  const int ranks = a.ranks ? *a.ranks : chips;  // an explicit --ranks 0 is refused below
  if (ranks < 2 || ranks > chips) {
    throw InputError(fmt::format("--ranks: expected 2 to {} (the chips of the rack), got {}",
                                 chips, ranks));
  }
  Json points = Json::array();
  for (auto s : sizes_of(a)) points.push_back(measure(config, a.op, ranks, s));
  return {{"rack", cfg.config.rack->name}, {"ranks", ranks}, {"points", points}};
}

}  // namespace trnsim::bench
