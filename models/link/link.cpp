// SPDX-License-Identifier: MIT
#include "link/link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace trnsim::model {

LinkDirection::LinkDirection(const sc_core::sc_module_name& name, const LinkParams& p, int dir)
    : Block(name),
      bw_(p.bandwidth),
      latency_(to_sc(p.latency)),
      flit_time_(to_sc(Duration(double(p.flit_bytes) / p.bandwidth.si))),
      flit_bytes_(p.flit_bytes),
      capacity_(p.buffer_flits[std::size_t(dir)]),
      credits_(std::size_t(p.vcs), std::int64_t(p.buffer_flits[std::size_t(dir)])),
      dyn_energy_(p.energy * (1.0 - p.idle_fraction)),
      s_bytes_(stats().add(LinkStats::bytes)),
      s_wire_(stats().add(LinkStats::wire_bytes)),
      s_packets_(stats().add(LinkStats::packets)),
      s_busy_(stats().add(LinkStats::busy)),
      s_util_(stats().add(LinkStats::utilisation)),
      s_stall_(stats().add(LinkStats::credit_stall_time)),
      s_max_buf_(stats().add(LinkStats::max_buffer_occupancy)),
      s_buffer_(stats().add(LinkStats::buffer_per_vc)) {
  if (!(p.bandwidth.si > 0)) throw InternalError("LinkDirection: bandwidth must be > 0");
  if (p.vcs < 1 || capacity_ < 1) throw InternalError("LinkDirection: no VC or no buffer");
  s_buffer_.value = capacity_;
  const std::string from = dir == 0 ? p.a_name : p.b_name;
  const std::string to = dir == 0 ? p.b_name : p.a_name;
  s_bytes_.description += fmt::format(" ({} -> {})", from, to);
  // Links stay trained when idle; the rest of the full-rate power is per bit moved.
  set_static_power(Power(p.idle_fraction * p.energy.si * 8.0 * p.bandwidth.si));
}

sc_core::sc_time LinkDirection::serialisation(std::uint32_t flits) const {
  return to_sc(Duration(double(flits) * double(flit_bytes_) / bw_.si));
}

void LinkDirection::collect_returns() const {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  sc_core::sc_time next = sc_core::sc_max_time();
  for (std::size_t i = 0; i < returns_.size();) {
    const Return& r = returns_[i];
    if (r.at > now) {
      next = std::min(next, r.at);
      ++i;
      continue;
    }
    auto& credits = credits_[std::size_t(r.vc)];
    credits += r.flits;
    if (credits > std::int64_t(capacity_)) {
      throw InternalError(fmt::format("{}: VC {} has {} credits, more than its {} flit buffer",
                                      name(), r.vc, credits, capacity_));
    }
    returns_[i] = returns_.back();
    returns_.pop_back();
  }
  next_return_ = next;
}

void LinkDirection::finish(const sc_core::sc_time& end) {
  s_util_.value = end > sc_core::SC_ZERO_TIME ? busy_ / end : 0.0;
}

Link::Link(const sc_core::sc_module_name& name, const LinkParams& p) : sc_core::sc_module(name) {
  auto clean = [](std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
  };
  dirs_[0] = std::make_unique<LinkDirection>(("to_" + clean(p.b_name)).c_str(), p, 0);
  // A link between a node and itself is rejected by the topology; the names differ.
  dirs_[1] = std::make_unique<LinkDirection>(("to_" + clean(p.a_name)).c_str(), p, 1);
  queue_.set_order_salt(p.order_salt);
  queue_.bind("serve", [this](Item& it) { serve(it); });
}

void Link::connect(int dir, LinkEndpoint* up, int up_out, LinkEndpoint* down, int down_in) {
  auto& d = *dirs_[std::size_t(dir)];
  d.up_ = up;
  d.up_out_ = up_out;
  d.down_ = down;
  d.down_in_ = down_in;
}

void LinkDirection::charge(std::uint64_t packets, double payload, std::uint64_t flits) {
  const double wire = double(flits) * flit_bytes_;
  const sc_core::sc_time t = to_sc(Duration(wire / bw_.si));
  busy_ += t;
  s_busy_ += t.to_seconds();
  s_bytes_ += payload;
  s_wire_ += wire;
  s_packets_ += double(packets);
  if (!meter_) meter_ = &meter(Action::link, per_byte(dyn_energy_));
  meter_->count(wire);
}

void Link::send(int dir, Packet* p, int vc, const sc_core::sc_time& end,
                const sc_core::sc_time& busy_end) {
  auto& d = *dirs_[std::size_t(dir)];
  if (vc < 0 || vc >= int(d.credits_.size())) {
    throw InternalError(fmt::format("{}: no VC {}", d.name(), vc));
  }
  const std::int64_t available = d.credits(vc);
  auto& credits = d.credits_[std::size_t(vc)];
  if (available < std::int64_t(p->flits)) {
    throw InternalError(fmt::format("{}: packet of {} flits sent on VC {} with {} credits",
                                    d.name(), p->flits, vc, credits));
  }
  credits -= p->flits;
  d.s_max_buf_.max_with(double(std::int64_t(d.capacity_) - credits));
  const sc_core::sc_time start = now();
  const double wire = double(p->flits) * d.flit_bytes_;
  d.busy_ += busy_end - start;
  d.s_busy_ += (busy_end - start).to_seconds();
  d.s_bytes_ += double(p->payload);
  d.s_wire_ += wire;
  d.s_packets_ += 1;
  if (!d.meter_) d.meter_ = &d.meter(Action::link, per_byte(d.dyn_energy_));
  d.meter_->count(wire);

  p->vc = vc;
  p->t_link += d.latency_;
  const sc_core::sc_time head = start + d.flit_time_ + d.latency_;
  p->tail_ready = end + d.latency_;
  const bool ends_here = p->dst_node == d.down_->node();
  queue_.push(ends_here ? p->tail_ready : head + d.down_->pass_latency(), Item{p, dir});
}

void Link::free_buffer(int dir, int vc, std::uint32_t flits, const sc_core::sc_time& at) {
  const auto& d = *dirs_[std::size_t(dir)];
  const sc_core::sc_time back = at + d.latency_;
  if (d.returns_.empty() || back < d.next_return_) d.next_return_ = back;
  d.returns_.push_back(LinkDirection::Return{back, vc, flits});
  d.up_->credits_due(d.up_out_, back);
}

void Link::serve(Item& it) {
  const auto& d = *dirs_[std::size_t(it.dir)];
  d.down_->packet_arrived(d.down_in_, it.packet);
}

}  // namespace trnsim::model
