// SPDX-License-Identifier: MIT
// The rack network as one SystemC model: a Link per topology link, a Router per switch and a
// NetworkInterface (with router) per chip, wired from a validated Topology.
//
// API for the collectives / replay engine:
//   TransferHandle h = fabric.start({src, dst, bytes, flow});  // non-blocking, any process
//   wait(h.done_event()); h.record();                           // or poll h.done()
//   TransferRecord r = fabric.transfer(src, dst, bytes, flow);  // blocking, SC_THREAD only
// start() may also take a callback run at completion (from a method process: do not wait in it).
// completions(dst) / completion_event(dst) count transfers completed at a chip (a semaphore).
//
// Event granularity: one event per packet per hop (its arrival at the next node), one per credit
// return, and one per output that has more work when it becomes free. Never per flit or cycle.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "common/block.hpp"
#include "common/memory.hpp"
#include "common/network.hpp"
#include "fabric/network_interface.hpp"
#include "common/transfer.hpp"
#include "link/link.hpp"
#include "switch/router.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::model {

using FabricTotals = NetworkTotals;

// The statistics of the packet-level fabric itself (registry entry "packet").
struct FabricStats {
  static constexpr StatKey transfers = NetworkStats::transfers;
  static constexpr StatKey bytes_delivered = NetworkStats::bytes_delivered;
  static constexpr StatKey vcs{"vcs", StatUnit::count, "virtual channels per link direction"};
  static constexpr std::array all{transfers, bytes_delivered, vcs};
};

class Fabric : public Block, public Network {
 public:
  // `topo` must outlive the fabric; `plan` is what the resolve step made of the fabric
  // parameters on this topology. `memories` is empty (HBM not modelled) or has one entry per
  // chip (each may be null).
  Fabric(const sc_core::sc_module_name& name, const topo::Topology& topo,
         const resolve::FabricPlan& plan, std::vector<MemoryPort*> memories = {});

  TransferHandle start(const TransferRequest& r,
                       std::function<void(const TransferRecord&)> on_done = {}) override;
  TransferRecord transfer(topo::ChipId src, topo::ChipId dst, std::uint64_t bytes,
                          std::uint64_t flow = 0);

  std::uint64_t completions(topo::ChipId dst) const { return completions_.at(dst.v); }
  const sc_core::sc_event& completion_event(topo::ChipId dst) const {
    return *completion_events_.at(dst.v);
  }
  // Called for every packet delivered (tests, traces), when its tail arrives, with the time its
  // write into the destination's memory ends (now() without a memory).
  void set_delivery_observer(std::function<void(const Packet&, const sc_core::sc_time&)> f) {
    shared_.on_delivery = std::move(f);
  }

  // Closes the statistics at `end` (utilisation, open credit stalls).
  void finish(const sc_core::sc_time& end) override;
  NetworkTotals totals() const override;
  std::uint64_t message_unit_bytes() const override { return packet_bytes_; }
  // Charges a fast-forwarded transfer to the link directions and nodes of the route its packets
  // would take (per-flow hashing, as start() routes them): its packets' payload, wire bytes,
  // serialisation as busy time, and energy. Nothing is simulated, so nothing queues.
  void account(const TransferRequest& r) override;
  bool charges_accounted() const override { return true; }

  const topo::Topology& topology() const { return topo_; }
  int vcs() const { return vcs_; }
  std::uint64_t packet_bytes() const { return packet_bytes_; }
  std::uint32_t flit_bytes() const { return flit_bytes_; }
  std::uint32_t header_bytes() const { return header_bytes_; }
  int diameter() const { return diameter_; }
  // Sum of the per-direction bandwidth of a chip's links.
  Bandwidth injection_bandwidth(topo::ChipId c) const override;
  const Link& link(topo::LinkId l) const { return *links_.at(l.v); }
  std::size_t link_count() const { return links_.size(); }

 private:
  const topo::Topology& topo_;
  resolve::FabricPlan plan_;
  int vcs_ = 1, diameter_ = 0;
  std::uint64_t packet_bytes_ = 0;
  std::uint32_t flit_bytes_ = 0, header_bytes_ = 0;
  FabricShared shared_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::unique_ptr<Router>> routers_;  // by node
  std::vector<NetworkInterface*> nis_;            // by chip
  std::vector<std::uint64_t> completions_;
  std::vector<std::unique_ptr<sc_core::sc_event>> completion_events_;
  std::uint64_t route_salt_ = 0;
  std::uint64_t started_ = 0, completed_ = 0, requested_ = 0;
  Stat& s_transfers_;
  Stat& s_bytes_;
  Stat& s_vcs_;
};

}  // namespace trnsim::model
