// SPDX-License-Identifier: MIT
// Parameters of the fabric model (links, switches, chip network interfaces) that the topology
// does not carry: packet and flit sizes, flow control, arbitration, load spreading and the
// per-message endpoint overhead. Sources in docs/configuration.md ("Fabric parameters").
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

// How a switch output picks among the inputs that have a packet for it.
enum class FabricArbiter { round_robin, oldest_first };
constexpr auto enum_names(FabricArbiter) {
  return std::array{std::pair{FabricArbiter::round_robin, std::string_view("round_robin")},
                    std::pair{FabricArbiter::oldest_first, std::string_view("oldest_first")}};
}

// How a switch's input buffer is organised (docs/models/fabric.md, "Switch queueing").
// voq: one queue per output at each input (virtual output queues); a packet waits only for its
// own output. input_fifo: one FIFO per input and VC; only its head packet can leave, so a packet
// for a busy output holds up the packets behind it that are bound for free ones.
enum class FabricQueueing { voq, input_fifo };
constexpr auto enum_names(FabricQueueing) {
  return std::array{std::pair{FabricQueueing::voq, std::string_view("voq")},
                    std::pair{FabricQueueing::input_fifo, std::string_view("input_fifo")}};
}

// How long a packet cut through onto a faster output takes that output (docs/models/fabric.md,
// "Cut-through onto a faster link"). The packet leaves at once either way, its tail one flit
// after it arrived. share: the output is taken for the packet's serialisation at the output's
// own rate, and the next packet may start then (a link of several PCIe ports carries the packet
// on some of its lanes at the rate it arrives, the next on the others). hold: the output is
// taken until the packet's tail has left (the model before issue 30), so a fast link fed by
// slower ones carries their rate.
enum class FabricCutThrough { share, hold };
constexpr auto enum_names(FabricCutThrough) {
  return std::array{std::pair{FabricCutThrough::share, std::string_view("share")},
                    std::pair{FabricCutThrough::hold, std::string_view("hold")}};
}

// In what order a chip's transfers that become eligible at the same time join their outputs'
// queues (docs/models/fabric.md, "The seed: every arbitrary choice"). seeded: an order the run's
// seed permutes, as every other tie of the packet fabric. issued: the order they were issued in
// (a collective's schedule: the mesh all-to-all's staggered peers), as the flow network's lane
// takes them. Which one a Trainium DMA gives is unpublished.
enum class FabricSendOrder { seeded, issued };
constexpr auto enum_names(FabricSendOrder) {
  return std::array{std::pair{FabricSendOrder::seeded, std::string_view("seeded")},
                    std::pair{FabricSendOrder::issued, std::string_view("issued")}};
}

// Where the flow network's per-pattern link efficiency comes from (docs/models/fidelity.md,
// "Flow calibration"). none: every link direction carries its nominal bandwidth. packet: before
// the run, the packet fabric of the same rack runs each collective algorithm once on every chip
// (a canonical case), and a flow of that algorithm's transfers takes as long to drain as the
// packet fabric's measured efficiency says (its wire bytes over that efficiency). workload: the
// same, from the workload's own collectives (each class's median instance on its own group, at
// its own size) instead of whole-rack cases. auto (the default): workload on one rack, none
// with /cluster (resolve's rule).
enum class FlowCalibration { auto_, none, packet, workload };
constexpr auto enum_names(FlowCalibration) {
  return std::array{std::pair{FlowCalibration::auto_, std::string_view("auto")},
                    std::pair{FlowCalibration::none, std::string_view("none")},
                    std::pair{FlowCalibration::packet, std::string_view("packet")},
                    std::pair{FlowCalibration::workload, std::string_view("workload")}};
}

