// SPDX-License-Identifier: MIT
// What the resolve step derives from HbmParams before any sc_module exists: the command clock, the
// timings in whole clocks of it, and the address map. The HBM model is built from it. Pure C++
// (no SystemC) so tests and the per-burst reference model can use it directly.
#pragma once

#include <cstdint>

#include "trnsim/params/chip.hpp"
#include "trnsim/resolve/where.hpp"

namespace trnsim::resolve {

// HBM3/HBM3E move 4 bits per pin per command clock (CK = data rate / 4, see the spec table in
// ../shared/specs/energy-and-timing.md section 2.2), so BL8 on a 32-bit pseudo-channel is 2 tCK.
inline constexpr int kBitsPerPinPerClock = 4;

// Timings in command clocks (each rounded up to a whole clock, as a controller must).
struct HbmCycles {
  std::int64_t CL = 0, RCD = 0, RP = 0, RAS = 0, RC = 0, WR = 0, CWL = 0, RRD_S = 0, RRD_L = 0,
               FAW = 0, WTR_S = 0, WTR_L = 0, RTP = 0, RFC = 0, REFI = 0;
  std::int64_t RFCsb = 0, REFIsb = 0, RREFD = 0;  // per-bank refresh
  std::int64_t CCD_S = 0, CCD_L = 0, BL = 0;  // BL: clocks a burst occupies the data bus
  std::int64_t RTW = 0;                       // read data end to write data start
};

// Where one byte address lives. Banks are numbered inside a pseudo-channel:
// bank_index = (sid * bank_groups + bank_group) * banks_per_group + bank.
struct HbmLocation {
  int stack = 0, channel = 0, pseudo_channel = 0, bank_group = 0, bank = 0, sid = 0;
  std::int64_t row = 0;
  std::int64_t column_byte = 0;  // byte offset inside the row
};

class HbmGeometry {
 public:
  // Validates the parameters and derives the clock; throws ConfigError naming the file and JSON
  // pointer (under /chip/hbm) of an inconsistent value.
  explicit HbmGeometry(const config::HbmParams& p, const Where& at = Where{});

  const config::HbmParams& params() const { return p_; }
  const HbmCycles& ck() const { return ck_; }
  double tck_seconds() const { return tck_; }
  double pin_rate_bits_per_s() const { return pin_rate_; }
  // Peak of all stacks as the timing gives it: PCs * burst_bytes / (burst_ck * tCK) * stacks.
  double peak_bytes_per_s() const { return peak_; }

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t stack_capacity() const { return stack_capacity_; }
  int pcs_per_stack() const { return p_.channels * p_.pseudo_channels; }
  int banks_per_pc() const { return p_.sids * p_.bank_groups * p_.banks_per_group; }
  std::int64_t rows_per_bank() const { return rows_; }
  std::uint64_t interleave() const { return interleave_; }
  std::uint64_t burst() const { return burst_; }
  std::uint64_t row_bytes() const { return row_bytes_; }
  int units_per_row() const { return units_per_row_; }

  // The address map (mixed radix, least significant first; see docs/models/hbm.md):
  //   byte in interleave unit | stack | channel | pseudo-channel | bank group |
  //   unit within row | bank | SID | row
  // Precondition: addr < capacity().
  HbmLocation decode(std::uint64_t addr) const;
  // decode() without /chip/hbm/address_hash: the digits as they are in the address.
  HbmLocation decode_raw(std::uint64_t addr) const;
  // The offsets /chip/hbm/address_hash adds to the digits of a raw location; they depend only on
  // its bank, SID and row, so a walk over consecutive units recomputes them when those change.
  struct HashOffsets {
    int bank = 0;  // added modulo sids x banks_per_group to bank + banks_per_group x sid
    int pc = 0;    // added modulo bank_groups x pseudo_channels to pc + pseudo_channels x group
  };
  HashOffsets hash_offsets(const HbmLocation& raw) const;
  // Applies `o` to a raw location's digits.
  void apply_hash(HbmLocation& l, const HashOffsets& o) const {
    if (o.bank != 0) {
      const int b = (l.bank + p_.banks_per_group * l.sid + o.bank) % (p_.banks_per_group * p_.sids);
      l.bank = b % p_.banks_per_group;
      l.sid = b / p_.banks_per_group;
    }
    if (o.pc != 0) {
      const int q = (l.pseudo_channel + p_.pseudo_channels * l.bank_group + o.pc) %
                    (p_.pseudo_channels * p_.bank_groups);
      l.pseudo_channel = q % p_.pseudo_channels;
      l.bank_group = q / p_.pseudo_channels;
    }
  }

  // Duration (seconds) rounded up to whole clocks.
  std::int64_t to_ck(Duration d) const;

 private:
  config::HbmParams p_;
  HbmCycles ck_{};
  double tck_ = 0, pin_rate_ = 0, peak_ = 0;
  std::uint64_t capacity_ = 0, stack_capacity_ = 0, interleave_ = 0, burst_ = 0, row_bytes_ = 0;
  std::int64_t rows_ = 0;
  int units_per_row_ = 0;
};

}  // namespace trnsim::resolve
