// SPDX-License-Identifier: MIT
// `trnsim bench kernel`: the activation rate of a bare SystemC event loop on this machine, the
// yardstick for the models' own rate (`trnsim run` prints process activations per second).
//
// P method processes each re-trigger themselves after a delay of their own (1 + i mod 997 ns),
// so the kernel keeps P timed notifications pending, as a rack's DMA engines, compute engines
// and link queues do, and nearly every activation is at a distinct time. Each activation does
// nothing but count itself and name its next trigger: the rate is the kernel's ceiling.
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <systemc>
#include <vector>

#include "bench_common.hpp"
#include "trnsim/error.hpp"

namespace trnsim::cli {

namespace {

struct KernelOpts {
  int processes = 20000;
  std::uint64_t activations = 20'000'000;
  bool json = false;
};

struct Ticker : sc_core::sc_module {
  SC_HAS_PROCESS(Ticker);
  Ticker(const sc_core::sc_module_name& name, sc_core::sc_time period, std::uint64_t& count,
         std::uint64_t limit)
      : sc_core::sc_module(name), period_(period), count_(count), limit_(limit) {
    SC_METHOD(tick);  // static sensitivity: none, so it runs once at start, then as re-triggered
  }
  // Past the limit a process stops re-triggering, so sc_start() returns when all have stopped.
  void tick() {
    if (++count_ < limit_) next_trigger(period_);
  }
  sc_core::sc_time period_;
  std::uint64_t& count_;
  std::uint64_t limit_;
};

nlohmann::json measure(const KernelOpts& o) {
  return run_isolated([&]() -> nlohmann::json {
    std::uint64_t count = 0;
    std::vector<std::unique_ptr<Ticker>> tickers;
    tickers.reserve(std::size_t(o.processes));
    for (int i = 0; i < o.processes; ++i) {
      tickers.push_back(std::make_unique<Ticker>(
          fmt::format("t{}", i).c_str(), sc_core::sc_time(1 + i % 997, sc_core::SC_NS), count,
          o.activations));
    }
    const auto t0 = std::chrono::steady_clock::now();
    sc_core::sc_start();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return {{"processes", o.processes},
            {"activations", count},
            {"wall_time_s", wall},
            {"activations_per_s", wall > 0 ? double(count) / wall : 0.0},
            {"simulated_ns", sc_core::sc_time_stamp().to_seconds() * 1e9}};
  });
}

}  // namespace

void register_bench_kernel(CLI::App& bench, Registry& reg) {
  auto o = std::make_shared<KernelOpts>();
  auto* sub = bench.add_subcommand(
      "kernel", "activations per second of a bare SystemC event loop (the models' ceiling)");
  sub->add_option("--processes", o->processes, "method processes, each with its own period")
      ->check(CLI::Range(1, 1'000'000));
  sub->add_option("--activations", o->activations, "activations to run")
      ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1'000'000'000'000)));
  sub->add_flag("--json", o->json, "print one JSON object");
  reg.add(sub, [o]() {
    const auto r = measure(*o);
    if (o->json) {
      fmt::print("{}\n", r.dump(2));
      return 0;
    }
    fmt::print("bare SystemC event loop: {} method processes, {} activations in {:.2f} s\n",
               r["processes"].get<int>(), r["activations"].get<std::uint64_t>(),
               r["wall_time_s"].get<double>());
    fmt::print("  {:.3g} activations per second\n", r["activations_per_s"].get<double>());
    return 0;
  });
}

}  // namespace trnsim::cli
