// SPDX-License-Identifier: MIT
// `trnsim bench ping` and `trnsim bench traffic`: the options and the tables; the benchmarks are
// in src/bench/fabric.cpp (docs/bench.md).
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "trnsim/bench/fabric.hpp"

namespace trnsim::cli {

namespace {

using nlohmann::json;

void print_ping(const json& j) {
  fmt::print("fabric ping: {} ({} chips), {} B messages, {} pairs one at a time\n",
             j["rack"].get<std::string>(), j["chips"].get<int>(), j["bytes"].get<std::uint64_t>(),
             j["pairs"].get<std::uint64_t>());
  const auto& l = j["latency_ns"];
  fmt::print("  latency            min {:.1f} ns, median {:.1f} ns, p99 {:.1f} ns, max {:.1f} ns\n",
             l["min"].get<double>(), l["median"].get<double>(), l["p99"].get<double>(),
             l["max"].get<double>());
  const auto& w = j["worst"];
  const auto& b = w["breakdown_ns"];
  fmt::print("  worst pair         chip{} -> chip{} ({} links)\n", w["src"].get<int>(),
             w["dst"].get<int>(), w["hops"].get<int>());
  for (const char* k : {"endpoint", "serialisation", "link", "switch", "chip_forwarding",
                        "queueing", "total"}) {
    fmt::print("    {:<16} {:9.1f} ns\n", k, b[k].get<double>());
  }
  const auto& r = j["run"];
  fmt::print("  run                {:.3f} s wall, {} events ({:.2f} M events/s)\n",
             r["wall_s"].get<double>(), r["events"].get<std::uint64_t>(),
             r["events_per_s"].get<double>() * 1e-6);
}

void print_run(const json& r) {
  fmt::print("  run                {:.0f} ns simulated, {:.3f} s wall, {} events "
             "({:.2f} M events/s), credit stalls {:.0f} ns\n",
             r["simulated_ns"].get<double>(), r["wall_s"].get<double>(),
             r["events"].get<std::uint64_t>(), r["events_per_s"].get<double>() * 1e-6,
             r["credit_stall_ns"].get<double>());
}

void print_traffic(const json& j) {
  const auto pattern = j["pattern"].get<std::string>();
  fmt::print("fabric traffic: {} on {} ({} chips)\n", pattern, j["rack"].get<std::string>(),
             j["chips"].get<int>());
  if (pattern == "uniform") {
    fmt::print("  offered / accepted {:.3f} / {:.3f} of injection bandwidth "
               "({} B messages, {:.0f} GB/s per chip accepted)\n",
               j["offered_load"].get<double>(), j["accepted_load"].get<double>(),
               j["message_bytes"].get<std::uint64_t>(),
               j["accepted_bytes_per_s_per_chip"].get<double>() * 1e-9);
    fmt::print("  topology bound     {:.3f} of injection bandwidth (injection, bisection)\n",
               j["bound_load"].get<double>());
    fmt::print("  latency            mean {:.1f} ns, p99 {:.1f} ns ({} messages)\n",
               j["latency_ns"]["mean"].get<double>(), j["latency_ns"]["p99"].get<double>(),
               j["messages_measured"].get<std::uint64_t>());
  } else if (pattern == "all-to-all") {
    fmt::print("  per pair           {} B, completion {:.3f} us\n",
               j["bytes_per_pair"].get<std::uint64_t>(), j["completion_ns"].get<double>() * 1e-3);
    fmt::print("  per chip           {:.1f} GB/s achieved; bound {:.1f} GB/s (injection {:.1f}, "
               "bisection {:.1f}); {:.1f} % of bound\n",
               j["achieved_bytes_per_s_per_chip"].get<double>() * 1e-9,
               j["bound_bytes_per_s"].get<double>() * 1e-9,
               j["injection_bound_bytes_per_s"].get<double>() * 1e-9,
               j["bisection_bound_bytes_per_s"].get<double>() * 1e-9,
               j["fraction_of_bound"].get<double>() * 100);
  } else {
    fmt::print("  per pair           {} B, {} pairs, completion {:.3f} us\n",
               j["bytes_per_pair"].get<std::uint64_t>(), j["pairs"].get<int>(),
               j["completion_ns"].get<double>() * 1e-3);
    fmt::print("  across the cut     {:.1f} GB/s achieved; bisection {:.1f} GB/s ({:.1f} %)\n",
               j["achieved_bytes_per_s"].get<double>() * 1e-9,
               j["bisection_bytes_per_s"].get<double>() * 1e-9,
               j["fraction_of_bisection"].get<double>() * 100);
  }
  print_run(j["run"]);
}

void print_sweep(const json& j) {
  fmt::print("fabric traffic: uniform load sweep on {} ({} chips, {} B messages)\n",
             j["rack"].get<std::string>(), j["chips"].get<int>(),
             j["message_bytes"].get<std::uint64_t>());
  fmt::print("  {:>8} {:>9} {:>12} {:>12} {:>9}\n", "offered", "accepted", "mean ns", "p99 ns",
             "wall s");
  for (const auto& p : j["points"]) {
    fmt::print("  {:8.2f} {:9.3f} {:12.1f} {:12.1f} {:9.2f}\n", p["offered_load"].get<double>(),
               p["accepted_load"].get<double>(), p["latency_ns"]["mean"].get<double>(),
               p["latency_ns"]["p99"].get<double>(), p["run"]["wall_s"].get<double>());
  }
  fmt::print("  saturation         accepted {:.3f} of injection bandwidth at most ({:.1f} % of the "
             "topology bound {:.3f}); accepted falls below 95 % of offered at load {}\n",
             j["saturation_throughput"].get<double>(),
             j["saturation_fraction_of_bound"].get<double>() * 100, j["bound_load"].get<double>(),
             j["saturation_load"].is_null() ? std::string("(not reached)")
                                            : fmt::format("{:.2f}", j["saturation_load"].get<double>()));
}

}  // namespace

void register_bench_fabric(CLI::App& bench, Registry& reg) {
  {
    auto* sub = bench.add_subcommand(
        "ping", "latency of a small message between every pair of chips on an idle fabric");
    auto opts = std::make_shared<BenchOptions>();
    auto args = std::make_shared<bench::PingArgs>();
    add_bench_options(sub, *opts);
    sub->add_option("--bytes", args->bytes, "message size (\"64\", \"4KiB\"); 0 is a bare completion")
        ->capture_default_str();
    reg.add(sub, Footprint::builds_models, [opts, args]() -> int {
      const auto j = bench::ping(opts->source, *args);
      if (opts->json) {
        fmt::print("{}\n", j.dump(2));
      } else {
        print_ping(j);
      }
      return 0;
    });
  }
  auto* sub = bench.add_subcommand(
      "traffic", "fabric throughput and latency: uniform random load, all-to-all, bisection");
  auto opts = std::make_shared<BenchOptions>();
  auto args = std::make_shared<bench::TrafficArgs>();
  add_bench_options(sub, *opts);
  sub->add_option("--pattern", args->pattern, "uniform, all-to-all or bisection")
      ->capture_default_str();
  auto* load_opt = sub->add_option("--load", args->load,
                                   "uniform: offered load, fraction of injection bandwidth in (0, 1]")
                       ->capture_default_str();
  auto* sweep_opt = sub->add_flag("--sweep", args->sweep, "uniform: loads 0.1, 0.2, ... 1.0");
  sub->add_option("--bytes", args->bytes,
                  "uniform: message size (default one packet); all-to-all, bisection: bytes per "
                  "pair, 1KiB to 256MiB (default 1MiB)");
  auto* window_opt = sub->add_option("--window", args->window, "uniform: measurement window")
                         ->capture_default_str();
  auto* warmup_opt = sub->add_option("--warmup", args->warmup, "uniform: warm-up before it")
                         ->capture_default_str();
  reg.add(sub, Footprint::builds_models,
          [opts, args, load_opt, sweep_opt, window_opt, warmup_opt]() -> int {
    args->given = {load_opt->count() > 0, sweep_opt->count() > 0, window_opt->count() > 0,
                   warmup_opt->count() > 0};
    const auto j = bench::traffic(opts->source, *args);
    if (opts->json) {
      fmt::print("{}\n", j.dump(2));
    } else if (args->sweep) {
      print_sweep(j);
    } else {
      print_traffic(j);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
