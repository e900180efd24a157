// SPDX-License-Identifier: MIT
// A full-duplex point-to-point link with credit-based flow control.
//
// Per direction: bandwidth and end-to-end latency from the topology link, per-virtual-channel
// receive buffers counted in flits. The sender may start a packet only when the receiver's buffer
// of the packet's VC has room for all its flits (virtual cut-through); a full receiver stalls the
// sender, nothing is dropped. A packet's head reaches the far end one flit time plus the latency
// after it starts; its tail at the end of serialisation plus the latency. The receiver frees the
// buffer when the tail leaves it; the credit reaches the sender one link latency later.
//
// Events: one per packet (arrival at the far node). A credit return is no event: the sender's
// credits count every return that has reached it by now(), and a sender that is stalled waiting
// for credits is told when the next one will arrive (LinkEndpoint::credits_due), so it wakes then.
// Uncongested traffic, whose credits are back before they are needed, costs no event for them;
// this was a third of the packet fabric's events (docs/models/fabric.md).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/block.hpp"
#include "common/network.hpp"
#include "link/packet.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::model {

// A node as its links see it: routers and chip network interfaces.
class LinkEndpoint {
 public:
  virtual ~LinkEndpoint() = default;
  virtual topo::NodeId node() const = 0;
  // Head-to-decision latency of a packet passing through (switch traversal, chip forwarding).
  virtual sc_core::sc_time pass_latency() const = 0;
  // The node acts on packet `p` that arrived on input port `in`: at its head + pass_latency()
  // when passing through, at its tail when `p` ends here.
  virtual void packet_arrived(int in, Packet* p) = 0;
  // Credits of output port `out` will be back at `at` (>= now()): called when the receiver
  // frees them, so a sender stalled for credits can wake at `at`.
  virtual void credits_due(int out, const sc_core::sc_time& at) = 0;
};

struct LinkParams {
  Bandwidth bandwidth{};  // per direction
  Duration latency{};     // end to end: PHY, FEC, retimers, wire
  std::uint32_t flit_bytes = 256;
  int vcs = 1;
  // Receive buffer per VC in flits, per direction (index 0: towards end b, 1: towards end a).
  std::array<std::uint32_t, 2> buffer_flits{1, 1};
  EnergyPerBit energy{};       // full-rate energy per bit per direction
  double idle_fraction = 0.0;  // idle power as a fraction of full-rate power
  std::string a_name, b_name;  // for statistic descriptions
  // Permutes the order of this link's simultaneous events (0: insertion order); from sim.seed.
  std::uint64_t order_salt = 0;
};

// The statistics of one direction of a packet-level link.
struct LinkStats {
  static constexpr StatKey bytes = LinkDirectionStats::bytes;
  static constexpr StatKey wire_bytes = LinkDirectionStats::wire_bytes;
  static constexpr StatKey packets{"packets", StatUnit::count, "packets sent"};
  static constexpr StatKey busy = LinkDirectionStats::busy.described("time spent sending packets");
  static constexpr StatKey utilisation = LinkDirectionStats::utilisation;
  static constexpr StatKey credit_stall_time{"credit_stall_time", StatUnit::seconds,
    "time the sender was idle with a packet waiting for credits"};
  static constexpr StatKey max_buffer_occupancy{"max_buffer_occupancy", StatUnit::flits,
    "most receive-buffer flits of one VC reserved at once"};
  static constexpr StatKey buffer_per_vc{"buffer_per_vc", StatUnit::flits,
                                         "receive buffer per virtual channel"};
  static constexpr std::array all{
      bytes, wire_bytes, packets, busy, utilisation, credit_stall_time, max_buffer_occupancy,
      buffer_per_vc};
};

// One direction of a link: its statistics, energy and idle power.
class LinkDirection : public Block {
 public:
  LinkDirection(const sc_core::sc_module_name& name, const LinkParams& p, int dir);

  Bandwidth bandwidth() const { return bw_; }
  const sc_core::sc_time& latency() const { return latency_; }
  std::uint32_t capacity() const { return capacity_; }
  // Credits of VC `vc` at now(): every return that has reached the sender by now is counted.
  std::int64_t credits(int vc) const {
    collect_due();
    return credits_[std::size_t(vc)];
  }
  // The earliest credit return still on its way (after now()); none when all are back.
  std::optional<sc_core::sc_time> next_return() const {
    collect_due();
    if (returns_.empty()) return std::nullopt;
    return next_return_;
  }
  // Serialisation of `flits` whole flits.
  sc_core::sc_time serialisation(std::uint32_t flits) const;
  const sc_core::sc_time& flit_time() const { return flit_time_; }
  std::uint32_t flit_bytes() const { return flit_bytes_; }

