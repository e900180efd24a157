// SPDX-License-Identifier: MIT
// A NeuronCore semaphore as engines use it: a counter that other engines increment and an
// instruction waits on until it reaches a target.
//
// Engines with private resources (Tensor, Vector, Scalar, GpSimd, the DMA trigger queues) run
// ahead of simulated time: an engine knows when its current instruction will finish and signals
// its semaphores *at that future time* instead of waiting for it. A semaphore therefore keeps the
// times of all its increments, and "when does the count reach k" is the k-th smallest of them.
// Waiters re-check whenever a new increment is recorded. Shared resources (DMA engines, HBM,
// die crossing) are only touched at the current simulated time.
#pragma once

#include <systemc>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace trnsim::model {

class Semaphore {
 public:
  // Records one increment that takes effect at `t` (>= now()).
  void signal_at(const sc_core::sc_time& t) {
    // Increments arrive almost always in time order; keep the vector sorted. In order, the
    // increment goes at the end, where upper_bound would put it, without its binary search (a
    // cache miss per halving on a long-lived semaphore: a tenth of the engines' and the DMA
    // engines' time in a rack run).
    if (times_.empty() || !(t < times_.back())) {
      times_.push_back(t);
    } else {
      times_.insert(std::upper_bound(times_.begin(), times_.end(), t), t);
    }
    changed_.notify(sc_core::SC_ZERO_TIME);
  }
  // The time the count reaches `target`, if enough increments are known; zero for target 0.
  std::optional<sc_core::sc_time> reaches(std::uint64_t target) const {
    if (target == 0) return sc_core::SC_ZERO_TIME;
    if (times_.size() < target) return std::nullopt;
    return times_[target - 1];
  }
  std::uint64_t known() const { return times_.size(); }
  // The program that owns the semaphore counts the increments its instructions will record
  // (plan_signal), then reserves room for them at once (reserve_planned): the vector is then
  // allocated once instead of growing through every power of two during the run.
  void plan_signal() { ++planned_; }
  void reserve_planned() { times_.reserve(planned_); }
  const sc_core::sc_event& changed() const { return changed_; }

 private:
  std::vector<sc_core::sc_time> times_;
  std::size_t planned_ = 0;
  sc_core::sc_event changed_;
};

struct SemWait {
  Semaphore* sem = nullptr;
  std::uint64_t target = 0;
};

}  // namespace trnsim::model
