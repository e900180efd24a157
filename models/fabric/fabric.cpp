// SPDX-License-Identifier: MIT
#include "fabric/fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <string>

#include "common/activity.hpp"
#include "common/seed_salt.hpp"
#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"

namespace trnsim::model {

namespace {

std::string module_name(std::string s) {
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

std::uint64_t salt(std::uint64_t seed, std::uint64_t tag, std::uint64_t index) {
  return seed_salt(seed, tag, index);
}

// The slowest rate at which the packets crossing each link direction (index: 2 * link + dir,
// dir 0 from a to b) leave its receiving node, over every route that uses it: a packet cut through
// from a slower link moves at that link's rate at every later hop (its tail cannot leave before it
// has arrived), and the next link out of the receiver may be slower still. A packet holds its
// credits at the receiver until its tail has left, so on a fast link carrying packets that move
// at a slower rate each holds them for its serialisation at that rate, not at the link's own.
// Routes from every chip to every chip, visited one destination at a time in order of distance
// (predecessors first), so a node's slowest incoming rate is known before its out-links are.
std::vector<double> slowest_drain(const topo::Topology& topo) {
  const auto& links = topo.links();
  const auto& routes = topo.routes();
  const std::size_t nodes = topo.nodes().size();
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<double> slow(2 * links.size(), kNone);
  std::vector<double> in_rate(nodes);
  std::vector<std::pair<int, std::uint32_t>> order;  // (-hops, node): farthest first
  order.reserve(nodes);
  auto dir_of = [&](topo::LinkId l, topo::NodeId from) {
    return 2 * std::size_t(l.v) + (links[l.v].a == from ? 0 : 1);
  };
  for (std::uint32_t c = 0; c < topo.chip_count(); ++c) {
    const topo::ChipId dst{c};
    const topo::NodeId end = topo.chip_node(dst);
    order.clear();
    for (std::uint32_t n = 0; n < nodes; ++n) {
      const int h = routes.hops(topo::NodeId{n}, dst);
      if (h > 0) order.emplace_back(-h, n);
    }
    std::sort(order.begin(), order.end());
    std::fill(in_rate.begin(), in_rate.end(), kNone);
    for (const auto& [neg_hops, n] : order) {
      const topo::NodeId at{n};
      for (const topo::LinkId l : routes.next_hops(at, dst)) {
        const topo::NodeId next = topo.other_end(l, at);
        const double rate = std::min(in_rate[n], links[l.v].bandwidth.si);
        in_rate[next.v] = std::min(in_rate[next.v], rate);
        double leaves = rate;  // at the destination: delivered at the rate it arrives
        if (next != end) {
          for (const topo::LinkId o : routes.next_hops(next, dst)) {
            leaves = std::min(leaves, links[o.v].bandwidth.si);
          }
        }
        auto& s = slow[dir_of(l, at)];
        s = std::min(s, leaves);
      }
    }
  }
  return slow;
}

}  // namespace

Fabric::Fabric(const sc_core::sc_module_name& name, const topo::Topology& topo,
               const resolve::FabricPlan& plan, std::vector<MemoryPort*> memories)
    : Block(name),
      topo_(topo),
      plan_(plan),
      vcs_(plan.vcs),
      diameter_(plan.diameter),
      packet_bytes_(plan.packet_bytes),
      flit_bytes_(plan.flit_bytes),
      header_bytes_(plan.header_bytes),
      route_salt_(salt(plan.seed, kRouteTag, 0)),
      s_transfers_(stats().add(FabricStats::transfers)),
      s_bytes_(stats().add(FabricStats::bytes_delivered)),
      s_vcs_(stats().add(FabricStats::vcs)) {
  const std::size_t chips = topo.chip_count();
  if (!memories.empty() && memories.size() != chips) {
    throw InternalError(fmt::format("Fabric: {} memories for {} chips", memories.size(), chips));
  }
  const config::FabricParams& p = plan.params;
  s_vcs_.value = vcs_;
  const std::uint32_t packet_flits = plan.packet_flits;
  const std::uint32_t fixed_buffer = plan.fixed_buffer_flits;
  const double idle = plan.link_idle_fraction;
  const auto& routes = topo.routes();

  shared_.topology = &topo;
  shared_.on_completion = [this](TransferState& t) {
    const auto dst = t.record.request.dst.v;
    ++completions_[dst];
    ++completed_;
    s_transfers_ += 1;
    s_bytes_ += double(t.record.request.bytes);
    completion_events_[dst]->notify(sc_core::SC_ZERO_TIME);
  };
  completions_.assign(chips, 0);
  for (std::size_t c = 0; c < chips; ++c) {
    completion_events_.push_back(std::make_unique<sc_core::sc_event>());
  }

  // Routers and interfaces, one per node.
  const auto& nodes = topo.nodes();
  routers_.resize(nodes.size());
  nis_.resize(chips, nullptr);
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    const auto& node = nodes[n];
    RouterParams rp;
    rp.node = topo::NodeId{n};
    rp.latency = node.latency;
    rp.energy = node.energy;
    rp.idle_power = node.kind == topo::NodeKind::chip ? Power{} : node.idle_power;
    rp.vcs = vcs_;
    rp.arbiter = p.arbiter;
    rp.spreading = p.spreading;
    rp.queueing = p.queueing;
    rp.cut_through = p.cut_through;
    rp.salt = salt(plan.seed, kNodeTag, n);
    const int ports = int(topo.incident(rp.node).size());
    if (node.chip) {
      rp.local_port = true;
      rp.relay_in_memory = p.chip_relay == config::ChipRelay::memory;
      InterfaceParams ip;
      ip.chip = *node.chip;
      ip.packet_bytes = packet_bytes_;
      ip.flit_bytes = flit_bytes_;
      ip.header_bytes = header_bytes_;
      ip.endpoint_overhead = p.endpoint_overhead;
      ip.read_ahead_packets = std::uint32_t(p.read_ahead_packets);
      ip.issued_order = p.send_order == config::FabricSendOrder::issued;
      ip.route_salt = route_salt_;
      MemoryPort* mem = memories.empty() ? nullptr : memories[node.chip->v];
      auto ni = std::make_unique<NetworkInterface>(module_name(node.name).c_str(), rp, ports, ip,
                                                   shared_, mem);
      nis_[node.chip->v] = ni.get();
      routers_[n] = std::move(ni);
    } else {
      routers_[n] =
          std::make_unique<Router>(module_name(node.name).c_str(), routes, rp, ports);
    }
  }

