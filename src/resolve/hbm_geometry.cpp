// SPDX-License-Identifier: MIT
#include "trnsim/resolve/hbm_geometry.hpp"

#include <fmt/format.h>

#include <cmath>

#include "trnsim/error.hpp"

namespace trnsim::resolve {

namespace {

constexpr const char* kHbm = "/chip/hbm";

std::string ptr(const char* field) { return fmt::format("{}/{}", kHbm, field); }

std::uint64_t whole(Bytes b, const char* field, const Where& at) {
  try {
    return whole_bytes(b);
  } catch (const InputError&) {
    at.fail(ptr(field), fmt::format("expected a whole number of bytes, got {}", format(b)));
  }
}

}  // namespace

HbmGeometry::HbmGeometry(const config::HbmParams& p, const Where& at) : p_(p) {
  burst_ = whole(p.burst_bytes, "burst_bytes", at);
  interleave_ = whole(p.interleave_bytes, "interleave_bytes", at);
  row_bytes_ = whole(p.row_bytes, "row_bytes", at);
  stack_capacity_ = whole(p.capacity_per_stack, "capacity_per_stack", at);
  if (p.bandwidth.si <= 0) {
    at.fail(ptr("bandwidth"), fmt::format("expected a positive bandwidth, got {}", format(p.bandwidth)));
  }
  if (burst_ == 0 || interleave_ % burst_ != 0) {
    at.fail({ptr("interleave_bytes"), ptr("burst_bytes")},
            fmt::format("the interleave unit ({} B) must be a whole number of bursts "
                        "({}/burst_bytes = {} B)",
                        interleave_, kHbm, burst_));
  }
  if (interleave_ == 0 || row_bytes_ % interleave_ != 0) {
    at.fail({ptr("row_bytes"), ptr("interleave_bytes")},
            fmt::format("a row ({} B) must hold a whole number of interleave units "
                        "({}/interleave_bytes = {} B)",
                        row_bytes_, kHbm, interleave_));
  }
  units_per_row_ = int(row_bytes_ / interleave_);
  const std::uint64_t row_set = std::uint64_t(pcs_per_stack()) * std::uint64_t(banks_per_pc()) *
                                row_bytes_;  // one row in every bank of the stack
  if (stack_capacity_ % row_set != 0) {
    at.fail({ptr("capacity_per_stack"), ptr("channels"), ptr("pseudo_channels"), ptr("sids"),
             ptr("bank_groups"), ptr("banks_per_group"), ptr("row_bytes")},
            fmt::format("{} B is not a whole number of rows: channels x pseudo_channels x sids x "
                        "bank_groups x banks_per_group x row_bytes = {} B",
                        stack_capacity_, row_set));
  }
  rows_ = std::int64_t(stack_capacity_ / row_set);
  capacity_ = stack_capacity_ * std::uint64_t(p.stacks);

  // Command clock from the pin rate the bandwidth implies.
  const int pcs = pcs_per_stack();
  if (p.bus_bits_per_stack % pcs != 0) {
    at.fail({ptr("bus_bits_per_stack"), ptr("channels"), ptr("pseudo_channels")},
            fmt::format("{} data pins do not split evenly over {} pseudo-channels "
                        "({}/channels x pseudo_channels)",
                        p.bus_bits_per_stack, pcs, kHbm));
  }
  pin_rate_ = p.bandwidth.si * 8.0 / (double(p.stacks) * double(p.bus_bits_per_stack));
  tck_ = double(kBitsPerPinPerClock) / pin_rate_;
  // The kernel counts picoseconds: a clock shorter than one has no whole cycle.
  if (!(tck_ >= 1e-12)) {
    at.fail(ptr("bandwidth"),
            fmt::format("implies an HBM command clock of {:.3g} Hz ({} bits per pin per clock over "
                        "{} pins per stack); expected at most 1 THz",
                        1.0 / tck_, kBitsPerPinPerClock, p.bus_bits_per_stack));
  }
  // The per-stack bandwidth the timing gives must be the configured one: a burst carries
  // pc_width * burst_ck * 4 bits.
  const double timing_bw = double(pcs) * double(burst_) / (double(p.timing.burst_ck) * tck_);
  const double config_bw = p.bandwidth.si / double(p.stacks);
  if (std::abs(timing_bw / config_bw - 1.0) > 1e-9) {
    const int pc_bits = p.bus_bits_per_stack / pcs;
    at.fail({ptr("burst_bytes"), ptr("timing/burst_ck"), ptr("bus_bits_per_stack"), ptr("channels"),
             ptr("pseudo_channels"), ptr("bandwidth"), ptr("stacks")},
            fmt::format(
                "inconsistent with {0}/timing/burst_ck, {0}/bus_bits_per_stack, {0}/channels, "
                "{0}/pseudo_channels, {0}/bandwidth and {0}/stacks: a {1}-bit pseudo-channel "
                "moves {2} bits in {3} clocks, but a burst is {4} B; {5} pseudo-channels x {4} B "
                "per {3} tCK at tCK {6} gives {7} per stack, the configured bandwidth gives {8}",
                kHbm, pc_bits, pc_bits * p.timing.burst_ck * kBitsPerPinPerClock,
                p.timing.burst_ck, burst_, pcs, format(Duration(tck_)),
                format(Bandwidth(timing_bw)), format(Bandwidth(config_bw))));
  }
  peak_ = timing_bw * double(p.stacks);

  const auto& t = p.timing;
  ck_.CL = to_ck(t.tCL);
  ck_.RCD = to_ck(t.tRCD);
  ck_.RP = to_ck(t.tRP);
  ck_.RAS = to_ck(t.tRAS);
  ck_.RC = to_ck(t.tRC);
  ck_.WR = to_ck(t.tWR);
  ck_.CWL = to_ck(t.tCWL);
  ck_.RRD_S = to_ck(t.tRRD_S);
  ck_.RRD_L = to_ck(t.tRRD_L);
  ck_.FAW = to_ck(t.tFAW);
  ck_.WTR_S = to_ck(t.tWTR_S);
  ck_.WTR_L = to_ck(t.tWTR_L);
  ck_.RTP = to_ck(t.tRTP);
  ck_.RFC = to_ck(t.tRFC);
  ck_.REFI = to_ck(t.tREFI);
  ck_.RFCsb = to_ck(t.tRFCsb);
  ck_.REFIsb = to_ck(t.tREFIsb);
  ck_.RREFD = to_ck(t.tRREFD);
  ck_.RTW = t.tRTW_ck;
  ck_.CCD_S = t.tCCD_S_ck;
  ck_.CCD_L = t.tCCD_L_ck;
  ck_.BL = t.burst_ck;
  if (ck_.REFI <= ck_.RFC) {
    at.fail({ptr("timing/tREFI"), ptr("timing/tRFC")},
            fmt::format("the refresh interval ({}) must exceed the refresh cycle time "
                        "({}/timing/tRFC = {})",
                        format(t.tREFI), kHbm, format(t.tRFC)));
  }
  if (p.refresh_mode == config::RefreshMode::per_bank) {
    // Every bank gets one REFsb per banks_per_pc x tREFIsb; that must not be longer than tREFI
    // (1 % slack: the sources round tREFIsb up, e.g. 48 x 82 ns = 3936 ns for 3.9 us).
    const double period = double(banks_per_pc()) * t.tREFIsb.si;
    if (period > 1.01 * t.tREFI.si) {
      at.fail(ptr("timing/tREFIsb"),
              fmt::format("each bank is refreshed every sids x bank_groups x banks_per_group x "
                          "tREFIsb = {0} x {1} = {2}, longer than {3}/timing/tREFI ({4}); "
                          "expected tREFIsb <= {5} (tREFI / {0})",
                          banks_per_pc(), format(t.tREFIsb), format(Duration(period)), kHbm,
                          format(t.tREFI), format(Duration(t.tREFI.si / double(banks_per_pc())))));
    }
    if (ck_.REFIsb < ck_.RREFD) {
      at.fail({ptr("timing/tREFIsb"), ptr("timing/tRREFD")},
              fmt::format("per-bank refreshes of a pseudo-channel ({} apart) cannot be closer "
                          "than {}/timing/tRREFD ({})",
                          format(t.tREFIsb), kHbm, format(t.tRREFD)));
    }
    if (ck_.RFCsb >= ck_.REFIsb * banks_per_pc()) {
      at.fail(ptr("timing/tRFCsb"),
              fmt::format("a bank's refresh ({}) must end before its next one ({} later)",
                          format(t.tRFCsb), format(Duration(double(banks_per_pc()) * t.tREFIsb.si))));
    }
  }
  if (ck_.RAS > ck_.RC) {
    at.fail({ptr("timing/tRAS"), ptr("timing/tRC")}, fmt::format("tRAS ({}) exceeds {}/timing/tRC ({})", format(t.tRAS),
                                            kHbm, format(t.tRC)));
  }
}

std::int64_t HbmGeometry::to_ck(Duration d) const {
  // A millionth of a clock of slack so a value that is a whole number of clocks does not round up
  // by floating-point noise.
  return std::int64_t(std::ceil(d.si / tck_ - 1e-6));
}

namespace {
// Sum of the digits of v in base `radix`, modulo radix.
int digit_sum(std::int64_t v, std::int64_t radix) {
  std::int64_t sum = 0;
  for (; v > 0; v /= radix) sum += v % radix;
  return int(sum % radix);
}
}  // namespace

HbmGeometry::HashOffsets HbmGeometry::hash_offsets(const HbmLocation& raw) const {
  HashOffsets o;
  if (p_.address_hash == config::AddressHash::none) return o;
  // Rows that differ in any digit, e.g. a power of two apart, get different bank offsets.
  const std::int64_t banks = std::int64_t(p_.banks_per_group) * p_.sids;
  o.bank = digit_sum(raw.row, banks);
  if (p_.address_hash == config::AddressHash::bank_pc) {
    // Everything above the unit-in-row digit: units of one row keep one pseudo-channel and bank
    // group (the row is still shared by the 4 units of a stream's 128 KiB-apart visits).
    const std::int64_t q = std::int64_t(p_.pseudo_channels) * p_.bank_groups;
    const std::int64_t above = (raw.row * p_.sids + raw.sid) * p_.banks_per_group + raw.bank;
    o.pc = digit_sum(above, q);
  }
  return o;
}

HbmLocation HbmGeometry::decode(std::uint64_t addr) const {
  HbmLocation l = decode_raw(addr);
  apply_hash(l, hash_offsets(l));
  return l;
}

HbmLocation HbmGeometry::decode_raw(std::uint64_t addr) const {
  HbmLocation l;
  std::uint64_t u = addr / interleave_;
  const std::uint64_t in_unit = addr % interleave_;
  l.stack = int(u % std::uint64_t(p_.stacks));
  u /= std::uint64_t(p_.stacks);
  l.channel = int(u % std::uint64_t(p_.channels));
  u /= std::uint64_t(p_.channels);
  l.pseudo_channel = int(u % std::uint64_t(p_.pseudo_channels));
  u /= std::uint64_t(p_.pseudo_channels);
  l.bank_group = int(u % std::uint64_t(p_.bank_groups));
  u /= std::uint64_t(p_.bank_groups);
  const std::uint64_t unit_in_row = u % std::uint64_t(units_per_row_);
  u /= std::uint64_t(units_per_row_);
  l.bank = int(u % std::uint64_t(p_.banks_per_group));
  u /= std::uint64_t(p_.banks_per_group);
  l.sid = int(u % std::uint64_t(p_.sids));
  u /= std::uint64_t(p_.sids);
  l.row = std::int64_t(u);
  l.column_byte = std::int64_t(unit_in_row * interleave_ + in_unit);
  return l;
}

}  // namespace trnsim::resolve
