// SPDX-License-Identifier: MIT
#include "chip/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "trnsim/error.hpp"
#include "trnsim/resolve/plan.hpp"

namespace trnsim::model {

using sc_core::sc_time;

int hbm_stack_of(const config::HbmParams& p, std::uint64_t addr) {
  const auto il = std::uint64_t(p.interleave_bytes.si);
  return int((addr / il) % std::uint64_t(p.stacks));
}

StackSplit::StackSplit(const config::HbmParams& p)
    : il_(std::uint64_t(p.interleave_bytes.si)), n_(std::uint64_t(p.stacks)) {
  if (n_ > kMaxStacks) {
    throw InternalError(fmt::format("{} HBM stacks exceed the model's {} (the resolve step checks "
                                    "/chip/hbm/stacks)", p.stacks, kMaxStacks));
  }
  if (il_ == 0 || n_ == 0) throw InternalError("StackSplit: no interleave or no stacks");
  round_ = il_ * n_;
  const auto shift = [](std::uint64_t v) {
    return (v & (v - 1)) == 0 ? __builtin_ctzll(v) : -1;
  };
  il_shift_ = shift(il_);
  round_shift_ = shift(round_);
  n_mask_ = shift(n_) >= 0 ? n_ - 1 : 0;
}

StackSplit::PerStack StackSplit::split(std::uint64_t addr, std::uint64_t bytes) const {
  PerStack per{};
  const std::uint64_t il = il_, n = n_, round = round_;
  const std::uint64_t end = addr + bytes;
  const std::uint64_t first = std::min(end, div_round(addr + round - 1) * round);
  const std::uint64_t rounds = div_round(end - first);
  for (std::size_t s = 0; s < std::size_t(n); ++s) per[s] = rounds * il;
  // The bytes of [b, e) (less than a round) unit by unit.
  auto walk = [&](std::uint64_t b, std::uint64_t e) {
    if (b >= e) return;
    const std::uint64_t unit = div_il(b);
    std::uint64_t unit_end = (unit + 1) * il;
    std::size_t s = mod_n(unit);
    for (;;) {
      const std::uint64_t next = std::min(e, unit_end);
      per[s] += next - b;
      b = next;
      if (b >= e) return;
      unit_end += il;
      s = s + 1 == std::size_t(n) ? 0 : s + 1;
    }
  };
  walk(addr, first);
  walk(first + rounds * round, end);
  return per;
}

namespace {

constexpr std::size_t kMaxStacks = StackSplit::kMaxStacks;
using StackBytes = StackSplit::PerStack;

}  // namespace

BandwidthMemory::BandwidthMemory(const sc_core::sc_module_name& name, const config::HbmParams& p)
    : Block(name),
      p_(p),
      split_(p),
      stacks_(std::size_t(p.stacks)),
      read_(stats().add(BandwidthMemoryStats::bytes_read)),
      written_(stats().add(BandwidthMemoryStats::bytes_written)),
      stack_bw_(p.bandwidth / double(p.stacks)),
      read_latency_(to_sc(p.controller_latency + p.timing.tRCD + p.timing.tCL)),
      write_latency_(to_sc(p.controller_latency + p.timing.tRCD + p.timing.tCWL)),
      read_energy_(p.energy.read + p.energy.phy + p.energy.controller),
      write_energy_(p.energy.write + p.energy.phy + p.energy.controller) {
  set_static_power(p.energy.background_per_stack * double(p.stacks));
}

sc_time BandwidthMemory::stack_time(std::uint64_t bytes) {
  TimeMemo& m = time_memo_[(bytes ^ (bytes >> 8) ^ (bytes >> 16)) & (time_memo_.size() - 1)];
  if (m.bytes != bytes) {
    m.bytes = bytes;
    m.time = to_sc(transfer_time(Bytes(double(bytes)), stack_bw_));
  }
  return m.time;
}

sc_time BandwidthMemory::access(const MemRequest& r) {
  const StackBytes per = split_.split(r.addr, r.bytes);
  const sc_time now = sc_core::sc_time_stamp();
  sc_time done = now;
  // Reservations that ended by now no longer differ from their counted energy.
  while (ahead_front_ < ahead_.size() && ahead_[ahead_front_].end <= now) ++ahead_front_;
  if (ahead_front_ == ahead_.size()) {
    ahead_.clear();
    ahead_front_ = 0;
  } else if (ahead_.size() - ahead_front_ >= ahead_compact_at_) {
    std::size_t kept = 0;
    for (std::size_t i = ahead_front_; i < ahead_.size(); ++i) {
      if (ahead_[i].end > now) ahead_[kept++] = ahead_[i];
    }
    ahead_.resize(kept);
    ahead_front_ = 0;
    ahead_compact_at_ = std::max<std::size_t>(256, 2 * kept);
  }
  for (std::size_t s = 0; s < stacks_.size(); ++s) {
    if (per[s] == 0) continue;
    const sc_time d = stack_time(per[s]);
    const sc_time end = stacks_[s].reserve(now, d);
    done = std::max(done, end);
    if (end > now) ahead_.push_back({end - d, end, r.write, double(per[s])});
  }
  ActionMeter*& m = r.write ? write_meter_ : read_meter_;
  if (!m) {
    m = r.write ? &meter(Action::hbm_write, per_byte(write_energy_))
                : &meter(Action::hbm_read, per_byte(read_energy_));
  }
  m->count(double(r.bytes));
  (r.write ? written_ : read_) += double(r.bytes);
  return done + (r.write ? write_latency_ : read_latency_);
}

Energy BandwidthMemory::dynamic_unmetered(const PowerModel& power, const sc_time& t) const {
  double read = 0, write = 0;
  for (std::size_t i = ahead_front_; i < ahead_.size(); ++i) {
    const Ahead& a = ahead_[i];
    if (a.end <= t) continue;
    const double span = (a.end - a.start).to_seconds();
    const double after = span > 0 ? (a.end - std::max(a.start, t)).to_seconds() / span : 1.0;
    (a.write ? write : read) += a.bytes * after;
  }
  Energy e{};
  if (read > 0 && read_meter_) {
    e = e + power.dynamic(*this, Action::hbm_read, {read, read * read_meter_->per_unit_j, read_meter_->per_unit_j});
  }
  if (write > 0 && write_meter_) {
    e = e + power.dynamic(*this, Action::hbm_write, {write, write * write_meter_->per_unit_j, write_meter_->per_unit_j});
  }
  return Energy(-e.si);
}

DieCrossing::DieCrossing(const sc_core::sc_module_name& name, const config::ChipParams& p)
    : Block(name),
      dies_(p.dies),
      bw_(p.die_to_die_bandwidth),
      latency_(p.die_to_die_latency),
      energy_(p.die_to_die_energy),
      dir_(std::size_t(p.dies * p.dies)),
      bytes_(stats().add(DieCrossingStats::bytes)),
      latency_sc_(to_sc(p.die_to_die_latency)) {}

sc_time DieCrossing::cross(int from, int to, std::uint64_t bytes) {
  const Bytes b{double(bytes)};
  if (!meter_) meter_ = &meter(Action::die_to_die, per_byte(energy_));
  meter_->count(b.si);
  bytes_ += double(bytes);
  return dir_[std::size_t(from * dies_ + to)].reserve(sc_core::sc_time_stamp(),
                                                      to_sc(transfer_time(b, bw_))) +
         latency_sc_;
}

DieMemoryPort::DieMemoryPort(int die, const config::ChipParams& p, MemoryPort& hbm,
                             DieCrossing& d2d)
    : die_(die), p_(p), split_(p.hbm), hbm_(hbm), d2d_(d2d) {
  if (std::size_t(p.dies) > kMaxStacks) {
    throw InternalError(fmt::format("{} dies exceed the model's {} (the resolve step checks "
                                    "/chip/dies)", p.dies, kMaxStacks));
  }
}

sc_time DieMemoryPort::access(const MemRequest& r) {
  sc_time done = hbm_.access(r);
  if (p_.dies <= 1) return done;
  const StackBytes per = split_.split(r.addr, r.bytes);
  const int stacks_per_die = std::max(1, p_.hbm.stacks / p_.dies);
  StackBytes remote{};  // per die; dies <= stacks
  for (std::size_t s = 0; s < std::size_t(p_.hbm.stacks); ++s) {
    const int die = std::min(p_.dies - 1, int(s) / stacks_per_die);
    if (die != die_) remote[std::size_t(die)] += per[s];
  }
  sc_time crossed = sc_core::SC_ZERO_TIME;
  bool any = false;
  for (int d = 0; d < p_.dies; ++d) {
    if (remote[std::size_t(d)] == 0) continue;
    any = true;
    crossed = std::max(crossed, r.write ? d2d_.cross(die_, d, remote[std::size_t(d)])
                                        : d2d_.cross(d, die_, remote[std::size_t(d)]));
  }
  return any ? std::max(done + to_sc(p_.die_to_die_latency), crossed) : done;
}

}  // namespace trnsim::model