  // Links, with per-direction buffers sized for the receiving node.
  const auto& links = topo.links();
  auto port_at = [&](topo::NodeId n, topo::LinkId l) {
    const auto inc = topo.incident(n);
    for (std::size_t k = 0; k < inc.size(); ++k) {
      if (inc[k] == l) return int(k);
    }
    throw InternalError("Fabric: link missing from its node's incident list");
  };
  const std::vector<double> slow = fixed_buffer == 0 ? slowest_drain(topo) : std::vector<double>{};
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    LinkParams lp;
    lp.bandwidth = l.bandwidth;
    lp.latency = l.latency;
    lp.flit_bytes = flit_bytes_;
    lp.vcs = vcs_;
    lp.energy = l.energy;
    lp.idle_fraction = idle;
    lp.a_name = topo.node(l.a).name;
    lp.b_name = topo.node(l.b).name;
    lp.order_salt = salt(plan.seed, kLinkTag, i);
    for (int dir = 0; dir < 2; ++dir) {
      const topo::NodeId down = dir == 0 ? l.b : l.a;
      std::uint32_t flits = fixed_buffer;
      if (flits == 0) {
        // Enough whole packets for the credit loop (latency there and back, plus the
        // receiver's traversal) at full rate, plus the packets the link sends while one packet
        // leaves the receiver (its credits come back when its tail has left: one packet time at
        // the slowest rate the packets of this direction leave at, `drain` packet times of this
        // link), plus one. With every rate equal, drain is 1: the loop plus two whole packets.
        // Whole packets, because a packet needs credits for all its flits (virtual
        // cut-through): a buffer of the loop's flits plus two packets held only
        // floor(loop / packet) + 2 packets, so a faster switch could lose a whole packet of spare
        // buffer (docs/results/stability.md). Without `drain` a 2,560 GB/s Trn3 Gen1 up-link,
        // whose packets move at their chips' 256 GB/s, had room for 7 of the 16 packets of
        // 256 KiB it needs to stay busy (docs/models/fabric.md#packet-size).
        const double rtt = 2.0 * l.latency.si + topo.node(down).latency.si;
        const auto loop = std::uint32_t(std::ceil(l.bandwidth.si * rtt / flit_bytes_));
        const double leaves = slow[2 * std::size_t(i) + std::size_t(dir)];
        const auto drain = std::isfinite(leaves) && leaves < l.bandwidth.si
                               ? std::uint32_t(std::ceil(l.bandwidth.si / leaves - 1e-9))
                               : 1u;
        flits = ((loop + packet_flits - 1) / packet_flits + drain + 1) * packet_flits;
      }
      lp.buffer_flits[std::size_t(dir)] = flits;
    }
    links_.push_back(std::make_unique<Link>(fmt::format("link{}", i).c_str(), lp));
    Link* link = links_.back().get();
    const topo::LinkId id{i};
    const int pa = port_at(l.a, id), pb = port_at(l.b, id);
    routers_[l.a.v]->attach(pa, id, link, 0, 1);
    routers_[l.b.v]->attach(pb, id, link, 1, 0);
    link->connect(0, routers_[l.a.v].get(), pa, routers_[l.b.v].get(), pb);
    link->connect(1, routers_[l.b.v].get(), pb, routers_[l.a.v].get(), pa);
  }
}

