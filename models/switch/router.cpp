// SPDX-License-Identifier: MIT
#include "switch/router.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace trnsim::model {

Router::Router(const sc_core::sc_module_name& name, const topo::RouteTable& routes,
               const RouterParams& p, int link_ports)
    : Block(name),
      routes_(routes),
      p_(p),
      latency_(to_sc(p.latency)),
      outputs_(std::size_t(link_ports)),
      inputs_(std::size_t(link_ports)),
      port_link_(std::size_t(link_ports)),
      n_inputs_(link_ports + (p.local_port ? 1 : 0)),
      s_forwarded_(stats().add(RouterStats::packets_forwarded)),
      s_fwd_bytes_(stats().add(RouterStats::bytes_forwarded)) {
  if (p.vcs < 1) throw InternalError("Router: at least one VC");
  for (int o = 0; o < link_ports; ++o) {
    auto& out = outputs_[std::size_t(o)];
    out.q.resize(std::size_t(n_inputs_ * p.vcs));
    out.in_waiting.assign(std::size_t(n_inputs_), 0);
    out.in_mask.assign(std::size_t((n_inputs_ + 63) / 64), 0);
    if (p.local_port) {
      out.in_mask[std::size_t(link_ports / 64)] |= std::uint64_t(1) << (link_ports % 64);
    }
    out.rr_vc.assign(std::size_t(n_inputs_), std::uint16_t(p.vcs - 1));
    out.rr_in = std::uint32_t(n_inputs_ - 1);
    if (p.salt != 0) {
      // Which input a round-robin arbiter favours first is arbitrary: the salt picks it.
      const std::uint64_t h = splitmix64(p.salt ^ std::uint64_t(o));
      out.rr_in = std::uint32_t(h % std::uint64_t(n_inputs_));
      for (int i = 0; i < n_inputs_; ++i) {
        out.rr_vc[std::size_t(i)] =
            std::uint16_t(splitmix64(h ^ std::uint64_t(i)) % std::uint64_t(p.vcs));
      }
    }
    out.s_packets = &stats().add(RouterStats::port_packets, std::to_string(o));
    out.s_bytes = &stats().add(RouterStats::port_bytes, std::to_string(o));
    out.s_wait = &stats().add(RouterStats::port_wait_time, std::to_string(o));
    out.s_max_q = &stats().add(RouterStats::port_max_queue, std::to_string(o));
  }
  if (p.queueing == config::FabricQueueing::input_fifo) {
    order_.resize(std::size_t(link_ports * p.vcs));
  }
  set_static_power(p.idle_power);
  timers_.set_order_salt(p.salt);
  timers_.bind("timers", [this](Timer& t) {
    if (t.kind == kWake) {
      auto& o = outputs_[std::size_t(t.arg)];
      if (o.wake_at != now()) return;  // superseded by an earlier wake-up
      o.wake_at = sc_core::sc_max_time();
      kick(int(t.arg));
    } else {
      on_timer(t.kind, t.arg);
    }
  });
}

void Router::attach(int port, topo::LinkId id, Link* link, int out_dir, int in_dir) {
  auto& o = outputs_.at(std::size_t(port));
  o.link = link;
  o.dir = out_dir;
  o.ld = &link->direction(out_dir);
  inputs_[std::size_t(port)] = Input{link, in_dir};
  port_link_[std::size_t(port)] = id;
  if (id.v >= link_to_port_.size()) link_to_port_.resize(std::size_t(id.v) + 1, -1);
  link_to_port_[std::size_t(id.v)] = port;
}

int Router::output_of(topo::LinkId id) const {
  // A table by link id: a linear search of the ports was a hot spot of 64-port switches.
  if (id.v < link_to_port_.size() && link_to_port_[std::size_t(id.v)] >= 0) {
    return link_to_port_[std::size_t(id.v)];
  }
  throw InternalError(fmt::format("{}: link {} is not attached here", name(), id.v));
}

int Router::next_set(const std::vector<std::uint64_t>& mask, int from, int end) {
  while (from < end) {
    const std::uint64_t w = mask[std::size_t(from / 64)] >> (from % 64);
    if (w != 0) {
      const int i = from + std::countr_zero(w);
      return i < end ? i : end;
    }
    from = (from / 64 + 1) * 64;
  }
  return end;
}

void Router::schedule(const sc_core::sc_time& t, int kind, std::uint64_t arg, bool in_order) {
  timers_.push(t, Timer{kind, arg}, in_order);
}

void Router::schedule_wake(int out, const sc_core::sc_time& t) {
  auto& o = outputs_[std::size_t(out)];
  if (o.wake_at <= t) return;
  o.wake_at = t;
  schedule(t, kWake, std::uint64_t(out));
}

