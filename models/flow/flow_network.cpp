// SPDX-License-Identifier: MIT
#include "flow/flow_network.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "common/seed_salt.hpp"
#include "trnsim/error.hpp"

namespace trnsim::model {

namespace {

std::string module_name(std::string s) {
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

// Arrivals of a merged flow's pieces posted at most (the last one its completion): the cost of
// a transfer must not grow with its pieces.
constexpr std::uint32_t kPieceDeliveries = 16;

// The latest tick the network schedules an event at: 2^62, 53 days at the kernel's default
// resolution of 1 ps, below the run's limit (model::kLastRunTick, 2^63), so a transfer that would
// end later is this network's error, naming it. StaleTimes buckets a time by the highest bit in
// which it differs from now, so every time stays below 2^63.
constexpr std::uint64_t kLastTick = std::uint64_t(1) << 62;

// The smallest sc_time not before `s` seconds: an event at it finds the flow's bytes all sent.
// `res`: the kernel's time resolution in seconds. A time past kLastTick (a flow held to a
// recomputation's floor rate, whose drain a later recomputation moves) is kLastTick.
sc_core::sc_time ceil_time(double s, double res) {
  const double ticks = std::ceil(s / res - 1e-6);
  if (!(ticks < double(kLastTick))) return sc_core::sc_time::from_value(kLastTick);
  return sc_core::sc_time::from_value(std::uint64_t(std::max(0.0, ticks)));
}

// A binary heap whose entries know their index (`place(entry, index)` records it), ordered by
// `before`: the entry at `i` moved towards the root, or towards the leaves, to its place. The
// network's two heaps (its flows' events, a recomputation's shares) update entries in place.
template <class T, class Place>
void heap_up(std::vector<T>& h, std::uint32_t i, Place place) {
  const T e = h[i];
  while (i > 0) {
    const std::uint32_t up = (i - 1) / 2;
    if (!e.before(h[up])) break;
    h[i] = h[up];
    place(h[i], i);
    i = up;
  }
  h[i] = e;
  place(e, i);
}

template <class T, class Place>
void heap_down(std::vector<T>& h, std::uint32_t i, Place place) {
  const T e = h[i];
  const std::uint32_t n = std::uint32_t(h.size());
  for (;;) {
    std::uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && h[c + 1].before(h[c])) ++c;
    if (!h[c].before(e)) break;
    h[i] = h[c];
    place(h[i], i);
    i = c;
  }
  h[i] = e;
  place(e, i);
}

}  // namespace

// Times at or after the last one passed (a radix heap keyed by the current time): inserting
// appends to the bucket of the highest bit in which the time differs from now; advancing to a
// later now empties the buckets below that bit's and moves the rest of its bucket down. Each
// time moves at most 64 times and never through a cache-missing heap of millions (16 M replaced
// drains on the 144-rank trace).
class FlowNetwork::StaleTimes {
 public:
  bool empty() const { return mask_ == 0; }
  std::uint64_t min() const { return min_[std::size_t(std::countr_zero(mask_))]; }
  void push(std::uint64_t t) {
    if (t < last_) throw InternalError("FlowNetwork: a replaced event before now");
    const std::size_t b = std::size_t(std::bit_width(t ^ last_));
    if (b >= bucket_.size()) throw InternalError("FlowNetwork: an event time past 2^63 ticks");
    if (!(mask_ >> b & 1)) {
      mask_ |= std::uint64_t(1) << b;
      min_[b] = t;
    } else {
      min_[b] = std::min(min_[b], t);
    }
    bucket_[b].push_back(t);
  }
  // Drops every time not after `now` (now not before the last one passed); returns how many.
  std::uint64_t advance(std::uint64_t now) {
    const std::size_t hb = std::size_t(std::bit_width(now ^ last_));
    std::uint64_t dropped = 0;
    // Below bucket hb every time agrees with now above bit hb - 1 and is smaller there.
    for (std::uint64_t m = mask_ & ((std::uint64_t(2) << hb) - 1); m != 0; m &= m - 1) {
      const std::size_t b = std::size_t(std::countr_zero(m));
      if (b == hb && hb > 0) break;
      dropped += bucket_[b].size();
      bucket_[b].clear();
      mask_ &= ~(std::uint64_t(1) << b);
    }
    last_ = now;
    if (hb == 0 || !(mask_ >> hb & 1)) return dropped;
    // Bucket hb: the times after now go to lower buckets, by their highest bit apart from now.
    std::vector<std::uint64_t> moving;
    moving.swap(bucket_[hb]);
    mask_ &= ~(std::uint64_t(1) << hb);
    for (const std::uint64_t t : moving) {
      if (t <= now) {
        ++dropped;
      } else {
        push(t);
      }
    }
    moving.clear();
    moving.swap(bucket_[hb]);  // keep its storage
    return dropped;
  }