// How the flow network shares a link direction among its flows (docs/models/fidelity.md,
// "Coupled contention"). max_min: progressive filling, each flow limited only by its own
// bottleneck. coupled: as max_min, but flows that cross one link direction on the same hop (the
// packet fabric's hop-indexed VC, one receive buffer shared by all of them) are held to one rate
// per piece once one of them is limited further on: its packets fill the shared buffer and the
// link passes the others at the rate it drains (tree saturation), and the links before it back
// up in turn. arbiter: each link direction is shared as the packet switch's output arbiter
// shares it, round robin over its inputs (the link direction a flow arrives on; at a chip, its
// own transfers are one more input), then among the flows of one input by pieces; progressive
// filling over those two levels ("Arbiter-fair sharing").
enum class FlowContention { max_min, coupled, arbiter };
constexpr auto enum_names(FlowContention) {
  return std::array{std::pair{FlowContention::max_min, std::string_view("max_min")},
                    std::pair{FlowContention::coupled, std::string_view("coupled")},
                    std::pair{FlowContention::arbiter, std::string_view("arbiter")}};
}

// How the flow network carries a transfer of one packet (at most packet_bytes, one piece). lane:
// as the packet fabric carries a packet, hop by hop, each link direction sending the packets
// that reach it in order of arrival at its full rate, cut through (docs/models/fidelity.md,
// "One-packet transfers"). fluid: as a flow like any other, sharing every link of its path
// max-min with the flows there.
enum class FlowPackets { lane, fluid };
constexpr auto enum_names(FlowPackets) {
  return std::array{std::pair{FlowPackets::lane, std::string_view("lane")},
                    std::pair{FlowPackets::fluid, std::string_view("fluid")}};
}

// What a chip does with a packet it relays for others (a route through the chip: a torus, or
// the direct links between the racks of a NeuronSwitch UltraServer). router: a router inside the
// chip forwards it as a switch does, cut through, holding its receive buffer until its tail has
// left, so a relay whose next link is busy back-pressures the links before it. memory: the
// chip's DMA stores it in its HBM and sends it on from there (store and forward, as a PCIe
// endpoint relays): its receive buffer is freed once it is written, and it waits in memory, not
// in the link's buffers, for its next link. docs/models/fabric.md, "Relays".
enum class ChipRelay { router, memory };
constexpr auto enum_names(ChipRelay) {
  return std::array{std::pair{ChipRelay::router, std::string_view("router")},
                    std::pair{ChipRelay::memory, std::string_view("memory")}};
}

// How traffic is spread over equal-cost next hops.
enum class FabricSpreading { per_flow, per_packet };
constexpr auto enum_names(FabricSpreading) {
  return std::array{std::pair{FabricSpreading::per_flow, std::string_view("per_flow")},
                    std::pair{FabricSpreading::per_packet, std::string_view("per_packet")}};
}

