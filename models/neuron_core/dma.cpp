// SPDX-License-Identifier: MIT
#include "neuron_core/dma.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <memory>

#include "common/activity.hpp"
#include "neuron_core/sram.hpp"
#include "trnsim/error.hpp"

namespace trnsim::model {

using sc_core::sc_time;

DmaEngine::DmaEngine(const sc_core::sc_module_name& name, const config::DmaParams& p, Sram& sbuf,
                     std::uint64_t& wakeups, WakeCalendar& calendar, int granularity)
    : Block(name),
      p_(p),
      granularity_(std::clamp(granularity, 1, kMaxWindowsPerWakeup)),
      sbuf_(sbuf),
      wakeups_(wakeups),
      queues_(std::size_t(p.queues_per_engine)),
      window_(std::size_t(std::max(1, p.outstanding_packets))),
      calendar_(calendar),
      bytes_(stats().add(DmaEngineStats::bytes)),
      packets_(stats().add(DmaEngineStats::packets)) {
  if (queues_.size() > 64) {
    throw InternalError(fmt::format("DmaEngine: {} queues exceed the 64-bit ready mask (the "
                                    "resolve step checks /chip/core/dma/queues_per_engine)",
                                    queues_.size()));
  }
  calendar_id_ = calendar_.add(*this);
}

const sc_time DmaEngine::kNever = sc_core::sc_max_time();

void DmaEngine::enqueue(int queue, const DmaShare& s) {
  const std::size_t q = std::size_t(queue) % queues_.size();
  if (queues_[q].empty()) front_ready_[q] = s.ready;
  queues_[q].push(s);
  nonempty_ |= std::uint64_t(1) << q;
  // Wake the engine when the descriptors are ready (not now: an engine woken only to learn that
  // its work starts later costs an activation per share), unless it is waiting for a window
  // slot or already due earlier.
  const sc_time at = std::max(sc_core::sc_time_stamp(), s.ready);
  if (!wake_.on_work || at >= wake_.at) return;
  wake_.at = at;
  calendar_.at(calendar_id_, at);
}

bool DmaEngine::ready_work(const sc_time& now, sc_time& next_ready) const {
  bool any = false;
  for (std::uint64_t m = nonempty_; m != 0; m &= m - 1) {
    const sc_time& ready = front_ready_[std::size_t(std::countr_zero(m))];
    if (ready <= now) return true;
    if (!any || ready < next_ready) next_ready = ready;
    any = true;
  }
  if (!any) next_ready = sc_core::SC_ZERO_TIME;
  return false;
}

namespace {

// The low n bits of `mask` rotated right by r: bit i of the result is bit (r + i) % n of mask.
std::uint64_t rotate(std::uint64_t mask, int r, std::size_t n) {
  if (r == 0) return mask;
  const std::uint64_t all = n == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << n) - 1;
  return ((mask >> r) | (mask << (n - std::size_t(r)))) & all;
}

}  // namespace

void DmaEngine::wake() {
  // The energy meter and the two statistics each packet counts are cache misses of their own
  // (in the block's lists, not in the engine) behind the chain engine -> queue -> share: fetch
  // them now so that their misses overlap it.
  if (meter_) __builtin_prefetch(meter_);
  __builtin_prefetch(&bytes_.value);
  __builtin_prefetch(&packets_.value);
  for (std::uint64_t m = nonempty_; m != 0; m &= m - 1) {
    __builtin_prefetch(&queues_[std::size_t(std::countr_zero(m))]);
  }
  ++wakeups_;
  wake_ = issue(sc_core::sc_time_stamp());
  if (wake_.at != kNever) calendar_.at(calendar_id_, wake_.at);
}