TransferHandle Fabric::start(const TransferRequest& r,
                             std::function<void(const TransferRecord&)> on_done) {
  auto s = new_transfer(r, topo_.chip_count(), std::move(on_done));
  s->packets_total = std::max<std::uint64_t>(1, (r.bytes + packet_bytes_ - 1) / packet_bytes_);
  s->keep_alive = s;
  ++started_;
  requested_ += r.bytes;
  nis_[r.src.v]->issue(s.get());
  return TransferHandle(std::move(s));
}

TransferRecord Fabric::transfer(topo::ChipId src, topo::ChipId dst, std::uint64_t bytes,
                                std::uint64_t flow) {
  const TransferHandle h = start({src, dst, bytes, flow, 0, 0});
  if (!h.done()) wait_counted(activity(), h.done_event());
  return h.record();
}

void Fabric::account(const TransferRequest& r) {
  if (r.src == r.dst || r.bytes == 0) return;
  // The packets NetworkInterface::local_take cuts: whole packets, then the rest.
  const auto flits_of = [this](std::uint64_t payload) {
    return (payload + header_bytes_ + flit_bytes_ - 1) / flit_bytes_;
  };
  const std::uint64_t whole = r.bytes / packet_bytes_, rest = r.bytes % packet_bytes_;
  const std::uint64_t packets = whole + (rest > 0 ? 1 : 0);
  const std::uint64_t flits = whole * flits_of(packet_bytes_) + (rest > 0 ? flits_of(rest) : 0);
  // Per-flow hashing, as every router routes the transfer's packets (per-packet spreading is
  // charged on the per-flow route, as the flow network does).
  const std::uint64_t key = route_key(r.flow, route_salt_);
  const auto& routes = topo_.routes();
  topo::NodeId at = topo_.chip_node(r.src);
  const topo::NodeId end = topo_.chip_node(r.dst);
  bool forwarded = false;  // the source's interface injects; every later node passes on
  while (at != end) {
    const topo::LinkId l = routes.next_hop(at, r.dst, key);
    routers_[at.v]->charge(l, packets, double(r.bytes), flits, forwarded);
    forwarded = true;
    at = topo_.other_end(l, at);
  }
}

Bandwidth Fabric::injection_bandwidth(topo::ChipId c) const {
  Bandwidth b{};
  for (const auto l : topo_.incident(topo_.chip_node(c))) b = b + topo_.link(l).bandwidth;
  return b;
}

void Fabric::finish(const sc_core::sc_time& end) {
  for (auto& r : routers_) r->finish(end);
  for (auto& l : links_) {
    l->direction(0).finish(end);
    l->direction(1).finish(end);
  }
}

NetworkTotals Fabric::totals() const {
  NetworkTotals t;
  t.transfers_started = started_;
  t.transfers_completed = completed_;
  t.bytes_requested = requested_;
  t.bytes_injected = shared_.bytes_injected;
  t.bytes_delivered = shared_.bytes_delivered;
  t.packets_injected = shared_.packets_injected;
  t.packets_delivered = shared_.packets_delivered;
  t.packets_in_flight = shared_.pool.live();
  for (const auto& r : routers_) t.events += r->events();
  for (const auto& l : links_) {
    t.events += l->events();
    for (int d = 0; d < 2; ++d) {
      t.wire_bytes += l->direction(d).wire_bytes();
      t.credit_stall_ns += l->direction(d).stall_ns();
    }
  }
  return t;
}

}  // namespace trnsim::model
