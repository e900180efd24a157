// SPDX-License-Identifier: MIT
// Timed wake-ups of many clients (the DMA engines of a chip) dispatched in a fixed order.
//
// Why: the SystemC kernel runs processes that wake at the same simulated time in an order the
// standard leaves open; the reference kernel takes them from a heap keyed by time only, so the
// order of equal-time wake-ups depends on every other timed event in the simulation. DMA engines
// book shared resources (HBM banks, die links) first come first served in call order, so a
// chip's timing changed with the mere presence of another chip in the process (two Trn3 chips
// running the same 512^3 GEMM: 3.580 us and 3.608 us, one chip alone: 3.602 us).
// A calendar has one kernel event; the clients due at the same time run in the order they were
// added (their id), whatever else is scheduled at that time. It is also the DMA engines' event
// granularity: engines of a chip due at the same time (the shares of one DMA instruction, or of
// several cores) cost one kernel activation, and the kernel's timed queue holds one entry per
// chip instead of one per engine.
#pragma once

#include <systemc>

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

#include "common/activity.hpp"

namespace trnsim::model {

// What a calendar wakes: one virtual call on the client itself (a std::function and a lookup
// table were two more cache misses per wake-up in a rack run).
class WakeClient {
 public:
  virtual void wake() = 0;

 protected:
  ~WakeClient() = default;
};

class WakeCalendar : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(WakeCalendar);
  explicit WakeCalendar(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_METHOD(fire);
    sensitive << ev_;
    dont_initialize();
  }

  // Registers a client (during elaboration); clients due at the same time run in id order.
  int add(WakeClient& client) {
    clients_.push_back(&client);
    pending_.push_back(kNone);
    return int(clients_.size()) - 1;
  }

  // Wakes client `id` at `t` (>= now), or keeps its pending wake-up if that is earlier. A wake-up
  // at now() runs in a later delta cycle (as an sc_event notified with SC_ZERO_TIME).
  void at(int id, const sc_core::sc_time& t) {
    const std::uint64_t v = t.value();
    auto& p = pending_[std::size_t(id)];
    if (p <= v) return;
    p = v;
    heap_.emplace(v, id);
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    ev_.notify(t > now ? t - now : sc_core::SC_ZERO_TIME);  // the kernel keeps the earliest
  }

 private:
  ActivityCounter activity_;
  static constexpr std::uint64_t kNone = ~std::uint64_t(0);

  void fire() {
    activity_.count(Activity::dma);
    const std::uint64_t now = sc_core::sc_time_stamp().value();
    due_.clear();
    while (!heap_.empty() && heap_.top().first <= now) {
      const auto [v, id] = heap_.top();
      heap_.pop();
      if (pending_[std::size_t(id)] != v) continue;  // superseded by an earlier wake-up
      pending_[std::size_t(id)] = kNone;
      due_.push_back(id);  // the heap yields equal times in id order
      // The client is a cache miss (one of thousands of DMA engines in a rack): fetch it while
      // the heap is read, so that the misses of the due clients overlap.
      __builtin_prefetch(clients_[std::size_t(id)]);
    }
    for (const int id : due_) clients_[std::size_t(id)]->wake();
    if (!heap_.empty()) {
      const std::uint64_t next = heap_.top().first;
      ev_.notify(next > now ? sc_core::sc_time::from_value(next - now) : sc_core::SC_ZERO_TIME);
    }
  }

  using Entry = std::pair<std::uint64_t, int>;
  std::vector<WakeClient*> clients_;
  std::vector<std::uint64_t> pending_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  std::vector<int> due_;
  sc_core::sc_event ev_;
};

}  // namespace trnsim::model