void Router::wait_for_credits(int out) {
  if (const auto t = outputs_[std::size_t(out)].ld->next_return()) schedule_wake(out, *t);
  // None on its way: the receiver still holds them; credits_due() wakes us when it frees some.
}

void Router::packet_arrived(int in, Packet* p) {
  if (p->dst_node == p_.node) {
    deliver(in, p);
    return;
  }
  if (p_.local_port) {
    p->t_forward += latency_;
  } else {
    p->t_switch += latency_;
  }
  const topo::LinkId next = routes_.next_hop(p_.node, p->dst, p->route_key);
  const int out = output_of(next);
  auto& o = outputs_[std::size_t(out)];
  if (p->vc < 0 || p->vc + 1 >= p_.vcs) {
    throw InternalError(fmt::format("{}: packet {} on VC {} has no next VC (of {})", name(),
                                    p->id, p->vc, p_.vcs));
  }
  p->ready = now();
  if (p_.relay_in_memory) {
    // Store and forward: the buffer is free once the packet is in memory; it waits there.
    free_input(in, p->vc, p->flits, relay_store(p));
    p->stored = true;
  }
  if (!order_.empty()) order_[std::size_t(in * p_.vcs + p->vc)].push(out);
  o.q[std::size_t(in * p_.vcs + p->vc)].push(p);
  ++o.waiting;
  if (o.in_waiting[std::size_t(in)]++ == 0) {
    o.in_mask[std::size_t(in / 64)] |= std::uint64_t(1) << (in % 64);
  }
  o.s_max_q->max_with(double(o.waiting));
  kick(out);
}

void Router::credits_due(int out, const sc_core::sc_time& at) {
  if (outputs_[std::size_t(out)].stalled) schedule_wake(out, at);
}

bool Router::eligible(const Output& o, int in, int vc) {
  if (in == local_input()) {
    const int out = int(&o - outputs_.data());
    return local_pending(out) && o.ld->credits(0) >= std::int64_t(local_flits(out));
  }
  const auto& q = o.q[std::size_t(in * p_.vcs + vc)];
  if (q.empty()) return false;
  if (!order_.empty() && order_[std::size_t(in * p_.vcs + vc)].front() != int(&o - outputs_.data())) {
    return false;  // an older packet of this input and VC waits for another output
  }
  return o.ld->credits(vc + 1) >= std::int64_t(q.front()->flits);
}

bool Router::pick(Output& o, int& in, int& vc) {
  const int vcs = p_.vcs;
  const int local = p_.local_port ? local_input() : -1;
  if (p_.arbiter == config::FabricArbiter::oldest_first) {
    bool found = false;
    sc_core::sc_time best;
    std::uint64_t best_id = 0;
    for (int i = 0; i < n_inputs_; ++i) {
      if (i == local) {
        if (!eligible(o, i, 0)) continue;
        const auto t = local_ready(int(&o - outputs_.data()));
        // Local work has no packet id yet; it loses ties to packets already in the network.
        if (!found || t < best) {
          found = true, best = t, best_id = ~0ULL, in = i, vc = 0;
        }
        continue;
      }
      if (o.in_waiting[std::size_t(i)] == 0) continue;
      for (int v = 0; v < vcs; ++v) {
        if (!eligible(o, i, v)) continue;
        const Packet* p = o.q[std::size_t(i * vcs + v)].front();
        const std::uint64_t key = tie_key(p->id);
        if (!found || p->ready < best || (p->ready == best && key < best_id)) {
          found = true, best = p->ready, best_id = key, in = i, vc = v;
        }
      }
    }
    return found;
  }
  // Round-robin: the inputs after rr_in, then those up to it, as a scan of every input would
  // visit them, but only those with packets queued for this output (and the local input).
  const int start = int((o.rr_in + 1) % std::uint32_t(n_inputs_));
  for (int pass = 0; pass < 2; ++pass) {
    const int lo = pass == 0 ? start : 0;
    const int hi = pass == 0 ? n_inputs_ : start;
    for (int i = next_set(o.in_mask, lo, hi); i < hi; i = next_set(o.in_mask, i + 1, hi)) {
      if (i == local) {
        if (eligible(o, i, 0)) {
          in = i, vc = 0;
          o.rr_in = std::uint32_t(i);
          return true;
        }
        continue;
      }
      for (int j = 1; j <= vcs; ++j) {
        const int v = (o.rr_vc[std::size_t(i)] + j) % vcs;
        if (eligible(o, i, v)) {
          in = i, vc = v;
          o.rr_in = std::uint32_t(i);
          o.rr_vc[std::size_t(i)] = std::uint16_t(v);
          return true;
        }
      }
    }
  }
  return false;
}

