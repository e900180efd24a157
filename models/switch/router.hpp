// SPDX-License-Identifier: MIT
// A forwarding node: a switch, or the router inside a chip that relays packets for others.
//
// Input buffering with virtual output queues: a packet arriving on input i with VC v and bound
// for output o waits in queue (o, i, v). With `queueing` input_fifo the input keeps the order of
// arrival per (i, v) as well, and only the oldest packet of (i, v) is eligible, whatever its
// output: head-of-line blocking. Its output comes from the route tables: one of the
// equal-cost next hops, by flow hash (default, keeps a flow in order) or per packet. Each output
// has a crossbar arbiter: round-robin over inputs (and over VCs within an input), or oldest
// first. A packet is eligible once its head has crossed the node (cut-through latency) and the
// next link's receiver has buffer for all of its flits on the packet's next VC; it leaves at
// once when the output is free. Its buffer here is freed when its tail has left.
//
// Virtual channels are hop-indexed: a packet uses VC k on the k-th link of its route (counting
// from 0), so buffer dependencies only go from VC k to VC k+1 and cannot form a cycle; the fabric
// provides as many VCs as the longest route has links.
//
// A chip adds a local input (injection) and local delivery through the virtual hooks below.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/block.hpp"
#include "link/link.hpp"
#include "trnsim/params/fabric.hpp"
#include "trnsim/hash.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::model {

struct RouterParams {
  topo::NodeId node{};
  Duration latency{};      // cut-through traversal / chip forwarding
  EnergyPerBit energy{};   // per bit passing through
  Power idle_power{};
  int vcs = 1;
  config::FabricArbiter arbiter = config::FabricArbiter::round_robin;
  config::FabricSpreading spreading = config::FabricSpreading::per_flow;
  config::FabricQueueing queueing = config::FabricQueueing::voq;
  config::FabricCutThrough cut_through = config::FabricCutThrough::share;
  bool local_port = false;  // a chip: has injection and delivery
  // A chip that relays through its memory (config::ChipRelay::memory): a packet for another
  // node frees its receive buffer once stored (relay_store()), not when its tail has left.
  bool relay_in_memory = false;
  // Perturbs the arbitrary choices of this node (0: none): where each output's round-robin
  // pointers start, which of two equally old packets oldest_first takes, and the order of
  // simultaneous timer events. From sim.seed (models/fabric/fabric.cpp).
  std::uint64_t salt = 0;
};

// The statistics of a switch (and of a chip's network interface), port{} per output port.
struct RouterStats {
  static constexpr StatKey packets_forwarded{"packets_forwarded", StatUnit::count,
                                             "packets that passed through"};
  static constexpr StatKey bytes_forwarded{"bytes_forwarded", StatUnit::bytes,
                                           "payload bytes that passed through"};
  static constexpr StatKey port_packets{"port{}_packets", StatUnit::count, "packets sent on port"};
  static constexpr StatKey port_bytes{"port{}_bytes", StatUnit::bytes,
                                      "payload bytes sent on port"};
  static constexpr StatKey port_wait_time{"port{}_wait_time", StatUnit::seconds,
    "summed time packets waited for this output (arbitration, busy output, credits)"};
  static constexpr StatKey port_max_queue{"port{}_max_queue", StatUnit::packets,
                                          "most packets queued for this output at once"};
  static constexpr std::array all{
      packets_forwarded, bytes_forwarded, port_packets, port_bytes, port_wait_time, port_max_queue};
};

class Router : public Block, public LinkEndpoint {
 public:
  // `routes` must outlive the router. Ports are attached afterwards, one per incident link in
  // the node's port order.
  Router(const sc_core::sc_module_name& name, const topo::RouteTable& routes,
         const RouterParams& p, int link_ports);

  // Port `port` sends on direction `out_dir` and receives on direction `in_dir` of `link`.
  void attach(int port, topo::LinkId id, Link* link, int out_dir, int in_dir);

  topo::NodeId node() const override { return p_.node; }
  sc_core::sc_time pass_latency() const override { return latency_; }
  void packet_arrived(int in, Packet* p) override;
  void credits_due(int out, const sc_core::sc_time& at) override;

  int link_ports() const { return int(outputs_.size()); }
  int output_of(topo::LinkId id) const;
  // Charges `packets` packets (`payload` bytes, `flits` flits) that were not simulated to the
  // output on link `l` and its link direction, and, when this node only passes them on
  // (`forwarded`), to its forwarding statistics and energy (fast-forward, Fabric::account).
  void charge(topo::LinkId l, std::uint64_t packets, double payload, std::uint64_t flits,
              bool forwarded);
  void finish(const sc_core::sc_time& end);
  // Timer events served so far (output wake-ups and the derived class's timers).
  std::uint64_t events() const { return timers_.served(); }