 private:
  std::array<std::vector<std::uint64_t>, 64> bucket_;
  std::array<std::uint64_t, 64> min_{};
  std::uint64_t mask_ = 0;  // bit b: bucket b holds times
  std::uint64_t last_ = 0;
};

struct FlowNetwork::Flow {
  std::shared_ptr<TransferState> t;
  std::vector<std::uint32_t> path;  // link directions
  std::vector<std::uint32_t> pos;   // index of this flow in each direction's list
  std::vector<std::uint32_t> input;  // arbiter-fair sharing: its input at each direction
  std::vector<topo::NodeId> via;    // nodes passed through (not the ends)
  double wire = 0;       // bytes on the wire: whole flits of every packet, headers included
  double remaining = 0;  // wire bytes not yet sent, over `efficiency`
  double efficiency = 1;  // of the links for its pattern (FabricPlan::flow_efficiency)
  double rate = 0;       // wire bytes per second
  double since = 0;      // time (s) `remaining` was last brought up to date
  double bottleneck = 0;  // lowest capacity on the path, wire bytes per second
  double weight = 1;      // pieces it stands for: its max-min share counts that many times
  // Pieces that arrive one after another (TransferState::on_pieces). The packet fabric's
  // transfers that share an output take packets in turn, so the pieces of a step, started
  // together on one route, all send their last packet in the last round: one piece arrives per
  // packet time of that round, and a receiver reduces the first while the others arrive. `tail`
  // is the remaining (wire bytes over efficiency) of one piece's last packet; piece k of n has
  // arrived when (n - k) tails remain. The arrivals are posted in `deliveries` batches (at most
  // kPieceDeliveries, the last the completion), `delivered` of them so far; `milestone` is the
  // remaining at which the next is due (0: the end).
  std::uint32_t pieces = 1, deliveries = 0, delivered = 0;
  double tail = 0, milestone = 0;
  double old_rate = 0;   // its rate before the recomputation under way
  bool active = false;
  std::uint32_t lane_at = 0;   // the packet lane: the hop its head has reached
  std::uint64_t lane_tail = 0;  // and the earliest its tail can leave that hop (ticks)
  bool drain_posted = false;  // a drain event for its current rate is in the heap
  sc_core::sc_time fixed;       // per-hop latency terms
  sc_core::sc_time ready;       // the source has read the data (memory)
  sc_core::sc_time written;     // the destination memory has taken it
  sc_core::sc_time link, switching, forwarding;
};

FlowLinkDirection::FlowLinkDirection(const sc_core::sc_module_name& name, Bandwidth bw,
                                     EnergyPerBit dyn, Power idle)
    : Block(name),
      s_bytes_(stats().add(FlowLinkDirectionStats::bytes)),
      s_wire_(stats().add(FlowLinkDirectionStats::wire_bytes)),
      s_busy_(stats().add(FlowLinkDirectionStats::busy)),
      s_util_(stats().add(FlowLinkDirectionStats::utilisation)),
      s_flows_(stats().add(FlowLinkDirectionStats::flows)),
      dyn_(dyn) {
  (void)bw;
  set_static_power(idle);
}

FlowNode::FlowNode(const sc_core::sc_module_name& name, EnergyPerBit energy, Power idle, bool chip)
    : Block(name),
      s_bytes_(stats().add(FlowNodeStats::bytes_forwarded)),
      energy_(energy),
      action_(chip ? Action::chip_forwarding : Action::switch_) {
  set_static_power(idle);
}

FlowNetwork::FlowNetwork(const sc_core::sc_module_name& name, const topo::Topology& topo,
                         const resolve::FabricPlan& plan, std::vector<MemoryPort*> memories)
    : Block(name),
      topo_(topo),
      plan_(plan),
      memories_(std::move(memories)),
      stale_(std::make_unique<StaleTimes>()),
      overhead_(to_sc(plan.params.endpoint_overhead)),
      resolution_s_(sc_core::sc_get_time_resolution().to_seconds()),
      coupled_(plan.params.flow_contention == config::FlowContention::coupled),
      arbiter_(plan.params.flow_contention == config::FlowContention::arbiter),
      lane_(plan.params.flow_packets == config::FlowPackets::lane),
      relay_memory_(plan.params.chip_relay == config::ChipRelay::memory),
      route_salt_(seed_salt(plan.seed, kRouteTag, 0)),
      s_transfers_(stats().add(FlowNetworkStats::transfers)),
      s_bytes_(stats().add(FlowNetworkStats::bytes_delivered)),
      s_recomputations_(stats().add(FlowNetworkStats::rate_recomputations)),
      s_max_flows_(stats().add(FlowNetworkStats::max_flows)) {
  if (!memories_.empty() && memories_.size() != topo.chip_count()) {
    throw InternalError(fmt::format("FlowNetwork: {} memories for {} chips", memories_.size(),
                                    topo.chip_count()));
  }
  const double idle = plan.link_idle_fraction;
  const auto& links = topo.links();
  dirs_.resize(2 * links.size());
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    if (!(l.bandwidth.si > 0)) throw InternalError("FlowNetwork: a link without bandwidth");
    for (std::uint32_t d = 0; d < 2; ++d) {
      Dir& dir = dirs_[2 * i + d];
      dir.capacity = l.bandwidth.si;
      dir.latency = to_sc(l.latency);
      dir.flit_time = to_sc(Duration(double(plan.flit_bytes) / l.bandwidth.si));
    }
  }
  // As the packet fabric names them: link<i>.to_<node>, each direction a Block.
  for (std::uint32_t i = 0; i < links.size(); ++i) {
    const auto& l = links[i];
    struct LinkModule : sc_core::sc_module {
      LinkModule(const sc_core::sc_module_name& n, FlowNetwork& net, const topo::Link& l,
                 std::uint32_t i, double idle)
          : sc_core::sc_module(n) {
        for (int d = 0; d < 2; ++d) {
          const topo::NodeId to = d == 0 ? l.b : l.a;
          const Power idle_power(idle * l.energy.si * 8.0 * l.bandwidth.si);
          dirs[std::size_t(d)] = std::make_unique<FlowLinkDirection>(
              ("to_" + module_name(net.topo_.node(to).name)).c_str(), l.bandwidth,
              l.energy * (1.0 - idle), idle_power);
          net.dirs_[2 * i + std::uint32_t(d)].block = dirs[std::size_t(d)].get();
        }
      }
      std::array<std::unique_ptr<FlowLinkDirection>, 2> dirs;
    };
    link_modules_.push_back(
        std::make_unique<LinkModule>(fmt::format("link{}", i).c_str(), *this, l, i, idle));
  }
  const auto& nodes = topo.nodes();
  nodes_.resize(nodes.size());
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    const auto& node = nodes[n];
    if (!node.forwards) continue;
    const bool chip = node.kind == topo::NodeKind::chip;
    nodes_[n] = std::make_unique<FlowNode>(module_name(node.name).c_str(), node.energy,
                                           chip ? Power{} : node.idle_power, chip);
  }
  SC_METHOD(fire);
  sensitive << wake_;
  dont_initialize();
}

FlowNetwork::~FlowNetwork() = default;

std::uint32_t FlowNetwork::new_flow() {
  if (!free_flows_.empty()) {
    const std::uint32_t f = free_flows_.back();
    free_flows_.pop_back();
    *flows_[f] = Flow{};  // its last event was its completion: none is pending
    flow_mark_[f] = 0;
    return f;
  }
  flows_.push_back(std::make_unique<Flow>());
  heap_slot_.push_back(kNoSlot);
  flow_mark_.push_back(0);
  return std::uint32_t(flows_.size() - 1);
}

void FlowNetwork::schedule(const sc_core::sc_time& t, Kind k, std::uint32_t flow) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const sc_core::sc_time at = t > now ? t : now;
  const Event e{at.value(), seq_++, flow, k};
  std::uint32_t i = heap_slot_[flow];
  if (i == kNoSlot) {
    i = std::uint32_t(heap_.size());
    heap_.push_back(e);
    heap_slot_[flow] = i;
    sift_up(i);
  } else {
    // The flow's pending event is replaced (a drain at an old rate): a later key sifts down.
    stale_->push(heap_[i].time);
    const bool earlier = e.before(heap_[i]);
    heap_[i] = e;
    if (earlier) {
      sift_up(i);
    } else {
      sift_down(i);
    }
  }
  wake_.notify(at - now);  // the kernel keeps the earliest notification
}

