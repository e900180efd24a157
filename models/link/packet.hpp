// SPDX-License-Identifier: MIT
// What the fabric moves: packets made of whole flits, and the timed-event queue that links and
// routers use to wake only when something is due (one event per packet per hop, plus credit
// returns; never one per flit or cycle).
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "common/activity.hpp"
#include "common/block.hpp"
#include "common/fifo.hpp"
#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::model {

struct TransferState;  // defined by the fabric (models/fabric/fabric.hpp)

struct Packet {
  std::uint64_t id = 0;  // creation order, unique in a fabric
  TransferState* transfer = nullptr;
  std::uint64_t offset = 0;   // first payload byte within the transfer
  std::uint64_t payload = 0;  // payload bytes (0 for a bare completion message)
  std::uint32_t flits = 0;    // on the wire: ceil((payload + header) / flit)
  std::uint64_t route_key = 0;  // the flow id, or a per-packet hash when spraying
  topo::ChipId dst{};
  topo::NodeId dst_node{};
  int vc = -1;  // virtual channel of the last link crossed (= links crossed - 1); -1 at source
  sc_core::sc_time ready;       // eligible for the crossbar at the current node
  sc_core::sc_time tail_ready;  // its last flit is at the current node
  // Its receive buffer at the current node is already free: a chip stored it in its memory to
  // relay it (config::ChipRelay::memory).
  bool stored = false;
  // Latency breakdown, summed over hops (serialisation is what remains of the total).
  sc_core::sc_time t_link, t_switch, t_forward, t_queue;
};

// Packets are recycled: a 144-chip all-to-all creates hundreds of thousands.
class PacketPool {
 public:
  Packet* get() {
    if (free_.empty()) {
      store_.push_back(std::make_unique<Packet>());
      return store_.back().get();
    }
    Packet* p = free_.back();
    free_.pop_back();
    *p = Packet{};
    return p;
  }
  void put(Packet* p) { free_.push_back(p); }
  std::size_t live() const { return store_.size() - free_.size(); }

 private:
  std::vector<std::unique_ptr<Packet>> store_;
  std::vector<Packet*> free_;
};

// Items due at given times, served in time order by one SystemC method process of the owning
// module. The process is notified only for the earliest pending item. Items due at the same time
// are served in insertion order, or, after set_order_salt(s) with s != 0, in an order that the
// salt permutes (the order of simultaneous events is an arbitrary choice of the model, which a
// run's seed perturbs; splitmix64 is a bijection, so the order is total and reproducible).
template <class Item>
class TimedQueue {
 public:
  void set_order_salt(std::uint64_t salt) { salt_ = salt; }
  // Spawns the serving process; call from the owner's constructor (elaboration).
  void bind(const std::string& name, std::function<void(Item&)> handler) {
    handler_ = std::move(handler);
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.set_sensitivity(&event_);
    o.dont_initialize();
    sc_core::sc_spawn([this] { serve(); }, name.c_str(), &o);
  }
  // `in_order`: served, among the items due at `t`, in insertion order with the other such
  // items, whatever the salt. (Their keys are the insertion counts, the salted items' 64-bit
  // hashes of them, so with a salt they almost surely come before the salted items due then.)
  void push(const sc_core::sc_time& t, Item item, bool in_order = false) {
    if (t < now()) throw InternalError("TimedQueue: an item scheduled in the past");
    const bool earliest = heap_.empty() || t < heap_.top().t;
    const std::uint64_t seq = seq_++;
    heap_.push(Entry{t, salt_ == 0 || in_order ? seq : splitmix64_finalise(seq ^ salt_),
                     std::move(item)});
    if (earliest) event_.notify(t - now());
  }
  bool empty() const { return heap_.empty(); }
  std::uint64_t served() const { return served_; }

 private:
  ActivityCounter activity_;
  struct Entry {
    sc_core::sc_time t;
    std::uint64_t seq;
    Item item;
    bool operator>(const Entry& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void serve() {
    activity_.count(Activity::link);
    while (!heap_.empty() && heap_.top().t <= now()) {
      Item item = heap_.top().item;
      heap_.pop();
      ++served_;
      handler_(item);
    }
    if (!heap_.empty()) event_.notify(heap_.top().t - now());
  }
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  std::uint64_t seq_ = 0, served_ = 0, salt_ = 0;
  sc_core::sc_event event_;
  std::function<void(Item&)> handler_;
};

// Router queues: inputs x VCs x outputs of them, hence the allocation-free FIFO.
using PacketFifo = Fifo<Packet*>;

}  // namespace trnsim::model
