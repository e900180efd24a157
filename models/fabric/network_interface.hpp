// SPDX-License-Identifier: MIT
// A chip's network interface and router: DMA-driven injection of transfers into the chip's
// ports, delivery into local HBM, and (where the chip forwards) relaying packets for others
// through the Router it derives from.
//
// A transfer becomes eligible for injection endpoint_overhead after it is issued (DMA start,
// descriptor, CC-core). It is then queued on the output its flow hashes to (per_flow), or on
// every equal-cost output (per_packet: whichever is free first takes the next packet). Packets are
// cut only when an output can take one, so a busy chip applies back-pressure to the DMA instead of
// building packet queues. Transfers sharing an output take packets in turn. A transfer completes
// endpoint_overhead after its last byte is delivered (completion semaphore at the destination).
//
// With a MemoryPort, each packet's payload is read from the source HBM (the packet's tail cannot
// leave before its read completes) and written to the destination HBM when its tail arrives (its
// receive buffer is freed, and the credit returned, after the write). Each transfer keeps
// read_ahead_packets reads issued ahead of the packet being cut: the first when it becomes
// eligible, the next whenever a packet is cut, so the reads of concurrent transfers overlap each
// other and a packet's wire time (a chip's many DMA queues each read ahead); with 0 a packet is
// read only when an output takes it, and the output waits for the read. The
// packet is counted when its tail arrives, with the time its write ends: no event waits for the
// write, and the transfer completes endpoint_overhead after the last of its writes ends.
#pragma once

#include "common/seed_salt.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "common/memory.hpp"
#include "common/transfer.hpp"
#include "switch/router.hpp"

namespace trnsim::model {

struct InterfaceParams {
  topo::ChipId chip{};
  std::uint64_t packet_bytes = 16384;
  std::uint32_t flit_bytes = 256;
  std::uint32_t header_bytes = 16;
  Duration endpoint_overhead{};
  std::uint32_t read_ahead_packets = 1;  // source reads issued ahead of the cut, per transfer
  // Transfers eligible at the same time join their outputs' queues in the order issued
  // (/rack/fabric/send_order issued); otherwise in the order the router's salt permutes.
  bool issued_order = false;
  // Mixed into every flow id before it picks among equal-cost next hops (0: the flow id as it
  // is); the same in every interface of a fabric, from sim.seed.
  std::uint64_t route_salt = 0;
};

// What the interfaces share with the fabric that owns them.
struct FabricShared {
  const topo::Topology* topology = nullptr;
  PacketPool pool;
  std::uint64_t next_packet_id = 0;
  // Observer of each delivered packet and the time its write ends (>= now()); may be empty.
  std::function<void(const Packet&, const sc_core::sc_time&)> on_delivery;
  std::function<void(TransferState&)> on_completion;  // counts and notifies per chip
  std::uint64_t bytes_injected = 0, packets_injected = 0;
  std::uint64_t bytes_delivered = 0, packets_delivered = 0;
};

// The statistics of a chip's network interface (besides its router's).
struct NetworkInterfaceStats {
  static constexpr StatKey transfers_issued{"transfers_issued", StatUnit::count,
                                            "transfers issued by this chip"};
  static constexpr StatKey transfers_received{"transfers_received", StatUnit::count,
                                              "transfers completed at this chip"};
  static constexpr StatKey bytes_injected{"bytes_injected", StatUnit::bytes,
                                          "payload bytes injected by this chip"};
  static constexpr StatKey bytes_received{"bytes_received", StatUnit::bytes,
                                          "payload bytes delivered here"};
  static constexpr std::array all{
      transfers_issued, transfers_received, bytes_injected, bytes_received};
};

class NetworkInterface : public Router {
 public:
  NetworkInterface(const sc_core::sc_module_name& name, const RouterParams& rp, int link_ports,
                   const InterfaceParams& ip, FabricShared& shared, MemoryPort* memory);

  // Issues transfer `t` (t->record.request set, t->record.issued = now()).
  void issue(TransferState* t);
  std::uint32_t flits_of(std::uint64_t payload) const {
    return std::uint32_t((payload + ip_.header_bytes + ip_.flit_bytes - 1) / ip_.flit_bytes);
  }

 protected:
  bool local_pending(int out) override;
  std::uint32_t local_flits(int out) override;
  sc_core::sc_time local_ready(int out) override;
  Packet* local_take(int out) override;
  void deliver(int in, Packet* p) override;
  sc_core::sc_time relay_store(Packet* p) override;
  void on_timer(int kind, std::uint64_t arg) override;

 private:
  enum Kind { kStart = kFirstUserTimer, kComplete };
  std::uint64_t next_payload(const TransferState& t) const;
  // Issues source reads of `t`'s packets beyond those already read until read_ahead_packets are
  // outstanding ahead of the cut, or the whole transfer is read.
  void read_ahead(TransferState& t);
  // Counts packet `p` delivered, its write into memory ending at `written` (>= now()).
  void account(Packet* p, const sc_core::sc_time& written);
  std::uint64_t park(TransferState* t);
  // The key that picks a transfer's equal-cost next hops (per_flow) at every node.
  std::uint64_t route_key(const TransferState& t) const {
    const std::uint64_t flow = t.record.request.flow;
    return model::route_key(flow, ip_.route_salt);
  }

  InterfaceParams ip_;
  FabricShared& shared_;
  MemoryPort* memory_;
  std::vector<std::deque<TransferState*>> local_;  // per output: transfers with packets to cut
  std::vector<TransferState*> slots_;  // transfers riding on timers, by timer argument
  std::vector<std::uint64_t> free_slots_;
  Stat& s_issued_;
  Stat& s_completed_;
  Stat& s_bytes_sent_;
  Stat& s_bytes_received_;
};

}  // namespace trnsim::model
