// SPDX-License-Identifier: MIT
// The flow-level network: the second implementation of model::Network (registry name "flow").
//
// Each transfer is one flow on its route (the same route the packet fabric takes for its flow
// id). Flows share every link direction they cross max-min fairly, found by progressive filling.
// Rates change only when a flow starts or ends, and then only for the flows that share a link
// with the change, with every other flow's rate held (same-instant changes are batched into one
// recomputation). A flow's data leaves at its rate; its completion is scheduled at its predicted
// end, plus fixed terms per hop (link latency, one flit's serialisation, switch traversal or chip
// forwarding) and the endpoint overhead at each end. The cost grows with the number of flows and
// of their rate changes, never with bytes. The pieces of a merged transfer (a collective step's
// pieces to one peer) arrive one after another in its last round, as the packet fabric's
// transfers sharing an output deliver them, when the caller asks (TransferState::on_pieces), in
// at most 16 arrivals.
//
// A transfer of one packet (at most packet_bytes, one piece) is not a flow but a packet, with
// rack.fabric.flow_packets lane (the default): it moves hop by hop, one event per hop, and each
// link direction sends such packets in order of arrival at its full rate, cut through, as the
// packet fabric's links do. (As flows sharing links max-min, many small transfers progressed
// together, so under load none finished early, and a fast run of uniform traffic past
// saturation took minutes.) The lane and the flows do not see each other's load on a link they
// share.
//
// Left out, against the packet fabric (measured in docs/models/fidelity.md): credit
// back-pressure and buffer occupancy, head-of-line blocking, the interleaving of packets of flows
// that share an output, per-packet spreading (a flow keeps one path), switch arbitration. With
// rack.fabric.flow_contention coupled, the steady state of one of them: flows that share a link
// direction on the same hop (one receive buffer, the packet fabric's hop-indexed VC) are held to
// one rate per piece once one of them is limited further on, and the links before it in turn.
// With rack.fabric.flow_contention arbiter, the sharing the packet switch's output arbiter does:
// a link direction goes round robin to its inputs (the link direction a flow arrives on; at a
// chip, its own transfers are one more input), and an input's share to its flows by pieces.
#pragma once

#include <cstdint>
#include <array>
#include <exception>
#include <functional>
#include <memory>
#include <queue>
#include <utility>
#include <vector>

#include "common/activity.hpp"
#include "common/block.hpp"
#include "common/memory.hpp"
#include "common/network.hpp"
#include "common/transfer.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/topology/cluster.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::model {

// The statistics of one direction of a link in the flow network.
struct FlowLinkDirectionStats {
  static constexpr StatKey bytes = LinkDirectionStats::bytes;
  static constexpr StatKey wire_bytes = LinkDirectionStats::wire_bytes;
  static constexpr StatKey busy = LinkDirectionStats::busy.described("wire bytes / bandwidth");
  static constexpr StatKey utilisation = LinkDirectionStats::utilisation;
  static constexpr StatKey flows{"flows", StatUnit::count, "flows that crossed it"};
  static constexpr std::array all{bytes, wire_bytes, busy, utilisation, flows};
};

// One direction of a link as the flow model sees it: its statistics and energy.
class FlowLinkDirection : public Block {
 public:
  FlowLinkDirection(const sc_core::sc_module_name& name, Bandwidth bw, EnergyPerBit dyn,
                    Power idle);
  std::optional<double> utilisation(Duration) const override { return s_util_.value; }

 private:
  friend class FlowNetwork;
  Stat& s_bytes_;
  Stat& s_wire_;
  Stat& s_busy_;
  Stat& s_util_;
  Stat& s_flows_;
  EnergyPerBit dyn_;
  ActionMeter* meter_ = nullptr;  // of Action::link, created on its first charge
};

// The statistics of a switch or a relaying chip in the flow network.
struct FlowNodeStats {
  static constexpr StatKey bytes_forwarded{"bytes_forwarded", StatUnit::bytes,
                                           "payload bytes that passed through"};
  static constexpr std::array all{bytes_forwarded};
};