void Router::kick(int out) {
  auto& o = outputs_[std::size_t(out)];
  if (o.busy_until > now()) {
    if (o.waiting > 0 || (p_.local_port && local_pending(out))) schedule_wake(out, o.busy_until);
    return;
  }
  int in = 0, vc = 0;
  if (pick(o, in, vc)) {
    if (o.stalled) {
      o.ld->add_stall(now() - o.stall_start);
      o.stalled = false;
    }
    dispatch(out, in, vc);
    return;
  }
  if (o.waiting > 0 || (p_.local_port && local_pending(out))) {
    // Work is waiting but the receiver has no room: wake when credits come back.
    if (!o.stalled) {
      o.stalled = true;
      o.stall_start = now();
    }
    wait_for_credits(out);
  }
}

void Router::dispatch(int out, int in, int vc) {
  auto& o = outputs_[std::size_t(out)];
  const bool local = in == local_input();
  Packet* p = nullptr;
  if (local) {
    p = local_take(out);
  } else {
    p = o.q[std::size_t(in * p_.vcs + vc)].pop();
    --o.waiting;
    if (--o.in_waiting[std::size_t(in)] == 0) {
      o.in_mask[std::size_t(in / 64)] &= ~(std::uint64_t(1) << (in % 64));
    }
    if (!order_.empty()) {
      auto& ring = order_[std::size_t(in * p_.vcs + vc)];
      ring.pop();
      // The packet behind it may be bound for another output, which may have skipped it.
      if (!ring.empty() && ring.front() != out) schedule_wake(ring.front(), now());
    }
  }
  const sc_core::sc_time start = now();
  // Cut-through: the tail cannot leave before it has arrived.
  const sc_core::sc_time ser_end = start + o.ld->serialisation(p->flits);
  const sc_core::sc_time tail_end = p->tail_ready + o.ld->flit_time();
  const sc_core::sc_time end = ser_end > tail_end ? ser_end : tail_end;
  // How long the output is taken: with `share`, a packet cut through from a slower link takes
  // only its own serialisation of this one (a link of several ports carries it on some of its
  // lanes, at the rate it arrives, and the next packet on the others); with `hold`, until its
  // tail has left. The injected packets of a chip are held either way (their source read).
  const sc_core::sc_time busy_end =
      local || p_.cut_through == config::FabricCutThrough::hold ? end : ser_end;
  p->t_queue += start - p->ready;
  *o.s_wait += (start - p->ready).to_seconds();
  *o.s_packets += 1;
  *o.s_bytes += double(p->payload);
  if (!local) {
    // The buffer at this node is free once the tail has left (or was, once stored).
    if (!p->stored) {
      const auto& input = inputs_[std::size_t(in)];
      input.link->free_buffer(input.dir, p->vc, p->flits, end);
    }
    p->stored = false;
    s_forwarded_ += 1;
    s_fwd_bytes_ += double(p->payload);
    if (!forward_meter_) {
      forward_meter_ = &meter(p_.local_port ? Action::chip_forwarding : Action::switch_,
                              per_byte(p_.energy));
    }
    forward_meter_->count(double(p->flits) * o.ld->flit_bytes());
  }
  o.busy_until = busy_end;
  o.link->send(o.dir, p, local ? 0 : p->vc + 1, end, busy_end);
  if (o.waiting > 0 || (p_.local_port && local_pending(out))) schedule_wake(out, busy_end);
}

void Router::charge(topo::LinkId l, std::uint64_t packets, double payload, std::uint64_t flits,
                    bool forwarded) {
  Output& o = outputs_.at(std::size_t(output_of(l)));
  *o.s_packets += double(packets);
  *o.s_bytes += payload;
  if (forwarded) {
    s_forwarded_ += double(packets);
    s_fwd_bytes_ += payload;
    if (!forward_meter_) {
      forward_meter_ = &meter(p_.local_port ? Action::chip_forwarding : Action::switch_,
                              per_byte(p_.energy));
    }
    forward_meter_->count(double(flits) * o.ld->flit_bytes());
  }
  o.ld->charge(packets, payload, flits);
}

void Router::free_input(int in, int vc, std::uint32_t flits, const sc_core::sc_time& at) {
  const auto& input = inputs_.at(std::size_t(in));
  input.link->free_buffer(input.dir, vc, flits, at);
}

Packet* Router::local_take(int) {
  throw InternalError(fmt::format("{}: a switch has no local port", name()));
}

void Router::deliver(int, Packet* p) {
  throw InternalError(
      fmt::format("{}: packet {} ends at a node without a local port", name(), p->id));
}

void Router::on_timer(int kind, std::uint64_t) {
  throw InternalError(fmt::format("{}: unknown timer {}", name(), kind));
}

void Router::finish(const sc_core::sc_time& end) {
  for (auto& o : outputs_) {
    if (o.stalled) {
      o.ld->add_stall(end - o.stall_start);
      o.stall_start = end;
    }
  }
}

}  // namespace trnsim::model
