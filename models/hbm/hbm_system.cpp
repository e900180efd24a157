// SPDX-License-Identifier: MIT
#include "hbm/hbm_system.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trnsim/error.hpp"

namespace trnsim::model {

namespace {
// access() passes counted actions to the Block's meters every this many calls (finding a meter
// is a map lookup).
constexpr unsigned kAccountEvery = 64;
}  // namespace

HbmSystem::HbmSystem(const sc_core::sc_module_name& name, const HbmGeometry& geometry)
    : Block(name),
      geo_(geometry),
      controller_latency_(to_sc(geometry.params().controller_latency)),
      s_requests_(stats().add(HbmSystemStats::requests)),
      s_bytes_read_(stats().add(HbmSystemStats::bytes_read)),
      s_bytes_written_(stats().add(HbmSystemStats::bytes_written)),
      s_bandwidth_(stats().add(HbmSystemStats::achieved_bandwidth)) {
  for (int s = 0; s < geo_.params().stacks; ++s) {
    stacks_.push_back(std::make_unique<HbmStack>(fmt::format("stack{}", s).c_str(), geo_));
  }
}

std::int64_t HbmSystem::clock_at_or_after(const sc_core::sc_time& t) const {
  // sc_time has 1 ps resolution, so a time meant to be clock k may read a hair above it.
  return std::int64_t(std::ceil(t.to_seconds() / geo_.tck_seconds() - 0.01));
}

sc_core::sc_time HbmSystem::time_of_clock(std::int64_t ck) const {
  return to_sc(Duration(double(ck) * geo_.tck_seconds()));
}

sc_core::sc_time HbmSystem::access_at(const MemRequest& r, const sc_core::sc_time& arrival) {
  if (r.bytes == 0) {
    throw InputError(fmt::format("{}: request at address {:#x} has 0 bytes; expected >= 1",
                                 name(), r.addr));
  }
  if (r.addr >= geo_.capacity() || r.bytes > geo_.capacity() - r.addr) {
    throw InputError(fmt::format(
        "{}: request [{:#x}, {:#x}) lies outside the HBM: expected addresses below {:#x} ({})",
        name(), r.addr, r.addr + r.bytes, geo_.capacity(), format(Bytes(double(geo_.capacity())))));
  }
  const auto& p = geo_.params();
  const std::int64_t arrival_ck = clock_at_or_after(arrival);
  const std::uint64_t il = geo_.interleave(), burst = geo_.burst();

  // Walk the interleave units of the request, stepping the address digits by carry instead of
  // dividing for every unit.
  HbmLocation loc = geo_.decode_raw(r.addr);
  HbmGeometry::HashOffsets offset = geo_.hash_offsets(loc);
  std::int64_t unit_in_row = loc.column_byte / std::int64_t(il);
  std::uint64_t pos = r.addr, end_addr = r.addr + r.bytes;
  std::int64_t last = 0;
  HbmStack::Run run;
  run.write = r.write;
  while (pos < end_addr) {
    const std::uint64_t in_unit = pos % il;
    const std::uint64_t take = std::min(il - in_unit, end_addr - pos);
    HbmLocation h = loc;
    geo_.apply_hash(h, offset);  // no-op without /chip/hbm/address_hash
    run.channel = h.channel;
    run.pseudo_channel = h.pseudo_channel;
    run.bank_group = h.bank_group;
    run.bank = h.bank;
    run.sid = h.sid;
    run.row = loc.row;
    run.bursts = int((in_unit + take - 1) / burst - in_unit / burst + 1);
    last = std::max(last, stacks_[std::size_t(loc.stack)]->reserve(run, arrival_ck));
    pos += take;
    if (++loc.stack < p.stacks) continue;
    loc.stack = 0;
    if (++loc.channel < p.channels) continue;
    loc.channel = 0;
    if (++loc.pseudo_channel < p.pseudo_channels) continue;
    loc.pseudo_channel = 0;
    if (++loc.bank_group < p.bank_groups) continue;
    loc.bank_group = 0;
    if (++unit_in_row < geo_.units_per_row()) continue;
    unit_in_row = 0;
    if (++loc.bank == p.banks_per_group) {
      loc.bank = 0;
      if (++loc.sid == p.sids) {
        loc.sid = 0;
        ++loc.row;
      }
    }
    // The hash offsets depend only on the bank, SID and row, which changed.
    offset = geo_.hash_offsets(loc);
  }

  const sc_core::sc_time done = time_of_clock(last) + controller_latency_;
  if (!any_ || arrival < first_arrival_) first_arrival_ = arrival;
  any_ = true;
  last_completion_ = std::max(last_completion_, done);
  horizon_ck_ = std::max(horizon_ck_, last);
  s_requests_ += 1;
  (r.write ? s_bytes_written_ : s_bytes_read_) += double(r.bytes);
  if (++since_account_ >= kAccountEvery || r.bytes >= il * 64) {
    since_account_ = 0;
    for (auto& s : stacks_) s->account_until(horizon_ck_);
  }
  return done;
}

void HbmSystem::account_until(const sc_core::sc_time& t) {
  horizon_ck_ = std::max(horizon_ck_, clock_at_or_after(t));
  since_account_ = 0;
  for (auto& s : stacks_) s->account_until(horizon_ck_);
  if (any_ && last_completion_ > first_arrival_) {
    s_bandwidth_.value = (s_bytes_read_.value + s_bytes_written_.value) /
                         (last_completion_ - first_arrival_).to_seconds();
  }
}

}  // namespace trnsim::model