struct FabricParams {
  std::string model;  // registered network implementation (trnsim list-types); empty: by /sim/fidelity
  // One packet is one simulation event per hop; see docs/models/fabric.md for what the size
  // costs in speed and fidelity.
  Bytes packet_bytes = Bytes(16384.0);
  Bytes flit_bytes = Bytes(256.0);
  Bytes header_bytes = Bytes(16.0);
  int vcs = 0;  // 0: as many as the longest route has links (hop-indexed, deadlock-free)
  Bytes vc_buffer{};  // 0: the credit loop in whole packets plus two packets
  Duration endpoint_overhead = Duration(500e-9);
  // Packet network: source reads each transfer keeps issued ahead of the packet being cut (a DMA
  // queue reading the next packet while the last is sent); 0: a packet is read only when an
  // output takes it, and the output waits for the read. docs/models/fabric.md.
  int read_ahead_packets = 1;
  FabricArbiter arbiter = FabricArbiter::round_robin;
  FabricSpreading spreading = FabricSpreading::per_flow;
  FabricQueueing queueing = FabricQueueing::voq;
  FabricCutThrough cut_through = FabricCutThrough::share;
  FabricSendOrder send_order = FabricSendOrder::seeded;
  ChipRelay chip_relay = ChipRelay::router;
  FlowCalibration flow_calibration = FlowCalibration::auto_;
  FlowContention flow_contention = FlowContention::max_min;
  FlowPackets flow_packets = FlowPackets::lane;
  std::optional<double> link_idle_fraction;  // default: chip.link.idle_fraction (0 without chip)
  template <class V>
  void visit(V& v) {
    v.field("model", model, "network model: packet (links, switches, credits, one event per "
            "packet per hop) or flow (max-min fair flows); empty: by /sim/fidelity");
    v.field("packet_bytes", packet_bytes,
            "largest payload of one packet (a transfer is cut into packets of this size)",
            Positive{});
    v.field("flit_bytes", flit_bytes, "link-layer flit; a packet occupies whole flits",
            Positive{});
    v.field("header_bytes", header_bytes, "header bytes added to every packet's payload",
            AtLeast{0});
    v.field("vcs", vcs,
            "virtual channels per link direction (0: one per hop of the longest route)",
            InRange{0, 1024});
    v.field("vc_buffer", vc_buffer,
            "receive buffer per virtual channel (0: the credit loop in whole packets plus two)",
            AtLeast{0});
    v.field("endpoint_overhead", endpoint_overhead,
            "DMA start / descriptor / CC-core time per message at each end", AtLeast{0});
    v.field("read_ahead_packets", read_ahead_packets,
            "packet network: source HBM reads each transfer keeps issued ahead of the packet "
            "being sent (0: read when an output takes the packet, the output waiting for it)",
            InRange{0, 1024});
    v.field("arbiter", arbiter, "switch output arbitration: round_robin or oldest_first");
    v.field("spreading", spreading,
            "equal-cost spreading: per_flow (hash of the flow id) or per_packet");
    v.field("queueing", queueing,
            "switch input buffering: voq (a queue per output at each input) or input_fifo "
            "(one FIFO per input and VC: head-of-line blocking)");
    v.field("cut_through", cut_through,
            "a packet cut through onto a faster output takes it for its serialisation at the "
            "output's rate (share) or until its tail has left (hold)");
    v.field("send_order", send_order,
            "packet network: a chip's transfers that start together join their outputs' queues "
            "in an order the seed permutes (seeded) or in the order issued (issued: a "
            "collective's schedule order, as the flow network's lane)");
    v.field("chip_relay", chip_relay,
            "a chip relaying a packet for others forwards it through a router (router: cut "
            "through, its receive buffer held until the packet has left) or stores it in its "
            "HBM and sends it on from there (memory: the buffer freed once written; the flow "
            "network, which has no buffers, charges the relay's HBM the write and read back)");
    v.field("flow_calibration", flow_calibration,
            "flow network: none (nominal link bandwidth), packet (each collective algorithm's "
            "link efficiency measured on the packet fabric of the same rack before the run), "
            "workload (the same, measured on the workload's own collectives and groups) or auto "
            "(workload on one rack, none with /cluster)");
    v.field("flow_contention", flow_contention,
            "flow network: max_min (each flow limited by its own bottleneck) or coupled (flows "
            "sharing a link direction on the same hop, one receive buffer, held to one rate per "
            "piece once one of them is limited further on: congestion spreading) or arbiter "
            "(each link direction shared equally among the inputs that feed it, then among the "
            "flows of one input by pieces, as the switch's round-robin output arbiter)");
    v.field("flow_packets", flow_packets,
            "flow network: a transfer of one packet goes hop by hop, each link direction "
            "sending such packets in order of arrival at its full rate (lane), or is a flow "
            "sharing its links max-min with the others (fluid)");
    v.field("link_idle_fraction", link_idle_fraction,
            "link idle power as a fraction of full-rate power (default: chip.link.idle_fraction)",
            InRange{0, 1});
  }
};

}  // namespace trnsim::config