void FlowNetwork::sift_up(std::uint32_t i) {
  heap_up(heap_, i, [this](const Event& e, std::uint32_t at) { heap_slot_[e.flow] = at; });
}

void FlowNetwork::sift_down(std::uint32_t i) {
  heap_down(heap_, i, [this](const Event& e, std::uint32_t at) { heap_slot_[e.flow] = at; });
}

void FlowNetwork::pop_event() {
  heap_slot_[heap_.front().flow] = kNoSlot;
  const Event last = heap_.back();
  heap_.pop_back();
  if (heap_.empty()) return;
  heap_[0] = last;
  sift_down(0);
}

sc_core::sc_time FlowNetwork::memory_pass(MemoryPort* m, std::uint64_t addr, std::uint64_t bytes,
                                          bool write) const {
  sc_core::sc_time done = sc_core::sc_time_stamp();
  if (!m || bytes == 0) return done;
  // At most 16 requests per transfer (at least 1 MiB each): memory models expect bounded
  // requests, and the cost must not grow with bytes.
  const std::uint64_t piece = std::max<std::uint64_t>(1 << 20, (bytes + 15) / 16);
  for (std::uint64_t off = 0; off < bytes; off += piece) {
    done = std::max(done, m->access({addr + off, std::min(piece, bytes - off), write}));
  }
  return done;
}

void FlowNetwork::wire_of(const TransferRequest& r, Flow& f) const {
  // The packets the packet fabric would cut: whole flits, each with its header.
  const std::uint64_t pb = plan_.packet_bytes, fb = plan_.flit_bytes, hb = plan_.header_bytes;
  const std::uint64_t full = r.bytes / pb, rest = r.bytes % pb;
  const auto flits = [&](std::uint64_t payload) { return (payload + hb + fb - 1) / fb; };
  double wire = double(full) * double(flits(pb) * fb);
  if (rest > 0 || full == 0) wire += double(flits(rest) * fb);
  f.wire = f.remaining = wire;
}

void FlowNetwork::terms_of(Flow& f) const {
  f.bottleneck = std::numeric_limits<double>::infinity();
  sc_core::sc_time fixed = sc_core::SC_ZERO_TIME;
  for (std::size_t h = 0; h < f.path.size(); ++h) {
    const Dir& dir = dirs_[f.path[h]];
    f.bottleneck = std::min(f.bottleneck, dir.capacity);
    f.link += dir.latency;
    fixed += dir.latency;
    if (h > 0) fixed += dir.flit_time;  // cut-through: one flit per extra hop
  }
  for (const topo::NodeId at : f.via) {
    const auto& node = topo_.node(at);
    const sc_core::sc_time pass = to_sc(node.latency);
    fixed += pass;
    (node.kind == topo::NodeKind::chip ? f.forwarding : f.switching) += pass;
  }
  f.fixed = fixed;
}

template <typename Hop, typename Via>
void FlowNetwork::walk_route(const TransferRequest& r, Hop&& hop, Via&& via) const {
  topo::NodeId at = topo_.chip_node(r.src);
  const topo::NodeId end = topo_.chip_node(r.dst);
  const std::uint64_t key = route_key(r.flow, route_salt_);
  while (at != end) {
    const topo::LinkId l = topo_.routes().next_hop(at, r.dst, key);
    hop(2 * l.v + (topo_.link(l).a == at ? 0u : 1u));
    at = topo_.other_end(l, at);
    if (at != end) via(at);
  }
}

void FlowNetwork::trace_route(const TransferRequest& r, Flow& f) const {
  wire_of(r, f);
  f.bottleneck = std::numeric_limits<double>::infinity();
  sc_core::sc_time fixed = sc_core::SC_ZERO_TIME;
  bool first = true;
  walk_route(
      r,
      [&](std::uint32_t d) {
        f.path.push_back(d);
        const Dir& dir = dirs_[d];
        f.bottleneck = std::min(f.bottleneck, dir.capacity);
        f.link += dir.latency;
        fixed += dir.latency;
        if (!first) fixed += dir.flit_time;  // cut-through: one flit per extra hop
        first = false;
      },
      [&](topo::NodeId at) {
        const auto& node = topo_.node(at);
        const sc_core::sc_time pass = to_sc(node.latency);
        fixed += pass;
        (node.kind == topo::NodeKind::chip ? f.forwarding : f.switching) += pass;
        f.via.push_back(at);
      });
  f.fixed = fixed;
}

TransferHandle FlowNetwork::start(const TransferRequest& r,
                                  std::function<void(const TransferRecord&)> on_done) {
  auto s = new_transfer(r, topo_.chip_count(), std::move(on_done));
  const std::uint32_t id = new_flow();
  Flow& f = *flows_[id];
  f.t = s;
  f.weight = double(std::max<std::uint32_t>(1, r.pieces));
  trace_route(r, f);
  return launch(id);
}

TransferHandle FlowNetwork::start_on_path(const TransferRequest& r, const topo::DirectedPath& p,
                                          std::function<void(const TransferRecord&)> on_done) {
  if (r.src.v >= topo_.chip_count() || r.dst.v >= topo_.chip_count() || p.dirs.empty()) {
    throw InternalError(fmt::format("start_on_path: transfer {} -> {} on a path of {} links",
                                    r.src.v, r.dst.v, p.dirs.size()));
  }
  auto s = std::make_shared<TransferState>();
  s->record.request = r;
  s->record.issued = sc_core::sc_time_stamp();
  s->on_done = std::move(on_done);
  const std::uint32_t id = new_flow();
  Flow& f = *flows_[id];
  f.t = s;
  f.weight = double(std::max<std::uint32_t>(1, r.pieces));
  wire_of(r, f);
  f.path = p.dirs;
  f.via = p.via;
  terms_of(f);
  return launch(id);
}

