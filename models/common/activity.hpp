// SPDX-License-Identifier: MIT
// Process activations: every run of a model's SC_METHOD and every resumption of its SC_THREAD
// after a wait. SystemC 2.3 keeps no such count, so the processes count themselves; `trnsim run`
// reports activations per second of wall time and `trnsim bench kernel` measures the same rate
// for a bare SystemC event loop (docs/bench.md). One SystemC kernel per process, so one count.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <utility>

namespace trnsim::model {

// What ran: the DMA engines of a chip (one WakeCalendar activation), a compute engine, a link or
// switch queue, or a thread (replay ops, core programs, transfers).
enum class Activity { dma, engine, link, thread };
inline constexpr int kActivityKinds = 4;
inline constexpr const char* kActivityNames[kActivityKinds] = {"dma", "engine", "link", "thread"};

inline std::array<std::uint64_t, kActivityKinds>& activation_counts() {
  static std::array<std::uint64_t, kActivityKinds> n{};
  return n;
}
inline void count_activation(Activity k) { ++activation_counts()[std::size_t(k)]; }

// sc_core::wait(...) from a thread, counting the resumption.
template <class... A>
void wait_counted(A&&... a) {
  sc_core::wait(std::forward<A>(a)...);
  count_activation(Activity::thread);
}

}  // namespace trnsim::model
