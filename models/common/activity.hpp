// SPDX-License-Identifier: MIT
// Process activations: every run of a model's SC_METHOD and every resumption of its SC_THREAD
// after a wait. SystemC 2.3 keeps no such count, so the processes count themselves; `trnsim run`
// reports activations per second of wall time and `trnsim bench kernel` measures the same rate
// for a bare SystemC event loop (docs/bench.md).
//
// The counts belong to a Simulation object, not to a global: whoever runs a simulation creates
// one before elaboration, and it lives in the SystemC kernel's object registry (the one global a
// SystemC program has) under a fixed name. Each counting object looks it up once, when it is
// built; without a Simulation (module tests) nothing is counted.
#pragma once

#include <fmt/format.h>
#include <systemc>

#include <array>
#include <cstdint>
#include <utility>

#include "trnsim/error.hpp"

namespace trnsim::model {

// What ran: the DMA engines of a chip (one WakeCalendar activation), a compute engine, a link or
// switch queue, a thread (replay ops, core programs, transfers), or a chip's op slices (the
// method that issues the HBM slices of ops and wakes their threads, chip_model.hpp).
enum class Activity { dma, engine, link, thread, slices };
inline constexpr int kActivityKinds = 5;
inline constexpr const char* kActivityNames[kActivityKinds] = {"dma", "engine", "link", "thread",
                                                               "slices"};

// What one simulation owns beyond the kernel: today its activation counts. Create it before the
// models (a top-level sc_object, so it adds no prefix to their names).
class Simulation : public sc_core::sc_object {
 public:
  static constexpr const char* kName = "trnsim_simulation";
  Simulation() : sc_core::sc_object(kName) {}
  const char* kind() const override { return "trnsim::model::Simulation"; }

  void count(Activity k) { ++activations_[std::size_t(k)]; }
  const std::array<std::uint64_t, kActivityKinds>& activations() const { return activations_; }

  // The Simulation of this process's kernel, or null when none was created.
  static Simulation* find() {
    return dynamic_cast<Simulation*>(sc_core::sc_find_object(kName));
  }

 private:
  std::array<std::uint64_t, kActivityKinds> activations_{};
};

// A counting object's handle on the Simulation, looked up when the object is built.
class ActivityCounter {
 public:
  ActivityCounter() : sim_(Simulation::find()) {}
  void count(Activity k) {
    if (sim_) sim_->count(k);
  }

 private:
  Simulation* sim_;
};

// sc_core::wait(...) from a thread, counting the resumption.
template <class... A>
void wait_counted(ActivityCounter& counter, A&&... a) {
  sc_core::wait(std::forward<A>(a)...);
  counter.count(Activity::thread);
}

// The latest simulated time a run reaches: 2^63 ticks (106 days at the kernel's resolution of
// 1 ps). sc_time is 64 bits and the kernel does not check its sums, so a run that went on towards
// 2^64 would wrap and schedule its events in the past.
inline constexpr std::uint64_t kLastRunTick = std::uint64_t(1) << 63;

// sc_start() up to kLastRunTick, returning as soon as nothing is left to do (the time stays at the
// last event, as with sc_start()). A run that reaches the limit with events still pending after
// it (an op, a transfer or a memory access that would end later) is a WorkloadError; the kernel
// leaves its time at the last event before the limit. A run stopped by sc_stop() (an error
// inside a process, kept by whoever caught it) returns as it is, without SystemC's "stopped by
// user" line on stdout ahead of the error.
inline void run_bounded() {
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  const sc_core::sc_time limit = sc_core::sc_time::from_value(kLastRunTick);
  sc_core::sc_start(limit - sc_core::sc_time_stamp(), sc_core::SC_EXIT_ON_STARVATION);
  if (sc_core::sc_get_status() != sc_core::SC_PAUSED || !sc_core::sc_pending_activity()) return;
  throw WorkloadError(fmt::format(
      "the simulation has work pending past {:.3g} s of simulated time (2^63 ticks), the most a "
      "run simulates: its next event is at {:.3g} s (an op, transfer or memory access that ends "
      "later); expected a run that ends before: check the bandwidths and clocks against the "
      "trace's sizes",
      limit.to_seconds(),
      (sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity()).to_seconds()));
}

}  // namespace trnsim::model