TransferHandle FlowNetwork::launch(std::uint32_t id) {
  Flow& f = *flows_[id];
  const std::shared_ptr<TransferState>& s = f.t;
  const TransferRequest& r = s->record.request;
  s->packets_total = r.bytes / plan_.packet_bytes +
                     (r.bytes % plan_.packet_bytes > 0 || r.bytes < plan_.packet_bytes ? 1 : 0);
  f.pos.assign(f.path.size(), 0);
  // A pattern the packet fabric was measured to carry at a fraction of the links' bandwidth
  // (tree saturation, credit stalls) holds its links for its wire bytes over that fraction.
  f.efficiency = r.pattern < plan_.flow_efficiency.size() ? plan_.flow_efficiency[r.pattern] : 1.0;
  if (!(f.efficiency > 0)) {
    throw InternalError(fmt::format("FlowNetwork: efficiency {} of pattern {}", f.efficiency,
                                    int(r.pattern)));
  }
  f.remaining = f.wire / f.efficiency;
  ++started_;
  requested_ += r.bytes;
  schedule(sc_core::sc_time_stamp() + overhead_, Kind::activate, id);
  return TransferHandle(s);
}

void FlowNetwork::charge(const Flow& f, std::uint64_t bytes) {
  for (const std::uint32_t d : f.path) {
    FlowLinkDirection& b = *dirs_[d].block;
    b.s_bytes_ += double(bytes);
    b.s_wire_ += f.wire;
    b.s_busy_ += f.wire / dirs_[d].capacity;
    b.s_flows_ += 1;
    // Through the meter: a lookup by name per hop was a tenth of a fast-forwarded run.
    if (!b.meter_) b.meter_ = &b.meter(Action::link, per_byte(b.dyn_));
    b.meter_->count(f.wire);
  }
  for (const topo::NodeId n : f.via) {
    FlowNode* node = nodes_[n.v].get();
    if (!node) continue;
    node->s_bytes_ += double(bytes);
    if (!node->meter_) node->meter_ = &node->meter(node->action_, per_byte(node->energy_));
    node->meter_->count(f.wire);
  }
  wire_ += f.wire * double(f.path.size());
}

Energy FlowNetwork::dynamic_unmetered(const PowerModel& power, const sc_core::sc_time& t) const {
  const double now = t.to_seconds();
  Energy e{};
  for (const auto& fp : flows_) {
    const Flow& f = *fp;
    if (!f.active || !f.t) continue;
    const double left = std::max(0.0, f.remaining - f.rate * std::max(0.0, now - f.since));
    const double sent = f.wire - left * f.efficiency;
    if (!(sent > 0)) continue;
    for (const std::uint32_t d : f.path) {
      const FlowLinkDirection& b = *dirs_[d].block;
      const double j = per_byte(b.dyn_);
      e = e + power.dynamic(b, Action::link, {sent, sent * j, j});
    }
    for (const topo::NodeId n : f.via) {
      const FlowNode* node = nodes_[n.v].get();
      if (!node) continue;
      const double j = per_byte(node->energy_);
      e = e + power.dynamic(*node, node->action_, {sent, sent * j, j});
    }
  }
  return e;
}

void FlowNetwork::account(const TransferRequest& r) {
  if (r.src == r.dst || r.bytes == 0) return;
  // Only what charge() reads (the route and the wire bytes), in a flow whose route vectors keep
  // their storage: fast-forward accounts hundreds of thousands of transfers.
  if (!account_flow_) account_flow_ = std::make_unique<Flow>();
  Flow& f = *account_flow_;
  f.path.clear();
  f.via.clear();
  wire_of(r, f);
  walk_route(r, [&f](std::uint32_t d) { f.path.push_back(d); },
             [&f](topo::NodeId at) { f.via.push_back(at); });
  charge(f, r.bytes);
  accounted_ += r.bytes;
}

void FlowNetwork::fire() {
  if (error_) return;  // stopped by an error: sc_start() returns, the caller rethrows it
  try {
    fire_events();
  } catch (...) {
    // SystemC would report an exception out of a process as its own, untyped: keep it whole.
    error_ = std::current_exception();
    sc_core::sc_stop();
  }
}

void FlowNetwork::rethrow_error() const {
  if (error_) std::rethrow_exception(error_);
}

void FlowNetwork::fire_events() {
  activity_.count(Activity::link);
  const std::uint64_t now = sc_core::sc_time_stamp().value();
  events_ += stale_->advance(now);
  for (;;) {
    // The earliest of the flows' pending events and the pieces' arrivals, by (time, seq).
    const bool event = !heap_.empty() && heap_.front().time <= now;
    const bool piece = !pieces_.empty() && pieces_.top().time <= now;
    if (!event && !piece) break;
    ++events_;
    if (piece && (!event || pieces_.top().seq < heap_.front().seq)) {
      const PieceEvent p = pieces_.top();
      pieces_.pop();
      const auto& t = flows_[p.flow]->t;
      if (t && t->on_pieces) t->on_pieces(p.arrived);
      continue;
    }
    const Event e = heap_.front();
    pop_event();
    switch (e.kind) {
      case Kind::piece: throw InternalError("FlowNetwork: a piece event among the flows' events");
      case Kind::activate: activate(e.flow); break;
      case Kind::drained: drained(e.flow); break;
      case Kind::complete: complete(e.flow); break;
      case Kind::lane: lane_hop(e.flow); break;
    }
  }
  if (!changed_.empty()) recompute();
  // The earliest event, replaced or not (see stale_).
  std::uint64_t next = ~std::uint64_t(0);
  if (!heap_.empty()) next = heap_.front().time;
  if (!stale_->empty()) next = std::min(next, stale_->min());
  if (!pieces_.empty()) next = std::min(next, pieces_.top().time);
  if (next != ~std::uint64_t(0)) wake_.notify(sc_core::sc_time::from_value(next - now));
}