// A switch, or a chip that forwards for others: bytes passed through, energy, idle power.
class FlowNode : public Block {
 public:
  FlowNode(const sc_core::sc_module_name& name, EnergyPerBit energy, Power idle, bool chip);

 private:
  friend class FlowNetwork;
  Stat& s_bytes_;
  EnergyPerBit energy_;
  Action action_;                 // chip_forwarding or switch
  ActionMeter* meter_ = nullptr;  // of action_, created on its first charge
};

// The statistics of the flow network itself (registry entry "flow").
struct FlowNetworkStats {
  static constexpr StatKey transfers = NetworkStats::transfers;
  static constexpr StatKey bytes_delivered = NetworkStats::bytes_delivered;
  static constexpr StatKey rate_recomputations{"rate_recomputations", StatUnit::count,
                                               "batched max-min rate recomputations"};
  static constexpr StatKey max_flows{"max_flows", StatUnit::count, "most flows active at once"};
  static constexpr std::array all{transfers, bytes_delivered, rate_recomputations, max_flows};
};

class FlowNetwork : public Block, public PathNetwork {
 public:
  SC_HAS_PROCESS(FlowNetwork);
  // As model::Fabric: `topo` must outlive the network; `memories` empty or one per chip.
  FlowNetwork(const sc_core::sc_module_name& name, const topo::Topology& topo,
              const resolve::FabricPlan& plan, std::vector<MemoryPort*> memories = {});
  ~FlowNetwork() override;

  TransferHandle start(const TransferRequest& r,
                       std::function<void(const TransferRecord&)> on_done = {}) override;
  void finish(const sc_core::sc_time& end) override;
  NetworkTotals totals() const override;
  Bandwidth injection_bandwidth(topo::ChipId c) const override;
  std::uint64_t message_unit_bytes() const override { return ~std::uint64_t(0); }
  void account(const TransferRequest& r) override;
  // A transfer on an explicit path, which may end where it began (a folded scale-out transfer,
  // topo::FoldedScaleOut): the flow crosses `p.dirs` and passes through `p.via`.
  TransferHandle start_on_path(const TransferRequest& r, const topo::DirectedPath& p,
                               std::function<void(const TransferRecord&)> on_done = {}) override;
  bool charges_accounted() const override { return true; }
  bool merges_pieces() const override { return true; }
  // A flow's link and switch energy is counted when it drains: the wire bytes its flows in
  // flight have sent by `t`, priced by the blocks they cross.
  Energy dynamic_unmetered(const PowerModel& power, const sc_core::sc_time& t) const override;
  bool has_unmetered() const override { return true; }
  void rethrow_error() const override;

  // Current rate of the flow of a transfer in flight, in payload bytes per second (tests).
  double rate_of(const TransferHandle& h) const;
  std::uint64_t recomputations() const { return recomputations_; }
  std::uint64_t max_flows() const { return max_flows_; }

