// SPDX-License-Identifier: MIT
// The network between chips as the rack and the benchmarks see it, whatever implements it (the
// packet-level fabric today; a flow-level model next). Transfers are HBM to HBM.
//
//   TransferHandle h = net.start({src, dst, bytes, flow}, on_done);  // non-blocking
//   wait(h.done_event()); h.record();                                // from a thread
// on_done runs at completion from a method process: it must not wait.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <memory>

#include "common/stat_key.hpp"
#include "common/transfer.hpp"
#include "trnsim/units.hpp"

namespace trnsim::topo {
struct DirectedPath;
}

namespace trnsim::model {

// What every network implementation counts, on its top block.
struct NetworkStats {
  static constexpr StatKey transfers{"transfers", StatUnit::count, "transfers completed"};
  static constexpr StatKey bytes_delivered{"bytes_delivered", StatUnit::bytes,
                                           "payload bytes delivered"};
};

// What every link direction counts, whichever network models it: the run samples "busy", the
// report ranks directions by "utilisation", the collective benchmark reads "wire_bytes".
struct LinkDirectionStats {
  static constexpr StatKey bytes{"bytes", StatUnit::bytes, "payload bytes sent"};
  static constexpr StatKey wire_bytes{"wire_bytes", StatUnit::bytes,
                                      "bytes on the wire: whole flits incl. headers"};
  static constexpr StatKey busy{"busy", StatUnit::seconds, "time the direction was sending"};
  static constexpr StatKey utilisation{"utilisation", StatUnit::fraction,
                                       "busy time / elapsed time"};
};

struct NetworkTotals {
  std::uint64_t transfers_started = 0, transfers_completed = 0;
  std::uint64_t bytes_requested = 0;
  std::uint64_t bytes_injected = 0, bytes_delivered = 0;
  std::uint64_t packets_injected = 0, packets_delivered = 0;
  double wire_bytes = 0;        // over all link directions
  double credit_stall_ns = 0;   // summed over all link directions
  std::uint64_t packets_in_flight = 0;
  std::uint64_t events = 0;  // served by links and routers
};

// What both networks do first in start(): check the request (InputError for chip ids outside
// [0, chips) or a chip sending to itself) and make its state, issued now, holding `on_done`.
std::shared_ptr<TransferState> new_transfer(const TransferRequest& r, std::size_t chips,
                                            std::function<void(const TransferRecord&)> on_done);

class Network {
 public:
  virtual ~Network() = default;
  virtual TransferHandle start(const TransferRequest& r,
                               std::function<void(const TransferRecord&)> on_done = {}) = 0;
  // Closes the statistics at `end` (utilisation, open stalls).
  virtual void finish(const sc_core::sc_time& end) = 0;
  virtual NetworkTotals totals() const = 0;
  // Sum of the per-direction bandwidth of a chip's links.
  virtual Bandwidth injection_bandwidth(topo::ChipId c) const = 0;
  // The largest payload one unit of the model carries (a packet; a whole message for flows).
  virtual std::uint64_t message_unit_bytes() const = 0;
  // Charges a transfer's bytes and energy to the links and nodes of its route without
  // simulating it (fast-forward, replay/engine.hpp). The default charges nothing: a network that
  // cannot says so through charges_accounted().
  virtual void account(const TransferRequest& r) { (void)r; }
  virtual bool charges_accounted() const { return false; }
  // Whether start() honours TransferRequest::pieces > 1 (the flow network: one flow with the
  // share of that many, instead of a flow per piece); others need one request per piece.
  virtual bool merges_pieces() const { return false; }
  // Rethrows the error, if any, that stopped the simulation from inside the network's own
  // processes (SystemC would report it as one of its own, untyped, so the network keeps it):
  // the caller of sc_start() calls it when sc_start() returns.
  virtual void rethrow_error() const {}
};

// A network on which a transfer may follow an explicit path, which may end where it began: the
// folded scale-out network (topo::FoldedScaleOut, docs/scaling.md), registry role scale_out.
class PathNetwork : public Network {
 public:
  // The transfer crosses `p.dirs` and passes through `p.via`.
  virtual TransferHandle start_on_path(const TransferRequest& r, const topo::DirectedPath& p,
                                       std::function<void(const TransferRecord&)> on_done = {}) = 0;
};

}  // namespace trnsim::model
