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
  fmt::print("{} on {} ranks of {} ({} per chip); bound {:.1f} GB/s busbw ({})\n", op,
             r["ranks"].get<int>(), r["rack"].get<std::string>(), r["ranks_per_chip"].get<int>(),
             r["bound"]["busbw_bytes_per_s"].get<double>() / 1e9,
             r["bound"]["by"].get<std::string>());
  fmt::print("{:>12} {:>12} {:>11} {:>11} {:>11} | {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "bytes",
             "algorithm", "time_us", "algbw_GB/s", "busbw_GB/s", "launch", "descr", "sync",
             "wire", "reduce", "limit");
  for (const auto& p : r["points"]) {
    const auto& b = p["breakdown_ns"];
    fmt::print("{:>12} {:>12} {:>11.2f} {:>11.2f} {:>11.2f} | {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} "
               "{:>9.2f}  {}\n",
               p["bytes"].get<std::uint64_t>(), p["algorithm"].get<std::string>(),
               p["time_ns"].get<double>() / 1e3, p["algbw_bytes_per_s"].get<double>() / 1e9,
               p["busbw_bytes_per_s"].get<double>() / 1e9, b["launch"].get<double>() / 1e3,
               b["descriptor"].get<double>() / 1e3, b["sync"].get<double>() / 1e3,
               b["wire"].get<double>() / 1e3, b["reduction"].get<double>() / 1e3,
               p["limit"].get<std::string>());
  }
  fmt::print("(breakdown of the member that finished last, in us)\n");
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
      sub->add_option("--ranks", o->ranks, "ranks 0..R-1 (default: every chip of the rack times --ranks-per-chip)");
  sub->add_option("--ranks-per-chip", a.ranks_per_chip,
                  "consecutive ranks per chip (ranks on one chip exchange through HBM)");
  sub->add_flag("--sweep", a.sweep, "sizes from 1 KiB to 1 GiB in steps of --sweep-factor");
  sub->add_option("--sweep-factor", a.sweep_factor, "ratio of consecutive sweep sizes (default 4)");
  reg.add(sub, Footprint::builds_models, [o, ranks_opt]() {
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