 private:
  struct Flow;
  // One input of a link direction under arbiter-fair sharing: the flows that reach it through
  // one input port of the node it leaves, which the packet switch's output arbiter serves in
  // turn with the other inputs.
  struct Input {
    std::uint32_t from;        // the link direction before, or kLocal
    std::uint32_t flows = 0;   // active flows through it
    double used = 0;           // sum of their rates (wire bytes per second)
    double open_weight = 0;    // in a recomputation: pieces of its flows not yet fixed
    std::uint32_t open = 0;    // and how many
  };
  static constexpr std::uint32_t kLocal = ~std::uint32_t(0);
  struct Dir {
    double capacity = 0;  // wire bytes per second
    std::uint64_t lane_free = 0;  // the packet lane: when it has sent the packets that reached it
    double used = 0;      // sum of the rates of its flows
    std::vector<std::uint32_t> flows;  // active flows (unordered)
    FlowLinkDirection* block = nullptr;
    sc_core::sc_time latency, flit_time;
    std::uint64_t seen = 0;  // epoch marks of a recomputation
    double residual = 0;
    int unfrozen = 0;
    double unfrozen_weight = 0;  // pieces of the unfrozen flows
    std::uint32_t slot = 0;      // its place in the recomputation's heap of shares
    // Coupled contention: the hops (bit h: its flows on hop h, one VC's buffer) whose open flows
    // a recomputation has already held to a coupled rate, valid in the epoch `coupled_epoch`.
    std::uint64_t coupled_epoch = 0;
    std::uint64_t coupled_hops = 0;
    // Arbiter-fair sharing: the inputs that feed it (the link direction before it on a flow's
    // path, or kLocal: the transfers of the chip it leaves) in the order they first appeared,
    // and, in a recomputation, which open input has the smallest level (its share entry's).
    std::vector<Input> inputs;
    std::uint32_t low_input = 0;
    std::uint64_t updated = 0;  // the last round of fill_arbiter that updated its level
  };
  enum class Kind : std::uint8_t { activate, drained, complete, piece, lane };
  // A flow's one pending event: its activation, its drain at its current rate, or its
  // completion. A new one replaces the last in place, so the heap holds one entry per flow
  // rather than every drain a rate change superseded (millions of stale entries at 144 ranks);
  // only the replaced event's time is kept (`stale_`).
  class StaleTimes;
  struct Event {
    std::uint64_t time;  // sc_time value
    std::uint64_t seq;   // insertion order: ties run first come first served
    std::uint32_t flow;
    Kind kind;
    bool before(const Event& o) const {
      return time != o.time ? time < o.time : seq < o.seq;
    }
  };
  static constexpr std::uint32_t kNoSlot = ~std::uint32_t(0);
  // The arrival of a merged flow's pieces (Kind::piece): beside the flow's one pending event,
  // never replaced, ordered with the events by (time, seq).
  struct PieceEvent {
    std::uint64_t time, seq;
    std::uint32_t flow;
    std::uint32_t arrived;  // pieces arrived with it
    bool operator>(const PieceEvent& o) const {
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };

  // The wire bytes, route and fixed terms of a request, into `f`.
  void trace_route(const TransferRequest& r, Flow& f) const;
  // The hops of r's route (the packet fabric's per-flow hashing): hop(d) for each link taken,
  // d its direction (2 x link id, + 1 when taken from its b end); via(node) for each node passed
  // between two links.
  template <typename Hop, typename Via>
  void walk_route(const TransferRequest& r, Hop&& hop, Via&& via) const;
  void wire_of(const TransferRequest& r, Flow& f) const;  // wire bytes of the request
  void terms_of(Flow& f) const;  // bottleneck and fixed terms of f.path and f.via
  TransferHandle launch(std::uint32_t flow);  // a traced flow: activated after the overhead
  // A flow's bytes and energy on every link direction and node of its path.
  void charge(const Flow& f, std::uint64_t bytes);
  void schedule(const sc_core::sc_time& t, Kind k, std::uint32_t flow);
  void sift_up(std::uint32_t i);
  void sift_down(std::uint32_t i);
  void pop_event();
  void fire();
  void fire_events();
  void activate(std::uint32_t f);
  void drained(std::uint32_t f);
  void piece_arrived(std::uint32_t f);  // a merged flow reached its next piece milestone
  static std::uint32_t pieces_after(const Flow& f, std::uint32_t delivery);
  static std::uint32_t hop_on(const Flow& f, std::uint32_t dir);  // the index of dir on f's path
  void complete(std::uint32_t f);
  void recompute();
  // Arbiter-fair progressive filling of the open flows of a recomputation (`open`: their
  // flow_mark_), `left` of them.
  void fill_arbiter(std::uint64_t open, std::size_t left);
  // Under arbiter-fair sharing, the rate per piece the open flows of direction d's lowest
  // input would get if d limited them (records that input in d.low_input).
  double arbiter_level(Dir& d);
  void detach(std::uint32_t f);
  std::uint32_t new_flow();
  sc_core::sc_time memory_pass(MemoryPort* m, std::uint64_t addr, std::uint64_t bytes,
                               bool write) const;