// Issues what the engine can at `now`; returns when it next needs to run.
DmaEngine::Wake DmaEngine::issue(const sc_time& now) {
  const double packet = p_.packet_bytes.si;
  const std::size_t nq = queues_.size();
  sc_time next_ready;
  if (now < resume_at_) return {resume_at_, false};  // new work before the half-drain point
  if (!ready_work(now, next_ready)) return {next_ready > now ? next_ready : kNever, true};
  if (window_[window_pos_] > now) return {window_[window_pos_], false};  // all slots in flight
  // Fine (granularity 1): one window of packets whose request slot is free now. Coarse: up to
  // `granularity` windows, each packet issued when its slot frees (virtual time, see dma.hpp).
  const std::size_t budget = window_.size() * std::size_t(granularity_);
  sc_time first_latency = sc_core::SC_ZERO_TIME;
  for (std::size_t issued = 0; issued < budget; ++issued) {
    // The first non-empty queue with ready descriptors at or after rr_ (round-robin).
    std::size_t q = 0;
    bool found = false;
    for (std::uint64_t m = rotate(nonempty_, rr_, nq); m != 0; m &= m - 1) {
      q = (std::size_t(rr_) + std::size_t(std::countr_zero(m))) % nq;
      if (front_ready_[q] <= now) {
        found = true;
        break;
      }
    }
    if (!found || (granularity_ == 1 && window_[window_pos_] > now)) break;
    const sc_time issue = std::max(now, window_[window_pos_]);
    rr_ = int((q + 1) % nq);  // round-robin between queues at packet boundaries
    DmaShare& sh = queues_[q].front();
    const std::uint64_t bytes = std::min<std::uint64_t>(std::uint64_t(packet), sh.left);
    const std::uint64_t addr = sh.addr;
    const sc_time pkt = to_sc(transfer_time(Bytes(double(bytes)), p_.engine_bandwidth));
    // Reads: the engine moves a packet once its data has arrived. Writes: issued when the
    // engine has the packet; their latency is the memory's response time at this moment.
    // A packet issued ahead of now (coarse) books the memory now; its data arrives no earlier
    // than the booked completion nor than its issue time plus the latency the wake-up's first
    // request saw. Fine mode: issue == now, arrived == booked.
    sc_time arrived = issue;
    if (sh.src_memory) {
      const sc_time booked = sh.src_memory->access(MemRequest{addr, bytes, false});
      if (issued == 0) first_latency = booked - now;
      arrived = std::max(booked, issue + first_latency);
    } else if (sh.src_sbuf) {
      sbuf_.count_read(double(bytes));
    }
    const sc_time engine_end = tl_.reserve(arrived, pkt);
    sc_time done = engine_end;
    if (sh.dst_memory) {
      done = engine_end + (sh.dst_memory->access(MemRequest{addr, bytes, true}) - now);
    } else if (sh.dst_sbuf) {
      sbuf_.count_write(double(bytes));
    }
    if (!meter_) meter_ = &meter(Action::dma, per_byte(p_.energy));
    meter_->count(double(bytes));
    bytes_ += double(bytes);
    packets_ += 1;
    window_[window_pos_] = done;
    window_pos_ = (window_pos_ + 1) % window_.size();
    sh.addr += bytes;
    sh.left -= bytes;
    sh.last_done = std::max(sh.last_done, done);
    if (sh.left == 0) {
      DmaTransfer& x = *sh.xfer;
      x.last_done = std::max(x.last_done, sh.last_done);
      queues_[q].pop();
      if (queues_[q].empty()) {
        nonempty_ &= ~(std::uint64_t(1) << q);
      } else {
        front_ready_[q] = queues_[q].front().ready;
      }
      if (--x.shares_left == 0) {
        const Instr& in = *x.instr;
        for (int i = 0; i < in.nsignals; ++i) in.signals[std::size_t(i)]->signal_at(x.last_done);
        delete &x;
      }
    }
  }
  // Wake when half the window has drained: the reads issued then arrive while the other half
  // still keeps the engine busy, so the engine streams without gaps.
  const std::size_t w = window_.size();
  const sc_time half = window_[(window_pos_ + std::max<std::size_t>(1, w / 2) - 1) % w];
  const sc_time wake = std::max(half, now + sc_core::sc_time(1, sc_core::SC_PS));
  // Nothing left queued: sleep until new work instead of waking at `wake` to find none. New
  // work arriving before `wake` still waits for it (resume_at_), as if the engine had slept.
  if (nonempty_ == 0) {
    resume_at_ = wake;
    return {kNever, true};
  }
  return {wake, false};
}

// ------------------------------------------------------------------------------------ DmaSystem

DmaSystem::DmaSystem(const sc_core::sc_module_name& name, const config::DmaParams& p,
                     MemoryPort& hbm, Sram& sbuf, std::uint64_t& wakeups, int granularity,
                     WakeCalendar* calendar)
    : Block(name),
      p_(p),
      hbm_(hbm),
      instructions_(stats().add(DmaSystemStats::instructions)),
      dge_busy_(stats().add(DmaSystemStats::dge_busy)) {
  if (!calendar) {
    own_calendar_ = std::make_unique<WakeCalendar>("calendar");
    calendar = own_calendar_.get();
  }
  for (int i = 0; i < p.engines; ++i) {
    engines_.push_back(new DmaEngine(fmt::format("q{}", i).c_str(), p, sbuf, wakeups,
                                       *calendar, granularity));
  }
}

DmaSystem::~DmaSystem() {
  for (auto* e : engines_) delete e;
}

sc_time DmaSystem::trigger(const Instr& in, const sc_time& ready, bool waited) {
  instructions_ += 1;
  Timeline& d = dge_[0].free_at() <= dge_[1].free_at() ? dge_[0] : dge_[1];
  const sc_time dge_start = std::max(ready, d.free_at());
  const sc_time dge_end = d.reserve(ready, to_sc(p_.descriptor_cost));
  dge_busy_ += p_.descriptor_cost.si;
  const sc_time start = waited ? std::max(dge_end, ready + to_sc(p_.start_latency)) : dge_end;
  last_ = Breakdown{ready, dge_start, dge_end, start};
  const int n = std::max(1, std::min<int>(in.engines, int(engines_.size())));
  if (in.bytes == 0) {
    for (int i = 0; i < in.nsignals; ++i) in.signals[std::size_t(i)]->signal_at(start);
    return dge_start;
  }
  const std::uint64_t share = (in.bytes + std::uint64_t(n) - 1) / std::uint64_t(n);
  auto* x = new DmaTransfer{};
  x->instr = &in;
  // Shares of `share` bytes on consecutive engines, the last one smaller: as many as it takes.
  x->shares_left = int((in.bytes + share - 1) / share);
  DmaShare sh{x, in.addr, 0, start};
  auto memory = [&](DmaEndpoint e) -> MemoryPort* {
    if (e == DmaEndpoint::hbm) return &hbm_;
    return e == DmaEndpoint::external ? in.external : nullptr;
  };
  sh.src_memory = memory(in.src);
  sh.dst_memory = memory(in.dst);
  sh.src_sbuf = in.src == DmaEndpoint::sbuf;
  sh.dst_sbuf = in.dst == DmaEndpoint::sbuf;
  std::uint64_t off = 0;
  for (int e = 0; e < x->shares_left; ++e) {
    sh.addr = in.addr + off;
    sh.left = std::min(share, in.bytes - off);
    const int engine = (in.first_engine + e) % int(engines_.size());
    engines_[std::size_t(engine)]->enqueue(in.queue, sh);
    off += sh.left;
  }
  return dge_start;
}

}  // namespace trnsim::model
