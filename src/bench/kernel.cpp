// SPDX-License-Identifier: MIT
// `trnsim bench kernel`: the activation rate of a bare SystemC event loop on this machine, the
// yardstick for the models' own rate (`trnsim run` prints process activations per second).
//
// P method processes each re-trigger themselves after a delay of their own (1 + i mod 997 ns),
// so the kernel keeps P timed notifications pending, as a rack's DMA engines, compute engines
// and link queues do, and nearly every activation is at a distinct time. Each activation does
// nothing but count itself and name its next trigger: the rate is the kernel's ceiling.
//
// With `threads`, the processes are SC_THREADs that wait(period) in a loop, as the replay's op
// processes wait through an op's slices: the same notifications and times, plus one coroutine
// switch in and out per activation. The two rates side by side say what an activation costs
// for being a thread rather than a method.
#include "trnsim/bench/kernel.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <systemc>
#include <vector>

#include "internal.hpp"

namespace trnsim::bench {

namespace {

struct Ticker : sc_core::sc_module {
  SC_HAS_PROCESS(Ticker);
  Ticker(const sc_core::sc_module_name& name, sc_core::sc_time period, std::uint64_t& count,
         std::uint64_t limit, bool thread)
      : sc_core::sc_module(name), period_(period), count_(count), limit_(limit) {
    // Static sensitivity: none, so each runs once at start, then as re-triggered (woken).
    if (thread) {
      SC_THREAD(loop);
    } else {
      SC_METHOD(tick);
    }
  }
  // Past the limit a process stops re-triggering, so sc_start() returns when all have stopped.
  void tick() {
    if (++count_ < limit_) next_trigger(period_);
  }
  void loop() {
    while (++count_ < limit_) sc_core::wait(period_);
  }
  sc_core::sc_time period_;
  std::uint64_t& count_;
  std::uint64_t limit_;
};

Json measure(const KernelArgs& a) {
  std::uint64_t count = 0;
  std::vector<std::unique_ptr<Ticker>> tickers;
  tickers.reserve(std::size_t(a.processes));
  for (int i = 0; i < a.processes; ++i) {
    tickers.push_back(std::make_unique<Ticker>(fmt::format("t{}", i).c_str(),
                                               sc_core::sc_time(1 + i % 997, sc_core::SC_NS),
                                               count, a.activations, a.threads));
  }
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double wall = seconds_since(t0);
  return {{"processes", a.processes},
          {"process_kind", a.threads ? "thread" : "method"},
          {"activations", count},
          {"wall_time_s", wall},
          {"activations_per_s", wall > 0 ? double(count) / wall : 0.0},
          {"simulated_ns", sc_core::sc_time_stamp().to_seconds() * 1e9}};
}

}  // namespace

Json kernel(const KernelArgs& a) {
  return run_isolated([&] { return measure(a); });
}

}  // namespace trnsim::bench