  const topo::Topology& topo_;
  resolve::FabricPlan plan_;
  std::exception_ptr error_;  // the first error out of fire(): it stopped the simulation
  std::vector<MemoryPort*> memories_;
  std::vector<Dir> dirs_;  // 2 per link: index 2*l + (0: a->b, 1: b->a)
  std::vector<std::unique_ptr<sc_core::sc_module>> link_modules_;
  std::vector<std::unique_ptr<FlowNode>> nodes_;  // by node id; null unless it forwards
  std::vector<std::unique_ptr<Flow>> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::vector<Event> heap_;              // binary heap by (time, seq), earliest first
  std::priority_queue<PieceEvent, std::vector<PieceEvent>, std::greater<>> pieces_;
  std::vector<std::uint32_t> heap_slot_;  // by flow: its event's index in heap_, or kNoSlot
  // By flow: 2 x the epoch of the recomputation that holds it, + 1 once its rate is fixed. Kept
  // apart from Flow: a recomputation checks it for every flow of each direction it fills.
  std::vector<std::uint64_t> flow_mark_;
  sc_core::sc_event wake_;
  // The times of replaced events: the network still wakes at each of them, as it did when they
  // stayed in the event heap. Its wake-ups are entries in the kernel's queue of timed
  // notifications, which orders equal-time notifications by the queue's shape: fewer of them
  // reorders the other processes' equal-time wake-ups, and the results move.
  std::unique_ptr<StaleTimes> stale_;
  std::uint64_t seq_ = 0, epoch_ = 0;
  struct ShareEntry {
    double share;
    std::uint32_t dir;
    bool before(const ShareEntry& o) const {  // smallest first; ties by direction id
      return share < o.share || (share == o.share && dir < o.dir);
    }
  };
  void share_remove(std::uint32_t dir);
  void share_set(std::uint32_t dir, double share);
  void share_up(std::uint32_t i);
  void share_down(std::uint32_t i);
  std::vector<std::uint32_t> scratch_set_, scratch_dirs_, scratch_fix_;
  std::vector<ShareEntry> scratch_heap_;
  // Coupled contention (rack.fabric.flow_contention coupled): the (direction, hop) groups whose
  // open flows a fixed flow holds back, still to visit.
  struct Group {
    std::uint32_t dir, hop;
  };
  std::vector<Group> scratch_groups_;
  std::vector<std::uint32_t> changed_;  // directions whose flows changed since the last recompute
  sc_core::sc_time overhead_;
  double resolution_s_;  // the kernel's time resolution, seconds
  bool coupled_;         // rack.fabric.flow_contention coupled
  bool arbiter_;         // rack.fabric.flow_contention arbiter
  bool lane_;            // rack.fabric.flow_packets lane
  bool relay_memory_;    // rack.fabric.chip_relay memory
  // A one-packet transfer on the packet lane, its head at hop Flow::lane_at: sent on, or ended.
  void lane_hop(std::uint32_t id);
  std::vector<double> scratch_used_;  // arbiter_level's open inputs' rates
  std::uint64_t arbiter_rounds_ = 0;
  std::uint64_t route_salt_ = 0;  // from sim.seed: the packet fabric's, so both take one path
  ActivityCounter activity_;

  std::uint64_t started_ = 0, completed_ = 0, requested_ = 0, delivered_ = 0, injected_ = 0;
  std::uint64_t packets_ = 0, events_ = 0, recomputations_ = 0, max_flows_ = 0, active_ = 0;
  double wire_ = 0;
  std::uint64_t accounted_ = 0;  // payload bytes charged by account()
  std::unique_ptr<Flow> account_flow_;  // reused by account(): its vectors keep their storage
  Stat& s_transfers_;
  Stat& s_bytes_;
  Stat& s_recomputations_;
  Stat& s_max_flows_;
};

}  // namespace trnsim::model
