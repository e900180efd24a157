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

#include <systemc>

#include <array>
#include <cstdint>
#include <utility>

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

}  // namespace trnsim::model
