// SPDX-License-Identifier: MIT
#include "fabric/network_interface.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace trnsim::model {

NetworkInterface::NetworkInterface(const sc_core::sc_module_name& name, const RouterParams& rp,
                                   int link_ports, const InterfaceParams& ip, FabricShared& shared,
                                   MemoryPort* memory)
    : Router(name, shared.topology->routes(), rp, link_ports),
      ip_(ip),
      shared_(shared),
      memory_(memory),
      local_(std::size_t(link_ports)),
      s_issued_(stats().add(NetworkInterfaceStats::transfers_issued)),
      s_completed_(stats().add(NetworkInterfaceStats::transfers_received)),
      s_bytes_sent_(stats().add(NetworkInterfaceStats::bytes_injected)),
      s_bytes_received_(stats().add(NetworkInterfaceStats::bytes_received)) {}

void NetworkInterface::issue(TransferState* t) {
  s_issued_ += 1;
  // The transfer rides on its timer, so transfers that start at the same time queue for their
  // outputs in the timer order the router's salt chooses, or in the order issued.
  schedule(now() + to_sc(ip_.endpoint_overhead), kStart, park(t), ip_.issued_order);
}

void NetworkInterface::on_timer(int kind, std::uint64_t arg) {
  if (kind != kStart && kind != kComplete) {
    Router::on_timer(kind, arg);
    return;
  }
  TransferState* t = slots_.at(arg);
  free_slots_.push_back(arg);
  if (kind == kStart) {
    t->started = now();
    read_ahead(*t);
    const auto& req = t->record.request;
    const topo::NodeId here = params().node;
    if (params().spreading == config::FabricSpreading::per_flow) {
      const int out = output_of(routes().next_hop(here, req.dst, route_key(*t)));
      local_[std::size_t(out)].push_back(t);
      kick(out);
    } else {
      for (const topo::LinkId l : routes().next_hops(here, req.dst)) {
        const int out = output_of(l);
        local_[std::size_t(out)].push_back(t);
        kick(out);
      }
    }
    return;
  }
  t->finished = true;
  t->record.completed = now();
  s_completed_ += 1;
  t->done.notify();
  if (shared_.on_completion) shared_.on_completion(*t);
  if (t->on_done) t->on_done(t->record);
  t->keep_alive.reset();  // may destroy *t
}

std::uint64_t NetworkInterface::next_payload(const TransferState& t) const {
  return std::min(ip_.packet_bytes, t.record.request.bytes - t.cut);
}

void NetworkInterface::read_ahead(TransferState& t) {
  if (!memory_) return;
  const auto& req = t.record.request;
  while (t.reads.size() < ip_.read_ahead_packets && t.read < req.bytes) {
    const std::uint64_t n = std::min(ip_.packet_bytes, req.bytes - t.read);
    t.reads.push(memory_->access({req.src_addr + t.read, n, false}));
    t.read += n;
  }
}

bool NetworkInterface::local_pending(int out) {
  return !local_[std::size_t(out)].empty();
}

std::uint32_t NetworkInterface::local_flits(int out) {
  return flits_of(next_payload(*local_[std::size_t(out)].front()));
}

sc_core::sc_time NetworkInterface::local_ready(int out) {
  return local_[std::size_t(out)].front()->started;
}