void FlowNetwork::activate(std::uint32_t id) {
  Flow& f = *flows_[id];
  const auto& req = f.t->record.request;
  f.t->started = sc_core::sc_time_stamp();
  // The source reads and the destination writes the payload; both are reserved now (the memory
  // models serve first come first served), and the transfer cannot complete before they are done.
  MemoryPort* src = memories_.empty() ? nullptr : memories_[req.src.v];
  MemoryPort* dst = memories_.empty() ? nullptr : memories_[req.dst.v];
  f.ready = memory_pass(src, req.src_addr, req.bytes, false);
  f.written = memory_pass(dst, req.dst_addr, req.bytes, true);
  if (relay_memory_ && !memories_.empty()) {
    // A chip that relays through its memory (rack.fabric.chip_relay memory) writes the payload
    // to its HBM and reads it back to send it on, as the packet fabric's relay does
    // (NetworkInterface::relay_store, at the address the destination will hold it); the
    // transfer cannot complete before both are done. Its links are not held back meanwhile:
    // the flow network has no buffers to fill.
    for (const topo::NodeId n : f.via) {
      const auto& chip = topo_.node(n).chip;
      if (!chip) continue;
      MemoryPort* relay = memories_[chip->v];
      f.written = std::max(f.written, memory_pass(relay, req.dst_addr, req.bytes, true));
      f.written = std::max(f.written, memory_pass(relay, req.dst_addr, req.bytes, false));
    }
  }
  if (lane_ && req.pieces <= 1 && req.bytes <= plan_.packet_bytes && !f.path.empty() &&
      f.via.size() + 1 == f.path.size()) {
    f.lane_at = 0;
    f.lane_tail = 0;
    lane_hop(id);
    return;
  }
  f.deliveries = f.delivered = 0;
  f.milestone = 0;
  if (req.pieces > 1 && f.t->on_pieces) {
    const std::uint64_t pb = plan_.packet_bytes, fb = plan_.flit_bytes, hb = plan_.header_bytes;
    const std::uint64_t piece = (req.bytes + req.pieces - 1) / req.pieces;
    const std::uint64_t last = piece % pb == 0 ? std::min(piece, pb) : piece % pb;
    f.pieces = req.pieces;
    f.tail = double((last + hb + fb - 1) / fb * fb) / f.efficiency;
    f.deliveries = std::min(f.pieces, kPieceDeliveries);
    f.milestone = double(f.pieces - pieces_after(f, 1)) * f.tail;
  }
  f.active = true;
  f.since = sc_core::sc_time_stamp().to_seconds();
  for (std::size_t h = 0; h < f.path.size(); ++h) {
    Dir& d = dirs_[f.path[h]];
    f.pos[h] = std::uint32_t(d.flows.size());
    d.flows.push_back(id);
  }
  if (arbiter_) {
    // Its input at each direction: the direction before it, or the chip's own transfers (a
    // node has few ports, so a search of the inputs seen so far is short).
    f.input.assign(f.path.size(), 0);
    for (std::size_t h = 0; h < f.path.size(); ++h) {
      auto& ins = dirs_[f.path[h]].inputs;
      const std::uint32_t from = h == 0 ? kLocal : f.path[h - 1];
      std::size_t i = 0;
      while (i < ins.size() && ins[i].from != from) ++i;
      if (i == ins.size()) ins.push_back(Input{from});
      ++ins[i].flows;
      f.input[h] = std::uint32_t(i);
    }
  }
  ++active_;
  max_flows_ = std::max(max_flows_, active_);
  injected_ += req.bytes;
  for (const std::uint32_t d : f.path) changed_.push_back(d);
}

// A one-packet transfer on the packet lane, at the arrival of its head at hop `lane_at`: each
// link direction sends the packets that reach it in order of arrival (ties in the order they
// were posted), at its full rate over the pattern's efficiency (as a flow drains), and never
// sends two at once. Cut through, as the packet fabric's switches: the head reaches the next
// node a flit and the link's latency after it started, and moves on after the node's traversal;
// the tail leaves the next link no earlier than a flit of it after it arrived (a packet from a
// slower link leaves at that link's rate, unless the traversal has let it catch up). The lane
// and the flows do not see each other's load on a link they share (docs/models/fidelity.md,
// "One-packet transfers").
void FlowNetwork::lane_hop(std::uint32_t id) {
  Flow& f = *flows_[id];
  const auto& req = f.t->record.request;
  const std::uint64_t now = sc_core::sc_time_stamp().value();
  const std::size_t h = f.lane_at;
  Dir& d = dirs_[f.path[h]];
  const double serial_ticks = f.remaining / d.capacity / resolution_s_;
  const std::uint64_t s = std::max(now, d.lane_free);
  const bool last = h + 1 == f.path.size();
  // From its start here to its head's start at the next hop, and from its tail's end here to the
  // earliest its tail can end there (or, at the last hop, arrive).
  const std::uint64_t pass =
      last ? d.latency.value()
           : d.flit_time.value() + d.latency.value() + to_sc(topo_.node(f.via[h]).latency).value();
  const std::uint64_t follow =
      last ? d.latency.value() : d.latency.value() + dirs_[f.path[h + 1]].flit_time.value();
  if (!(double(s) + serial_ticks + double(pass + follow) < double(kLastTick)) ||
      f.lane_tail >= kLastTick - pass - follow) {
    throw WorkloadError(fmt::format(
        "flow network: the packet of {} B from chip {} to chip {} would leave hop {} of its "
        "route past {:.3g} s, the last time the network simulates (2^62 ticks); expected every "
        "transfer to end before: check the link bandwidths and the transfer's size",
        req.bytes, req.src.v, req.dst.v, h + 1, double(kLastTick) * resolution_s_));
  }
  const auto serial = std::uint64_t(std::ceil(serial_ticks - 1e-9));
  d.lane_free = s + serial;
  const std::uint64_t tail = std::max(s + serial, f.lane_tail);
  if (!last) {
    f.lane_tail = tail + follow;
    f.lane_at = std::uint32_t(h + 1);
    schedule(sc_core::sc_time::from_value(s + pass), Kind::lane, id);
    return;
  }
  charge(f, req.bytes);  // statistics and energy of the wire bytes, per hop
  injected_ += req.bytes;
  const sc_core::sc_time end = sc_core::sc_time::from_value(tail + follow);
  schedule(std::max({end, f.ready + f.fixed, f.written}) + overhead_, Kind::complete, id);
}

void FlowNetwork::detach(std::uint32_t id) {
  Flow& f = *flows_[id];
  for (std::size_t h = 0; h < f.path.size(); ++h) {
    Dir& d = dirs_[f.path[h]];
    const std::uint32_t p = f.pos[h];
    const std::uint32_t last = d.flows.back();
    d.flows[p] = last;
    d.flows.pop_back();
    if (last != id) {
      // The moved flow's position on this direction (a flow crosses a direction once).
      Flow& m = *flows_[last];
      for (std::size_t k = 0; k < m.path.size(); ++k) {
        if (m.path[k] == f.path[h]) m.pos[k] = p;
      }
    }
    d.used -= f.rate;
    if (d.flows.empty()) d.used = 0;  // no rounding residue on an idle link
    if (arbiter_) {
      Input& in = d.inputs[f.input[h]];
      in.used -= f.rate;
      if (--in.flows == 0) in.used = 0;
    }
  }
  f.active = false;
  --active_;
}

