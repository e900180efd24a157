// SPDX-License-Identifier: MIT
// `trnsim bench collective`: one collective on R ranks of a rack, run through the whole replay
// path (chips, fabric, collective algorithms): time, algorithm bandwidth and bus bandwidth.
#include <fmt/format.h>

#include <memory>

#include "bench_common.hpp"
#include "trnsim/error.hpp"
#include "trnsim/run/run.hpp"

namespace trnsim::cli {

namespace {

struct CollOpts {
  BenchOptions common;
  std::string op = "all-reduce";
  std::string bytes = "1MiB";
  int ranks = 0;
  bool sweep = false;
};

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

nlohmann::json measure(const CollOpts& o, std::uint64_t bytes) {
  return run_isolated([&]() -> nlohmann::json {
    const auto cfg = o.common.load();
    if (!cfg.config.rack) {
      throw ConfigError(fmt::format("{}:/rack: missing: bench collective needs a rack preset",
                                    cfg.path));
    }
    trace::Workload w;
    w.name = fmt::format("{} {}", o.op, bytes);
    const int n = o.ranks;
    w.ranks.resize(std::size_t(n));
    for (int r = 0; r < n; ++r) {
      w.groups["world"].push_back(r);
      trace::Op op;
      op.id = 0;
      op.kind = kind_of(o.op);
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
    return {{"op", o.op},          {"ranks", n},
            {"bytes", bytes},      {"algorithm", alg},
            {"time_ns", t * 1e9},  {"algbw_bytes_per_s", algbw},
            {"busbw_bytes_per_s", algbw * bus_factor(kind_of(o.op), n)},
            {"wall_time_s", out.wall_seconds}};
  });
}

}  // namespace

void register_bench_collective(CLI::App& bench, Registry& reg) {
  auto o = std::make_shared<CollOpts>();
  auto* sub = bench.add_subcommand(
      "collective", "one collective on R ranks of a rack: time, algorithm and bus bandwidth");
  add_bench_options(sub, o->common);
  sub->add_option("--op", o->op, "all-reduce, all-gather, reduce-scatter or all-to-all");
  sub->add_option("--bytes", o->bytes, "size per rank (as in nccl-tests), e.g. 1MiB");
  auto* ranks_opt = sub->add_option("--ranks", o->ranks, "ranks (chips 0..R-1; default every chip of the rack)");
  sub->add_flag("--sweep", o->sweep, "sizes from 1 KiB to 1 GiB in steps of 4x");
  reg.add(sub, [o, ranks_opt]() {
    kind_of(o->op);
    const auto cfg = o->common.load();
    if (!cfg.config.rack) {
      throw ConfigError(
          fmt::format("{}:/rack: missing: bench collective needs a rack preset", cfg.path));
    }
    if (ranks_opt->count() == 0) {  // an explicit --ranks 0 is refused below, not defaulted
      // Every chip of the rack: count them from a topology summary without elaborating.
      o->ranks = int(run::rack_chip_count(cfg));
    }
    if (o->ranks < 2 || o->ranks > int(run::rack_chip_count(cfg))) {
      throw InputError(fmt::format("--ranks: expected 2 to {} (the chips of the rack), got {}",
                                   run::rack_chip_count(cfg), o->ranks));
    }
    std::vector<std::uint64_t> sizes;
    if (o->sweep) {
      for (std::uint64_t b = 1024; b <= (1ULL << 30); b *= 4) sizes.push_back(b);
    } else {
      Bytes b{};
      try {
        b = parse_bytes(o->bytes);
      } catch (const UnitError& e) {
        throw InputError(fmt::format("--bytes: {}", e.what()));
      }
      if (b.si < 1) throw InputError("--bytes: expected at least 1 byte");
      sizes.push_back(whole_bytes(b));
    }
    nlohmann::json rows = nlohmann::json::array();
    for (auto s : sizes) rows.push_back(measure(*o, s));
    if (o->common.json) {
      fmt::print("{}\n", (o->sweep ? rows : rows[0]).dump(2));
      return 0;
    }
    fmt::print("{} on {} ranks of {}\n", o->op, o->ranks, cfg.config.rack->name);
    fmt::print("{:>12} {:>14} {:>12} {:>14} {:>14}\n", "bytes", "algorithm", "time_us",
               "algbw_GB/s", "busbw_GB/s");
    for (const auto& r : rows) {
      fmt::print("{:>12} {:>14} {:>12.2f} {:>14.2f} {:>14.2f}\n", r["bytes"].get<std::uint64_t>(),
                 r["algorithm"].get<std::string>(), r["time_ns"].get<double>() / 1e3,
                 r["algbw_bytes_per_s"].get<double>() / 1e9,
                 r["busbw_bytes_per_s"].get<double>() / 1e9);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