Packet* NetworkInterface::local_take(int out) {
  auto& q = local_[std::size_t(out)];
  TransferState* t = q.front();
  q.pop_front();
  const auto& req = t->record.request;
  Packet* p = shared_.pool.get();
  p->id = shared_.next_packet_id++;
  p->transfer = t;
  p->offset = t->cut;
  p->payload = next_payload(*t);
  p->flits = flits_of(p->payload);
  p->route_key = params().spreading == config::FabricSpreading::per_flow
                     ? route_key(*t)
                     : splitmix64(route_key(*t) ^ splitmix64(t->packets_cut));
  p->dst = req.dst;
  p->dst_node = shared_.topology->chip_node(req.dst);
  p->ready = now();
  p->tail_ready = now();
  if (memory_ && p->payload > 0) {
    sc_core::sc_time done;
    if (!t->reads.empty()) {  // read ahead: issued when the transfer started or a packet was cut
      done = t->reads.pop();
    } else {
      done = memory_->access({req.src_addr + p->offset, p->payload, false});
      t->read += p->payload;
    }
    if (done > p->tail_ready) p->tail_ready = done;
  }
  t->cut += p->payload;
  t->packets_cut += 1;
  read_ahead(*t);  // the next packets are read while this one is on the wire
  shared_.bytes_injected += p->payload;
  shared_.packets_injected += 1;
  s_bytes_sent_ += double(p->payload);
  if (!t->cut_all()) {
    q.push_back(t);  // transfers sharing this output take packets in turn
  } else if (params().spreading == config::FabricSpreading::per_packet) {
    // Leave the other outputs' queues now: the transfer may complete, and be freed, before
    // they would next look at it.
    for (auto& other : local_) {
      const auto it = std::find(other.begin(), other.end(), t);
      if (it != other.end()) other.erase(it);
    }
  }
  return p;
}

std::uint64_t NetworkInterface::park(TransferState* t) {
  if (free_slots_.empty()) {
    slots_.push_back(t);
    return slots_.size() - 1;
  }
  const std::uint64_t i = free_slots_.back();
  free_slots_.pop_back();
  slots_[i] = t;
  return i;
}

void NetworkInterface::deliver(int in, Packet* p) {
  sc_core::sc_time done = now();
  if (memory_ && p->payload > 0) {
    const auto& req = p->transfer->record.request;
    const auto w = memory_->access({req.dst_addr + p->offset, p->payload, true});
    if (w > done) done = w;
  }
  free_input(in, p->vc, p->flits, done);
  account(p, done);
}

sc_core::sc_time NetworkInterface::relay_store(Packet* p) {
  if (!memory_ || p->payload == 0) return p->tail_ready;
  // Written where the destination will hold it (an address is needed to spread the bytes over
  // the HBM stacks; a relay buffer's own place is not modelled); read back as it is written,
  // as the DMA that sends it on reads ahead.
  const std::uint64_t addr = p->transfer->record.request.dst_addr + p->offset;
  const sc_core::sc_time written =
      std::max(p->tail_ready, memory_->access({addr, p->payload, true}));
  p->tail_ready = std::max(written, memory_->access({addr, p->payload, false}));
  return written;
}

void NetworkInterface::account(Packet* p, const sc_core::sc_time& written) {
  TransferState* t = p->transfer;
  if (written > t->written) t->written = written;
  t->delivered += p->payload;
  t->packets_delivered += 1;
  if (t->packets_delivered > t->packets_total || t->delivered > t->record.request.bytes) {
    throw InternalError(fmt::format("{}: transfer {} -> {} delivered {} packets ({} B) of {} ({} B)",
                                    name(), t->record.request.src.v, t->record.request.dst.v,
                                    t->packets_delivered, t->delivered, t->packets_total,
                                    t->record.request.bytes));
  }
  shared_.bytes_delivered += p->payload;
  shared_.packets_delivered += 1;
  s_bytes_received_ += double(p->payload);
  if (shared_.on_delivery) shared_.on_delivery(*p, written);
  if (t->packets_delivered == t->packets_total) {
    const sc_core::sc_time overhead = to_sc(ip_.endpoint_overhead);
    const sc_core::sc_time completed = t->written + overhead;
    auto& b = t->record.last_packet;
    b.total = from_sc(completed - t->record.issued);
    b.endpoint = from_sc(overhead + overhead);
    b.link = from_sc(p->t_link);
    b.switching = from_sc(p->t_switch);
    b.forwarding = from_sc(p->t_forward);
    b.queueing = from_sc(p->t_queue);
    b.serialisation = b.total - b.endpoint - b.link - b.switching - b.forwarding - b.queueing;
    b.hops = p->vc + 1;
    t->record.packets = t->packets_total;
    schedule(completed, kComplete, park(t));
  }
  shared_.pool.put(p);
}

}  // namespace trnsim::model