std::uint32_t FlowNetwork::pieces_after(const Flow& f, std::uint32_t j) {
  return std::uint32_t(std::uint64_t(j) * f.pieces / f.deliveries);
}

void FlowNetwork::piece_arrived(std::uint32_t id) {
  Flow& f = *flows_[id];
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const double now_s = now.to_seconds();
  f.remaining = f.milestone;
  f.since = now_s;
  const std::uint32_t got = pieces_after(f, ++f.delivered);
  f.milestone = f.delivered + 1 < f.deliveries
                    ? double(f.pieces - pieces_after(f, f.delivered + 1)) * f.tail
                    : 0.0;
  // As at the completion: the fixed terms, and the share of the source read and the
  // destination write (reserved at the start, served in order) of the pieces arrived.
  const double share = double(got) / double(f.pieces);
  const sc_core::sc_time start = f.t->started;
  const sc_core::sc_time read = start + (f.ready > start ? (f.ready - start) * share : sc_core::SC_ZERO_TIME);
  const sc_core::sc_time written =
      start + (f.written > start ? (f.written - start) * share : sc_core::SC_ZERO_TIME);
  const sc_core::sc_time arrive = std::max({now + f.fixed, read + f.fixed, written}) + overhead_;
  pieces_.push(PieceEvent{std::max(arrive, now).value(), seq_++, id, got});
  wake_.notify(std::max(arrive, now) - now);
  schedule(std::max(now, ceil_time(now_s + std::max(0.0, f.remaining - f.milestone) / f.rate,
                                   resolution_s_)),
           Kind::drained, id);
}

void FlowNetwork::drained(std::uint32_t id) {
  Flow& f = *flows_[id];
  const auto& req = f.t->record.request;
  // At kLastTick, the wire bytes it has left (to the end, past its next piece's milestone too).
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const double left =
      now.value() < kLastTick ? 0.0 : f.remaining - f.rate * (now.to_seconds() - f.since);
  if (left - f.milestone > 1) {
    // Its drain was put at kLastTick, not at its end: the end is past what the network times.
    throw WorkloadError(fmt::format(
        "flow network: the transfer of {} B from chip {} to chip {} has {:.3g} B left on the wire "
        "at {:.3g} s, the last time the network simulates (2^62 ticks), at its rate of {:.3g} "
        "B/s; expected every transfer to end before: check the link bandwidths and the "
        "transfer's size",
        req.bytes, req.src.v, req.dst.v, left, now.to_seconds(), f.rate));
  }
  if (f.delivered + 1 < f.deliveries) {  // a piece's arrival, not the end
    piece_arrived(id);
    return;
  }
  charge(f, req.bytes);  // statistics and energy of the wire bytes, per hop
  detach(id);
  f.remaining = 0;
  for (const std::uint32_t d : f.path) changed_.push_back(d);
  sc_core::sc_time arrive = now + f.fixed;
  arrive = std::max({arrive, f.ready + f.fixed, f.written});
  schedule(arrive + overhead_, Kind::complete, id);
}

void FlowNetwork::complete(std::uint32_t id) {
  Flow& f = *flows_[id];
  std::shared_ptr<TransferState> t = std::move(f.t);
  auto& rec = t->record;
  rec.completed = sc_core::sc_time_stamp();
  rec.packets = t->packets_total;
  t->packets_delivered = t->packets_total;
  t->delivered = rec.request.bytes;
  auto& b = rec.last_packet;
  b.total = from_sc(rec.completed - rec.issued);
  b.endpoint = from_sc(overhead_ + overhead_);
  b.link = from_sc(f.link);
  b.switching = from_sc(f.switching);
  b.forwarding = from_sc(f.forwarding);
  b.hops = int(f.path.size());
  // Uncontended serialisation: the wire bytes at the slowest link, plus a flit per extra hop.
  const sc_core::sc_time extra = f.fixed - f.link - f.switching - f.forwarding;
  const Duration ser = Duration(f.wire / f.bottleneck) + from_sc(extra);
  const Duration rest = b.total - b.endpoint - b.link - b.switching - b.forwarding;
  b.serialisation = Duration(std::min(ser.si, rest.si));
  b.queueing = Duration(std::max(0.0, rest.si - b.serialisation.si));
  ++completed_;
  delivered_ += rec.request.bytes;
  packets_ += t->packets_total;
  s_transfers_ += 1;
  s_bytes_ += double(rec.request.bytes);
  free_flows_.push_back(id);
  t->finished = true;
  t->done.notify();
  if (t->on_done) t->on_done(rec);
}

