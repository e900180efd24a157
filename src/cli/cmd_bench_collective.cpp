// SPDX-License-Identifier: MIT
// `trnsim bench collective`: the options and the table; the benchmark is in
// src/bench/collective.cpp.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "trnsim/bench/collective.hpp"

namespace trnsim::cli {

namespace {

struct CollOpts {
  BenchOptions common;
  bench::CollectiveArgs args;
  int ranks = 0;  // --ranks as given (args.ranks is set only when it was)
};

void print_table(const std::string& op, const nlohmann::json& r) {
  fmt::print("{} on {} ranks of {}\n", op, r["ranks"].get<int>(), r["rack"].get<std::string>());
  fmt::print("{:>12} {:>14} {:>12} {:>14} {:>14}\n", "bytes", "algorithm", "time_us",
             "algbw_GB/s", "busbw_GB/s");
  for (const auto& p : r["points"]) {
    fmt::print("{:>12} {:>14} {:>12.2f} {:>14.2f} {:>14.2f}\n", p["bytes"].get<std::uint64_t>(),
               p["algorithm"].get<std::string>(), p["time_ns"].get<double>() / 1e3,
               p["algbw_bytes_per_s"].get<double>() / 1e9,
               p["busbw_bytes_per_s"].get<double>() / 1e9);
  }
}

}  // namespace

void register_bench_collective(CLI::App& bench, Registry& reg) {
  auto o = std::make_shared<CollOpts>();
  auto& a = o->args;
  auto* sub = bench.add_subcommand(
      "collective", "one collective on R ranks of a rack: time, algorithm and bus bandwidth");
  add_bench_options(sub, o->common);
  sub->add_option("--op", a.op, "all-reduce, all-gather, reduce-scatter or all-to-all");
  sub->add_option("--bytes", a.bytes, "size per rank (as in nccl-tests), e.g. 1MiB");
  auto* ranks_opt =
      sub->add_option("--ranks", o->ranks, "ranks (chips 0..R-1; default every chip of the rack)");
  sub->add_flag("--sweep", a.sweep, "sizes from 1 KiB to 1 GiB in steps of 4x");
  reg.add(sub, [o, ranks_opt]() {
    if (ranks_opt->count() > 0) o->args.ranks = o->ranks;
    const auto r = bench::collective(o->common.source, o->args);
    if (o->common.json) {
      fmt::print("{}\n", (o->args.sweep ? r["points"] : r["points"][0]).dump(2));
    } else {
      print_table(o->args.op, r);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