 protected:
  // ---- hooks of a chip's local port (the defaults are for a switch without one) -------------
  // Whether the local input has a packet for output `out`; if so its size in flits and the time
  // it became ready (for oldest-first).
  virtual bool local_pending(int /*out*/) { return false; }
  virtual std::uint32_t local_flits(int /*out*/) { return 0; }
  virtual sc_core::sc_time local_ready(int /*out*/) { return sc_core::SC_ZERO_TIME; }
  // Takes the local packet for output `out` (local_pending(out) was true).
  virtual Packet* local_take(int out);
  // Packet `p` ends at this node (arrived on input `in`, at its tail).
  virtual void deliver(int in, Packet* p);
  // relay_in_memory: stores packet `p`, relayed through this chip, in its memory; returns when
  // the write ends (its receive buffer is freed then) and sets `p->tail_ready` to when it can
  // be sent on. The default (no memory): both at its tail's arrival.
  virtual sc_core::sc_time relay_store(Packet* p) { return p->tail_ready; }
  // Timers of a derived class (kind >= kFirstUserTimer).
  virtual void on_timer(int kind, std::uint64_t arg);

  static constexpr int kFirstUserTimer = 1;
  // `in_order`: served in the order scheduled among the other such timers due at `t`, whatever
  // the salt (TimedQueue::push).
  void schedule(const sc_core::sc_time& t, int kind, std::uint64_t arg, bool in_order = false);
  // Tries to start a packet on output `out` now.
  void kick(int out);
  // Frees the buffer of a packet that arrived on input `in`, at time `at` (>= now()).
  void free_input(int in, int vc, std::uint32_t flits, const sc_core::sc_time& at);
  const RouterParams& params() const { return p_; }
  const topo::RouteTable& routes() const { return routes_; }
  int local_input() const { return int(outputs_.size()); }

 private:
  struct Output {
    Link* link = nullptr;
    int dir = 0;
    LinkDirection* ld = nullptr;
    sc_core::sc_time busy_until;
    sc_core::sc_time wake_at = sc_core::sc_max_time();  // the pending wake-up (max: none)
    bool stalled = false;
    sc_core::sc_time stall_start;
    std::vector<PacketFifo> q;        // index: input * vcs + vc
    std::uint32_t rr_in = 0;          // last input served
    std::vector<std::uint16_t> rr_vc;  // last VC served, per input
    std::size_t waiting = 0;          // packets in q
    // Packets in q per input: the arbiter skips empty inputs without looking at their VCs
    // (Router::pick was a twentieth of a rack run on the 64-port switches).
    std::vector<std::uint32_t> in_waiting;
    // Bit i set: in_waiting[i] > 0, or i is the local input (always looked at). The round-robin
    // arbiter visits the set bits only, in the same order as a scan of every input.
    std::vector<std::uint64_t> in_mask;
    Stat* s_packets = nullptr;
    Stat* s_bytes = nullptr;
    Stat* s_wait = nullptr;
    Stat* s_max_q = nullptr;
  };
  struct Input {
    Link* link = nullptr;
    int dir = 0;
  };
  // input_fifo: the outputs of the packets of one (input, VC), in order of arrival.
  struct OrderRing {
    std::vector<int> out;
    std::size_t head = 0;
    bool empty() const { return head == out.size(); }
    int front() const { return out[head]; }
    void push(int o) {
      if (head > 0 && head == out.size()) out.clear(), head = 0;
      out.push_back(o);
    }
    void pop() {
      if (++head == out.size()) out.clear(), head = 0;
    }
  };
  struct Timer {
    int kind;
    std::uint64_t arg;
  };
  static constexpr int kWake = 0;

  bool pick(Output& o, int& in, int& vc);
  // The first set bit of `mask` at or after `from` (< end); `end` when none.
  static int next_set(const std::vector<std::uint64_t>& mask, int from, int end);
  // The oldest_first tie-break key of a packet: its id, permuted by the salt.
  std::uint64_t tie_key(std::uint64_t id) const {
    return p_.salt == 0 ? id : splitmix64_finalise(id ^ p_.salt);
  }
  bool eligible(const Output& o, int in, int vc);
  void dispatch(int out, int in, int vc);
  // Wakes output `out` at `t`, unless it will already wake no later.
  void schedule_wake(int out, const sc_core::sc_time& t);
  // Output `out` has waiting work and no credits for it: wakes at the next credit return.
  void wait_for_credits(int out);

  const topo::RouteTable& routes_;
  RouterParams p_;
  sc_core::sc_time latency_;
  std::vector<Output> outputs_;
  std::vector<Input> inputs_;
  std::vector<OrderRing> order_;  // input_fifo only, index: input * vcs + vc
  std::vector<int> link_to_port_;  // by LinkId, -1 when not attached here
  std::vector<topo::LinkId> port_link_;
  int n_inputs_;
  TimedQueue<Timer> timers_;
  Stat& s_forwarded_;
  Stat& s_fwd_bytes_;
  ActionMeter* forward_meter_ = nullptr;  // chip_forwarding or switch, created on first use
};

}  // namespace trnsim::model