// Progressive filling over the flows that share a link with a change (started or drained),
// every other flow's rate held: each round, the direction with the smallest fair share of what
// the held flows leave fixes the rate of its flows still open. With coupled contention, the
// open flows that share a receive buffer (link direction and hop) with a flow fixed at a later
// hop are fixed at its rate per piece too, and so on upstream; coupling reaches only the flows
// of the recomputation, the held ones keep their rates. With arbiter-fair sharing the
// filling is fill_arbiter's.
void FlowNetwork::recompute() {
  ++recomputations_;
  s_recomputations_ += 1;
  const std::uint64_t epoch = ++epoch_;
  const std::uint64_t open = 2 * epoch;  // flow_mark_ of a flow it holds, rate not yet fixed
  const double now = sc_core::sc_time_stamp().to_seconds();
  // Scratch kept between calls: a recomputation allocates nothing once the vectors have grown.
  std::vector<std::uint32_t>& set = scratch_set_;
  std::vector<std::uint32_t>& dirs = scratch_dirs_;
  set.clear();
  dirs.clear();
  auto take_dir = [&](std::uint32_t d) {
    if (dirs_[d].seen == epoch) return;
    dirs_[d].seen = epoch;
    dirs.push_back(d);
  };
  for (const std::uint32_t d : changed_) take_dir(d);
  changed_.clear();
  // The flows on the changed directions; then every direction they cross.
  for (std::size_t i = 0, n = dirs.size(); i < n; ++i) {
    for (const std::uint32_t f : dirs_[dirs[i]].flows) {
      std::uint64_t& m = flow_mark_[f];
      if (m >= open) continue;
      m = open;
      set.push_back(f);
    }
  }
  std::sort(set.begin(), set.end());  // deterministic order, whatever the list order
  for (const std::uint32_t f : set) {
    for (const std::uint32_t d : flows_[f]->path) take_dir(d);
  }
  for (const std::uint32_t d : dirs) {
    Dir& dir = dirs_[d];
    dir.residual = dir.capacity - dir.used;
    dir.unfrozen = 0;
    dir.unfrozen_weight = 0;
    for (Input& in : dir.inputs) {
      in.open = 0;
      in.open_weight = 0;
    }
  }
  for (const std::uint32_t f : set) {
    Flow& fl = *flows_[f];
    fl.remaining = std::max(0.0, fl.remaining - fl.rate * (now - fl.since));
    fl.since = now;
    fl.old_rate = fl.rate;
    for (const std::uint32_t d : fl.path) {
      dirs_[d].residual += fl.rate;
      dirs_[d].used -= fl.rate;
      ++dirs_[d].unfrozen;
      dirs_[d].unfrozen_weight += fl.weight;
    }
    if (arbiter_) {
      for (std::size_t h = 0; h < fl.path.size(); ++h) {
        Input& in = dirs_[fl.path[h]].inputs[fl.input[h]];
        in.used -= fl.rate;
        ++in.open;
        in.open_weight += fl.weight;
      }
    }
  }
  std::size_t left = set.size();
  if (arbiter_) {
    fill_arbiter(open, left);
  } else {
    // (share, direction) of each direction with open flows, smallest first; ties by direction id.
    // A direction's entry is updated in place when its share changes.
    std::vector<ShareEntry>& heap = scratch_heap_;
    heap.clear();
    // Per piece: a flow of weight w gets w shares.
    auto share = [&](const Dir& d) { return std::max(0.0, d.residual) / d.unfrozen_weight; };
    for (const std::uint32_t d : dirs) {
      if (dirs_[d].unfrozen == 0) continue;
      heap.push_back({share(dirs_[d]), d});
      share_up(std::uint32_t(heap.size() - 1));
    }
    while (left > 0 && !heap.empty()) {
      const ShareEntry top = heap.front();
      const double s = top.share;
      const std::uint32_t d = top.dir;
      share_remove(d);
      Dir& dir = dirs_[d];
      // A floor keeps a flow moving when rounding leaves a link a hair short.
      const double rate = std::max(s, dir.capacity * 1e-12);
      std::vector<std::uint32_t>& fix = scratch_fix_;
      fix.clear();
      for (const std::uint32_t f : dir.flows) {
        if (flow_mark_[f] == open) fix.push_back(f);
      }
      std::sort(fix.begin(), fix.end());
      std::vector<Group>& groups = scratch_groups_;
      groups.clear();
      // Fixes open flow f at `rate` per piece; with coupled contention, the groups of the hops
      // before `hop` on its path (where its packets wait for the link that limits it) follow.
      auto fix_flow = [&](std::uint32_t f, std::uint32_t hop) {
        Flow& fl = *flows_[f];
        flow_mark_[f] = open + 1;
        fl.rate = rate * fl.weight;
        --left;
        for (const std::uint32_t e : fl.path) {
          Dir& o = dirs_[e];
          o.residual -= fl.rate;
          o.used += fl.rate;
          --o.unfrozen;
          o.unfrozen_weight -= fl.weight;
          if (e == d) continue;  // out of the heap, its flows being fixed now
          if (o.unfrozen == 0) {
            share_remove(e);
            continue;
          }
          share_set(e, share(o));
        }
        if (!coupled_) return;
        for (std::uint32_t h = 0; h < hop && h < 64; ++h) {
          Dir& u = dirs_[fl.path[h]];
          if (u.coupled_epoch != epoch) {
            u.coupled_epoch = epoch;
            u.coupled_hops = 0;
          }
          const std::uint64_t bit = std::uint64_t(1) << h;
          if (u.coupled_hops & bit) continue;
          u.coupled_hops |= bit;
          groups.push_back({fl.path[h], h});
        }
      };
      for (const std::uint32_t f : fix) fix_flow(f, hop_on(*flows_[f], d));
      // Congestion spreading: a flow limited at a hop fills the receive buffer of the hop before
      // it, which every flow crossing that link direction on that hop (the same VC) shares; the
      // link passes them at one rate per piece, this one, and their own links before it back up
      // in turn. The open flows of each such group are fixed now, in flow id order.
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const Group grp = groups[g];
        fix.clear();
        for (const std::uint32_t f : dirs_[grp.dir].flows) {
          if (flow_mark_[f] != open) continue;
          const Flow& fl = *flows_[f];
          if (grp.hop < fl.path.size() && fl.path[grp.hop] == grp.dir) fix.push_back(f);
        }
        std::sort(fix.begin(), fix.end());
        for (const std::uint32_t f : fix) fix_flow(f, grp.hop);
      }
    }
  }
  const sc_core::sc_time t_now = sc_core::sc_time_stamp();
  for (const std::uint32_t f : set) {
    Flow& fl = *flows_[f];
    if (flow_mark_[f] != open + 1) throw InternalError("FlowNetwork: a flow left without a rate");
    // A flow whose rate did not change keeps its drain event: the end it predicts is the same,
    // and re-posting it for every flow of a busy link filled the event heap with stale entries.
    if (fl.drain_posted && fl.rate == fl.old_rate) continue;
    fl.drain_posted = true;
    const double left_s = std::max(0.0, fl.remaining - fl.milestone) / fl.rate;
    schedule(std::max(t_now, ceil_time(now + left_s, resolution_s_)), Kind::drained, f);
  }
}

std::uint32_t FlowNetwork::hop_on(const Flow& f, std::uint32_t dir) {
  const auto it = std::find(f.path.begin(), f.path.end(), dir);
  if (it == f.path.end()) throw InternalError("FlowNetwork: a flow listed on a direction off its path");
  return std::uint32_t(it - f.path.begin());
}

