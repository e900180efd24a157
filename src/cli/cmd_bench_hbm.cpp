// SPDX-License-Identifier: MIT
// `trnsim bench hbm`: the options and the table; the benchmark is in src/bench/hbm.cpp.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "bench_common.hpp"
#include "trnsim/bench/hbm.hpp"
#include "trnsim/units.hpp"

namespace trnsim::cli {

namespace {

void print_table(const nlohmann::json& j) {
  fmt::print("HBM benchmark: {} on {}\n", j["pattern"].get<std::string>(),
             j["chip"].get<std::string>());
  fmt::print("  bytes                {} ({} moved over the DRAM bus)\n",
             format(Bytes(j["bytes"].get<double>())), format(Bytes(j["bytes_moved"].get<double>())));
  fmt::print("  requesters x chunk   {} x {} ({} requests)\n", j["requesters"].get<int>(),
             format(Bytes(j["chunk_bytes"].get<double>())), j["requests"].get<std::uint64_t>());
  fmt::print("  simulated time       {:.3f} us\n", j["time_ns"].get<double>() * 1e-3);
  fmt::print("  achieved bandwidth   {:.1f} GB/s\n", j["achieved_bytes_per_s"].get<double>() * 1e-9);
  fmt::print("  peak bandwidth       {:.1f} GB/s (tCK {:.4f} ns, {:.3f} Gb/s per pin)\n",
             j["peak_bytes_per_s"].get<double>() * 1e-9, j["tck_ns"].get<double>(),
             j["pin_rate_gbps"].get<double>());
  fmt::print("  efficiency           {:.1f} %\n", j["efficiency"].get<double>() * 100);
  fmt::print("  row hit rate         {:.1f} % ({:.0f} activates, {:.0f} refreshes, {})\n",
             j["row_hit_rate"].get<double>() * 100, j["activates"].get<double>(),
             j["refreshes"].get<double>(), j["refresh_mode"].get<std::string>());
  fmt::print("  energy               {:.3f} mJ ({:.3f} dynamic + {:.3f} background)\n",
             j["energy_j"].get<double>() * 1e3, j["dynamic_energy_j"].get<double>() * 1e3,
             j["static_energy_j"].get<double>() * 1e3);
  fmt::print("  energy per bit       {:.3f} pJ/bit\n", j["pj_per_bit"].get<double>());
}

}  // namespace

void register_bench_hbm(CLI::App& bench, Registry& reg) {
  auto* sub = bench.add_subcommand(
      "hbm", "HBM bandwidth, row-buffer hit rate and energy of one chip under many requesters");
  auto opts = std::make_shared<BenchOptions>();
  auto args = std::make_shared<bench::HbmArgs>();
  add_bench_options(sub, *opts);
  sub->add_option("--pattern", args->pattern, "seq-read, seq-write, copy, random-read or streams")
      ->capture_default_str();
  sub->add_option("--bytes", args->bytes, "bytes to read/write/copy (\"256MiB\" or a number)")
      ->capture_default_str();
  sub->add_option("--requesters", args->requesters, "concurrent requester threads")
      ->capture_default_str();
  sub->add_option("--chunk", args->chunk, "bytes per request (random-read: per gather)")
      ->capture_default_str();
  struct StreamsOptions {
    CLI::Option *stride, *group, *group_stride, *depth, *second_base;
  };
  const StreamsOptions so{
      sub->add_option("--stride", args->stride,
                      "streams: bytes between the streams of a group (default: N / R)"),
      sub->add_option("--group", args->group, "streams: streams per group (default: R)"),
      sub->add_option("--group-stride", args->group_stride,
                      "streams: bytes between groups (default: group x stride)"),
      sub->add_option("--depth", args->depth, "streams: requests in flight per stream")
          ->capture_default_str(),
      sub->add_option("--second-base", args->second_base,
                      "streams: start of a second region every stream also reads, alternating "
                      "chunks with its own")};
  reg.add(sub, Footprint::builds_models, [opts, args, so]() -> int {
    args->given = {so.stride->count() > 0, so.group->count() > 0, so.group_stride->count() > 0,
                   so.depth->count() > 0, so.second_base->count() > 0};
    const auto j = bench::hbm(opts->source, *args);
    if (opts->json) {
      fmt::print("{}\n", j.dump(2));
    } else {
      print_table(j);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
