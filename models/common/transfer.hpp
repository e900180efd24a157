// SPDX-License-Identifier: MIT
// A remote HBM-to-HBM transfer as the collectives/replay engine sees it: the request, its state
// while in flight, and the record it leaves when complete.
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "common/block.hpp"
#include "common/fifo.hpp"
#include "trnsim/topology/topology.hpp"
#include "trnsim/units.hpp"

namespace trnsim::model {

struct TransferRequest {
  topo::ChipId src{}, dst{};
  std::uint64_t bytes = 0;  // 0: a bare completion message (one header-only packet)
  std::uint64_t flow = 0;   // packets of one flow id share a path (per-flow spreading)
  std::uint64_t src_addr = 0, dst_addr = 0;  // HBM addresses, used when memories are attached
  // The transfer stands for this many equal pieces of `bytes` sent together on one route: they
  // share links as that many flows would (Network::merges_pieces(); 1 elsewhere).
  std::uint32_t pieces = 1;
  // The traffic pattern it belongs to (replay::traffic_pattern: the collective and its
  // algorithm; 0 none: sends, point-to-point). The flow network scales its
  // drain time by the pattern's calibrated efficiency (FabricPlan::flow_efficiency).
  std::uint8_t pattern = 0;
};

// Where the time of one packet went, summed over its hops. `serialisation` is what remains of
// `total` after the other terms: flit serialisation per hop plus the tail of the packet.
struct LatencyBreakdown {
  Duration total{};
  Duration endpoint{};  // DMA start at the source + completion at the destination
  Duration serialisation{};
  Duration link{};       // link latency (PHY, FEC, retimers, wire), all hops
  Duration switching{};  // switch traversal, all switches
  Duration forwarding{};  // chips relaying for others
  Duration queueing{};   // waiting for busy outputs, arbitration and credits
  int hops = 0;          // links crossed by the packet that completed the transfer
};

struct TransferRecord {
  TransferRequest request;
  sc_core::sc_time issued, completed;
  std::uint64_t packets = 0;
  // Of the packet whose delivery completed the transfer.
  LatencyBreakdown last_packet;
  Duration latency() const { return from_sc(completed - issued); }
};

struct TransferState {
  TransferRecord record;
  std::uint64_t cut = 0, packets_cut = 0;  // bytes and packets put on the wire so far
  std::uint64_t packets_total = 0;
  // Source reads issued ahead of the cut (packet network, /rack/fabric/read_ahead_packets): the
  // end of each, one per packet, oldest first; `read` source bytes whose read has been issued.
  // A Fifo, not a std::deque: a deque allocates 576 bytes when constructed, for every transfer
  // of either network (the flow network never reads ahead).
  Fifo<sc_core::sc_time> reads;
  std::uint64_t read = 0;
  std::uint64_t delivered = 0, packets_delivered = 0;
  sc_core::sc_time started;  // eligible for injection (after the source overhead)
  sc_core::sc_time written;  // the latest end of a delivered packet's write at the destination
  bool finished = false;
  sc_core::sc_event done;
  std::function<void(const TransferRecord&)> on_done;
  // A transfer of several pieces (TransferRequest::pieces) on a network that merges them: runs
  // with the number of pieces arrived so far as they arrive before the last (at most 15 times;
  // on_done then stands for all of them). Set before the transfer activates; may be empty.
  std::function<void(std::uint32_t)> on_pieces;
  std::shared_ptr<TransferState> keep_alive;  // held by the fabric while in flight
  bool cut_all() const { return packets_cut == packets_total; }
};

// What a caller keeps of a transfer: wait on done_event() from a thread, or poll done().
class TransferHandle {
 public:
  TransferHandle() = default;
  explicit TransferHandle(std::shared_ptr<TransferState> s) : s_(std::move(s)) {}
  bool valid() const { return s_ != nullptr; }
  bool done() const { return s_->finished; }
  const sc_core::sc_event& done_event() const { return s_->done; }
  const TransferRecord& record() const { return s_->record; }
  // Where pieces arrive one after another (TransferState::on_pieces): call before it activates.
  void on_pieces(std::function<void(std::uint32_t)> f) const { s_->on_pieces = std::move(f); }

 private:
  std::shared_ptr<TransferState> s_;
};

}  // namespace trnsim::model