// Under arbiter-fair sharing a direction's capacity goes round robin to its inputs, and an
// input's share to its flows by pieces. An input whose flows are all fixed takes what they use;
// the open inputs split the rest equally, but an input whose fixed flows already use more than
// that keeps it (its open flows get nothing more: a rate held from an earlier recomputation).
double FlowNetwork::arbiter_level(Dir& d) {
  double rest = d.capacity;
  std::vector<double>& used = scratch_used_;
  used.clear();
  for (const Input& in : d.inputs) {
    if (in.open > 0) {
      used.push_back(in.used);
    } else {
      rest -= in.used;
    }
  }
  // The level L of the open inputs: sum over them of max(L, used) = rest.
  double level = std::max(0.0, rest) / double(used.size());
  if (*std::max_element(used.begin(), used.end()) > level) {
    std::sort(used.begin(), used.end());
    double above = 0;  // sum of the used of the inputs from k on
    level = 0;
    for (std::size_t k = used.size(); k > 0; --k) {
      const double l = (rest - above) / double(k);
      if (used[k - 1] <= l) {
        level = l;
        break;
      }
      above += used[k - 1];
    }
  }
  double low = std::numeric_limits<double>::infinity();
  for (std::uint32_t i = 0; i < d.inputs.size(); ++i) {
    const Input& in = d.inputs[i];
    if (in.open == 0) continue;
    const double l = std::max(0.0, level - in.used) / in.open_weight;
    if (l < low) {
      low = l;
      d.low_input = i;
    }
  }
  return low;
}

// Progressive filling with arbiter-fair shares: each round, the direction whose lowest open
// input has the smallest level per piece fixes that input's open flows at it. Every flow so
// fixed gets no more at any other direction it crosses (that direction's level is not lower),
// and fixing it leaves the other flows' levels no lower, so the result is the two-level fair
// allocation; each direction stays within its capacity.
void FlowNetwork::fill_arbiter(std::uint64_t open, std::size_t left) {
  std::vector<ShareEntry>& heap = scratch_heap_;
  heap.clear();
  for (const std::uint32_t d : scratch_dirs_) {
    dirs_[d].slot = kNoSlot;  // not in the heap
    if (dirs_[d].unfrozen == 0) continue;
    heap.push_back({arbiter_level(dirs_[d]), d});
    share_up(std::uint32_t(heap.size() - 1));
  }
  auto update = [&](std::uint32_t e) { share_set(e, arbiter_level(dirs_[e])); };
  std::vector<std::uint32_t>& fix = scratch_fix_;
  while (left > 0 && !heap.empty()) {
    const ShareEntry top = heap.front();
    const std::uint32_t d = top.dir;
    Dir& dir = dirs_[d];
    const std::uint32_t input = dir.low_input;
    // A floor keeps a flow moving when rounding (or a held rate) leaves it nothing.
    const double rate = std::max(top.share, dir.capacity * 1e-12);
    fix.clear();
    for (std::size_t k = 0; k < dir.flows.size(); ++k) {
      const std::uint32_t f = dir.flows[k];
      if (flow_mark_[f] != open) continue;
      const Flow& fl = *flows_[f];
      if (fl.input[hop_on(fl, d)] == input) fix.push_back(f);
    }
    if (fix.empty()) throw InternalError("FlowNetwork: an open input without open flows");
    std::sort(fix.begin(), fix.end());
    for (const std::uint32_t f : fix) {
      Flow& fl = *flows_[f];
      flow_mark_[f] = open + 1;
      fl.rate = rate * fl.weight;
      --left;
      for (std::size_t h = 0; h < fl.path.size(); ++h) {
        Dir& o = dirs_[fl.path[h]];
        Input& in = o.inputs[fl.input[h]];
        in.used += fl.rate;
        in.open_weight -= fl.weight;
        --in.open;
        o.residual -= fl.rate;
        o.used += fl.rate;
        --o.unfrozen;
        o.unfrozen_weight -= fl.weight;
      }
    }
    // The levels of the directions the fixed flows cross, d's included, each once.
    const std::uint64_t stamp = ++arbiter_rounds_;
    for (const std::uint32_t f : fix) {
      for (const std::uint32_t e : flows_[f]->path) {
        if (dirs_[e].slot == kNoSlot || dirs_[e].updated == stamp) continue;
        dirs_[e].updated = stamp;
        if (dirs_[e].unfrozen == 0) {
          share_remove(e);
          dirs_[e].slot = kNoSlot;
        } else {
          update(e);
        }
      }
    }
  }
}

// Takes direction e out of the heap of shares.
void FlowNetwork::share_remove(std::uint32_t e) {
  std::vector<ShareEntry>& heap = scratch_heap_;
  const std::uint32_t i = dirs_[e].slot;
  const ShareEntry last = heap.back();
  heap.pop_back();
  if (i == heap.size()) return;
  const bool earlier = last.before(heap[i]);
  heap[i] = last;
  dirs_[last.dir].slot = i;
  if (earlier) {
    share_up(i);
  } else {
    share_down(i);
  }
}

// Gives direction e, in the heap of shares, the share `sh`, moving its entry into place.
void FlowNetwork::share_set(std::uint32_t e, double sh) {
  std::vector<ShareEntry>& heap = scratch_heap_;
  const std::uint32_t i = dirs_[e].slot;
  const bool down = heap[i].share < sh;
  heap[i].share = sh;
  if (down) {
    share_down(i);
  } else {
    share_up(i);
  }
}

void FlowNetwork::share_up(std::uint32_t i) {
  heap_up(scratch_heap_, i,
          [this](const ShareEntry& e, std::uint32_t at) { dirs_[e.dir].slot = at; });
}

void FlowNetwork::share_down(std::uint32_t i) {
  heap_down(scratch_heap_, i,
            [this](const ShareEntry& e, std::uint32_t at) { dirs_[e.dir].slot = at; });
}

double FlowNetwork::rate_of(const TransferHandle& h) const {
  for (const auto& f : flows_) {
    if (f->t && f->active && &f->t->record == &h.record()) {
      return f->rate * f->efficiency * double(h.record().request.bytes) / f->wire;
    }
  }
  return 0;
}

Bandwidth FlowNetwork::injection_bandwidth(topo::ChipId c) const {
  Bandwidth b{};
  for (const auto l : topo_.incident(topo_.chip_node(c))) b = b + topo_.link(l).bandwidth;
  return b;
}

void FlowNetwork::finish(const sc_core::sc_time& end) {
  const double e = end.to_seconds();
  for (auto& d : dirs_) d.block->s_util_.value = e > 0 ? d.block->s_busy_.value / e : 0.0;
}

NetworkTotals FlowNetwork::totals() const {
  NetworkTotals t;
  t.transfers_started = started_;
  t.transfers_completed = completed_;
  t.bytes_requested = requested_;
  t.bytes_injected = injected_;
  t.bytes_delivered = delivered_;
  t.packets_injected = packets_;
  t.packets_delivered = packets_;
  t.wire_bytes = wire_;
  t.packets_in_flight = 0;
  t.events = events_;
  return t;
}

}  // namespace trnsim::model