  void add_stall(const sc_core::sc_time& t) { s_stall_ += t.to_seconds(); }
  // Charges `packets` packets carrying `payload` bytes in `flits` flits that were not simulated
  // (fast-forward, Network::account): bytes, packets, busy time (their serialisation) and
  // energy, as if sent back to back. No event, no credits.
  void charge(std::uint64_t packets, double payload, std::uint64_t flits);
  // Utilisation over [0, end].
  void finish(const sc_core::sc_time& end);
  // Busy time over the elapsed time finish() was given.
  std::optional<double> utilisation(Duration) const override { return s_util_.value; }
  double wire_bytes() const { return s_wire_.value; }
  double stall_ns() const { return s_stall_.value * 1e9; }
  double max_reserved() const { return s_max_buf_.value; }

 private:
  friend class Link;
  // Credits freed by the receiver that reach the sender at `at`.
  struct Return {
    sc_core::sc_time at;
    int vc;
    std::uint32_t flits;
  };
  // Adds the returns due by now() to the credits.
  void collect_returns() const;
  // collect_returns() when one is due (the hot path: a comparison when none is).
  void collect_due() const {
    if (!returns_.empty() && next_return_ <= sc_core::sc_time_stamp()) collect_returns();
  }
  Bandwidth bw_;
  sc_core::sc_time latency_, flit_time_;
  std::uint32_t flit_bytes_;
  std::uint32_t capacity_;
  mutable std::vector<std::int64_t> credits_;
  // Returns on their way, in no order (at most one per packet in the receive buffers), and the
  // earliest of them.
  mutable std::vector<Return> returns_;
  mutable sc_core::sc_time next_return_;
  EnergyPerBit dyn_energy_;
  ActionMeter* meter_ = nullptr;  // of Action::link, created on the first packet
  LinkEndpoint* up_ = nullptr;
  int up_out_ = 0;
  LinkEndpoint* down_ = nullptr;
  int down_in_ = 0;
  sc_core::sc_time busy_;
  Stat& s_bytes_;
  Stat& s_wire_;
  Stat& s_packets_;
  Stat& s_busy_;
  Stat& s_util_;
  Stat& s_stall_;
  Stat& s_max_buf_;
  Stat& s_buffer_;
};

class Link : public sc_core::sc_module {
 public:
  Link(const sc_core::sc_module_name& name, const LinkParams& p);

  // Direction 0 carries packets from end a to end b, direction 1 from b to a. `up` sends on
  // output port `up_out`, `down` receives on input port `down_in`.
  void connect(int dir, LinkEndpoint* up, int up_out, LinkEndpoint* down, int down_in);
  LinkDirection& direction(int dir) { return *dirs_[std::size_t(dir)]; }
  const LinkDirection& direction(int dir) const { return *dirs_[std::size_t(dir)]; }

  // The sender starts `p` at now() on VC `vc` and finishes serialising it at `end` (>= now()
  // plus its serialisation). Takes the packet's credits: InternalError when they are missing.
  // The direction is counted busy until `busy_end` (between now() plus the serialisation and
  // `end`): earlier than `end` when the packet, cut through from a slower link, takes only its
  // own serialisation of this one (rack.fabric.cut_through share).
  void send(int dir, Packet* p, int vc, const sc_core::sc_time& end,
            const sc_core::sc_time& busy_end);
  void send(int dir, Packet* p, int vc, const sc_core::sc_time& end) { send(dir, p, vc, end, end); }
  // The receiver frees `flits` of VC `vc` at `at` (>= now()); the sender sees them one latency
  // later.
  void free_buffer(int dir, int vc, std::uint32_t flits, const sc_core::sc_time& at);
  // Events served so far (packet arrivals).
  std::uint64_t events() const { return queue_.served(); }

 private:
  struct Item {
    Packet* packet;
    int dir;
  };
  void serve(Item& it);
  std::array<std::unique_ptr<LinkDirection>, 2> dirs_;
  TimedQueue<Item> queue_;
};

}  // namespace trnsim::model
