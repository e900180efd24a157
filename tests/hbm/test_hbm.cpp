// SPDX-License-Identifier: MIT
// HBM model: hand-computed clocks for single accesses, activation limits, refresh, the address
// map, energy and errors. Every TEST builds at most one HbmSystem (one elaboration per process).
//
// Trainium3 preset (configs/chips/trn3.json): 4.9 TB/s over 4 stacks x 1024 pins = 9.5703125 Gb/s
// per pin, tCK = 4 / 9.5703125e9 s = 0.41796 ns. In clocks (ns / tCK, rounded up):
// tCL 35, tRCD 35, tRP 35, tRAS 83, tRC 116, tWR 39, tCWL 11, tRRD_S 3, tRRD_L 6, tFAW 72,
// tWTR_S 15, tWTR_L 20, tRTP 15, tRFC 1197, tREFI 9332; tCCD_S 2, tCCD_L 4, burst 2;
// per-bank refresh: tRFCsb 479, tREFIsb 197, tRREFD 20; read-to-write gap 2.
//
// The single-access tests compute their clocks with all-bank refresh (the first refresh, channel
// 0's, starts at clock 583, after them); the PerBank tests use the preset's default, per_bank.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "hbm/hbm_system.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"

// libsystemc's own main() needs sc_main; GoogleTest's main() is the one that runs.
int sc_main(int, char**) { return 1; }

namespace trnsim::model {
namespace {

// The timing tests place requests in banks by the address digits themselves, so they turn the
// preset's address hash off; the hash has its own tests (AddressHash*).
config::HbmParams preset(const char* chip) {
  const auto c =
      config::load_config(std::string(TRNSIM_SOURCE_DIR) + "/configs/chips/" + chip + ".json");
  auto p = c.config.chip->hbm;
  p.address_hash = config::AddressHash::none;
  return p;
}

config::HbmParams trn(const char* chip) {
  auto p = preset(chip);
  p.refresh_mode = config::RefreshMode::all_bank;
  return p;
}

const double kTck = 4.0 / 9.5703125e9;  // seconds, Trainium3
const double kCtrl = 55e-9;             // controller_latency of the preset

// Completion of an access whose last data beat ends at clock `ck`.
double done_at(std::int64_t ck) { return double(ck) * kTck + kCtrl; }

sc_core::sc_time at_clock(const HbmSystem& h, std::int64_t ck) { return h.time_of_clock(ck); }

double stat(const Block& b, const std::string& name) {
  for (const auto& s : b.stats().all()) {
    if (s.name == name) return s.value;
  }
  ADD_FAILURE() << "no statistic " << name;
  return -1;
}

double sum_stat(HbmSystem& h, const std::string& name) {
  double v = 0;
  for (int s = 0; s < h.stacks(); ++s) v += stat(h.stack(s), name);
  return v;
}

// Completion times are converted to sc_time with 1 ps resolution.
void expect_time(const sc_core::sc_time& t, double seconds) {
  EXPECT_NEAR(t.to_seconds(), seconds, 1e-12) << "got " << t.to_seconds() * 1e9 << " ns";
}

}  // namespace

TEST(HbmGeometry, DerivedClockAndTimingsTrn3) {
  const HbmGeometry g(trn("trn3"));
  EXPECT_DOUBLE_EQ(g.pin_rate_bits_per_s(), 9.5703125e9);
  EXPECT_NEAR(g.tck_seconds(), kTck, 1e-18);
  EXPECT_NEAR(g.peak_bytes_per_s(), 4.9e12, 1.0);
  const auto& c = g.ck();
  EXPECT_EQ(c.CL, 35);
  EXPECT_EQ(c.RCD, 35);
  EXPECT_EQ(c.RP, 35);
  EXPECT_EQ(c.RAS, 83);
  EXPECT_EQ(c.RC, 116);
  EXPECT_EQ(c.WR, 39);
  EXPECT_EQ(c.CWL, 11);
  EXPECT_EQ(c.RRD_S, 3);
  EXPECT_EQ(c.RRD_L, 6);
  EXPECT_EQ(c.FAW, 72);
  EXPECT_EQ(c.WTR_S, 15);
  EXPECT_EQ(c.WTR_L, 20);
  EXPECT_EQ(c.RTP, 15);
  EXPECT_EQ(c.RFC, 1197);
  EXPECT_EQ(c.REFI, 9332);
  EXPECT_EQ(c.RFCsb, 479);   // 200 / 0.41796 = 478.5
  EXPECT_EQ(c.REFIsb, 197);  // 82 / 0.41796 = 196.2
  EXPECT_EQ(c.RREFD, 20);    // 8.1 / 0.41796 = 19.4
  EXPECT_EQ(c.RTW, 2);
  // 144 GiB; 36 GiB per stack / (32 PCs x 48 banks x 1 KiB) = 24576 rows per bank.
  EXPECT_EQ(g.capacity(), 144ull << 30);
  EXPECT_EQ(g.rows_per_bank(), 24576);
}

TEST(HbmGeometry, DerivedClockTrn2) {
  // 2.9 TB/s / 4 stacks / 1024 pins = 5.6640625 Gb/s per pin; tCK = 0.70621 ns.
  const HbmGeometry g(trn("trn2"));
  EXPECT_DOUBLE_EQ(g.pin_rate_bits_per_s(), 5.6640625e9);
  EXPECT_NEAR(g.peak_bytes_per_s(), 2.9e12, 1.0);
  EXPECT_EQ(g.ck().CL, 21);   // 14.742 / 0.70621 = 20.87
  EXPECT_EQ(g.ck().FAW, 43);  // 30.186 / 0.70621 = 42.74
  EXPECT_EQ(g.ck().RFCsb, 284);  // 200.07 / 0.70621 = 283.3
  EXPECT_EQ(g.ck().REFIsb, 173);  // 122 / 0.70621 = 172.8
  EXPECT_EQ(g.ck().RREFD, 12);    // 8.424 / 0.70621 = 11.9
  EXPECT_EQ(g.rows_per_bank(), 24576);  // 24 GiB / (32 x 32 banks x 1 KiB)
}

TEST(HbmGeometry, InconsistentBurstIsConfigErrorNamingPointers) {
  auto p = trn("trn3");
  p.burst_bytes = Bytes(64);  // a 32-bit PC moves 32 B in 2 clocks, not 64 B
  try {
    HbmGeometry g(p);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/chip/hbm/burst_bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("/chip/hbm/timing/burst_ck"), std::string::npos) << m;
    EXPECT_NE(m.find("/chip/hbm/bandwidth"), std::string::npos) << m;
  }
}

TEST(HbmGeometry, CapacityNotWholeRowsIsConfigError) {
  auto p = trn("trn3");
  p.capacity_per_stack = Bytes(36.0 * 1073741824.0 + 1024.0);
  EXPECT_THROW(HbmGeometry{p}, ConfigError);
}

TEST(HbmGeometry, AddressMapByHand) {
  // byte in 256 B unit | stack (4) | channel (16) | PC (2) | bank group (4) | unit in row (4) |
  // bank (4) | SID (3) | row
  const HbmGeometry g(trn("trn3"));
  auto l = g.decode(0);
  EXPECT_EQ(l.stack + l.channel + l.pseudo_channel + l.bank_group + l.bank + l.sid, 0);
  EXPECT_EQ(l.row, 0);
  EXPECT_EQ(g.decode(0x100).stack, 1);
  EXPECT_EQ(g.decode(0x400).channel, 1);         // unit 4
  EXPECT_EQ(g.decode(0x4000).pseudo_channel, 1);  // unit 64
  EXPECT_EQ(g.decode(0x8000).bank_group, 1);      // unit 128
  EXPECT_EQ(g.decode(0x20000).column_byte, 256);  // unit 512: second unit of the row
  EXPECT_EQ(g.decode(0x80000).bank, 1);           // unit 2048
  EXPECT_EQ(g.decode(0x200000).sid, 1);           // unit 8192
  EXPECT_EQ(g.decode(0x600000).row, 1);           // unit 24576
  l = g.decode(0x600000 + 2 * 0x200000 + 3 * 0x80000 + 2 * 0x20000 + 3 * 0x8000 + 0x4000 +
               5 * 0x400 + 3 * 0x100 + 0x47);
  EXPECT_EQ(l.row, 1);
  EXPECT_EQ(l.sid, 2);
  EXPECT_EQ(l.bank, 3);
  EXPECT_EQ(l.column_byte, 2 * 256 + 0x47);
  EXPECT_EQ(l.bank_group, 3);
  EXPECT_EQ(l.pseudo_channel, 1);
  EXPECT_EQ(l.channel, 5);
  EXPECT_EQ(l.stack, 3);
  l = g.decode(g.capacity() - 1);
  EXPECT_EQ(l.row, 24575);
  EXPECT_EQ(l.stack, 3);
  EXPECT_EQ(l.sid, 2);
  EXPECT_EQ(l.column_byte, 1023);
}

// bank_pc (the presets' hash) by hand, Trainium3: bank offset = digit sum of the row in base
// banks x SIDs = 12; pseudo-channel/bank-group offset = digit sum of (row x 3 + SID) x 4 + bank
// in base PCs x bank groups = 8, added to PC + 2 x bank group.
TEST(HbmGeometry, AddressHashByHand) {
  auto p = preset("trn3");
  p.address_hash = config::AddressHash::bank_pc;
  const HbmGeometry g(p);
  auto l = g.decode(0);  // row 0, SID 0, bank 0: no offsets
  EXPECT_EQ(l.pseudo_channel + l.bank_group + l.bank + l.sid + l.row, 0);
  // 0x200000: SID 1. Bank offset 0 (row 0); (0 x 3 + 1) x 4 + 0 = 4 -> offset 4 -> bank group 2.
  l = g.decode(0x200000);
  EXPECT_EQ(l.sid, 1);
  EXPECT_EQ(l.bank, 0);
  EXPECT_EQ(l.pseudo_channel, 0);
  EXPECT_EQ(l.bank_group, 2);
  // 0x600000: row 1. Bank offset 1 -> bank 1; (1 x 3 + 0) x 4 + 0 = 12 = 14 in base 8 -> 5 ->
  // PC 1, bank group 2. Row, stack, channel and column are never changed.
  l = g.decode(0x600000 + 0x20000 + 0x100 + 0x47);
  EXPECT_EQ(l.row, 1);
  EXPECT_EQ(l.sid, 0);
  EXPECT_EQ(l.bank, 1);
  EXPECT_EQ(l.pseudo_channel, 1);
  EXPECT_EQ(l.bank_group, 2);
  EXPECT_EQ(l.stack, 1);
  EXPECT_EQ(l.channel, 0);
  EXPECT_EQ(l.column_byte, 256 + 0x47);
}

// Every hash is a bijection: the 256 B units of the first four rows of every bank (24 MiB on
// Trainium3, 16 MiB on Trainium2) land on distinct (stack, channel, PC, bank group, bank, SID,
// row, column) places, with the raw row and column.
TEST(HbmGeometry, AddressHashIsOneToOne) {
  for (const char* chip : {"trn3", "trn2"}) {
    for (auto hash : {config::AddressHash::bank, config::AddressHash::bank_pc}) {
      auto p = preset(chip);
      p.address_hash = hash;
      const HbmGeometry g(p);
      const std::uint64_t row_set = std::uint64_t(g.capacity() / std::uint64_t(g.decode(g.capacity() - 1).row + 1));
      std::vector<bool> seen(std::size_t(4 * row_set / 256), false);
      for (std::uint64_t a = 0; a < 4 * row_set; a += 256) {
        const HbmLocation l = g.decode(a), raw = g.decode_raw(a);
        EXPECT_EQ(l.row, raw.row);
        EXPECT_EQ(l.column_byte, raw.column_byte);
        // Mixed-radix index of the place, in the raw map's digit order.
        std::uint64_t i = std::uint64_t(l.row);
        i = i * std::uint64_t(p.sids) + std::uint64_t(l.sid);
        i = i * std::uint64_t(p.banks_per_group) + std::uint64_t(l.bank);
        i = i * std::uint64_t(g.units_per_row()) + std::uint64_t(l.column_byte / 256);
        i = i * std::uint64_t(p.bank_groups) + std::uint64_t(l.bank_group);
        i = i * std::uint64_t(p.pseudo_channels) + std::uint64_t(l.pseudo_channel);
        i = i * std::uint64_t(p.channels) + std::uint64_t(l.channel);
        i = i * std::uint64_t(p.stacks) + std::uint64_t(l.stack);
        ASSERT_LT(i, seen.size());
        ASSERT_FALSE(seen[std::size_t(i)]) << chip << " address " << a;
        seen[std::size_t(i)] = true;
      }
    }
  }
}

TEST(HbmSystem, RowMissOnIdleStack) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  // 32 B at 0: ACT at 0, READ at tRCD = 35, data 70..72.
  expect_time(h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME), done_at(35 + 35 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 1);
  // 64 B: two bursts in one bank, tCCD_L = 4 apart: data 70..72 and 74..76.
  expect_time(h.access_at({0x100, 64, false}, sc_core::SC_ZERO_TIME), done_at(35 + 35 + 4 + 2));
}

TEST(HbmSystem, RowHitAfterMiss) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Same row, arriving at clock 479 when the bank is idle: READ at 479, data 514..516.
  expect_time(h.access_at({32, 32, false}, at_clock(h, 479)), done_at(479 + 35 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 1);
  EXPECT_EQ(stat(h.stack(0), "activates"), 1);
}

TEST(HbmSystem, RowConflictAddsPrecharge) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Row 1 of the same bank at clock 300: PRE 300, ACT 335 (tRP), READ 370, data 405..407
  // (before channel 0's first refresh at 583).
  expect_time(h.access_at({0x600000, 32, false}, at_clock(h, 300)), done_at(300 + 35 + 35 + 35 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_conflicts"), 1);
}

TEST(HbmSystem, RowConflictWaitsForTras) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Immediately: PRE waits for tRAS (83), ACT at max(83 + tRP, tRC) = max(118, 116) = 118,
  // data 188..190.
  expect_time(h.access_at({0x600000, 32, false}, sc_core::SC_ZERO_TIME), done_at(118 + 70 + 2));
}

TEST(HbmSystem, ReadAfterWriteWaitsForTwtrL) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  // Write: ACT 0, WRITE at 35, data 46..48.
  expect_time(h.access_at({0, 32, true}, sc_core::SC_ZERO_TIME), done_at(35 + 11 + 2));
  // Read of the same row (same bank group): READ at 48 + tWTR_L = 68, data 103..105.
  expect_time(h.access_at({32, 32, false}, sc_core::SC_ZERO_TIME), done_at(68 + 35 + 2));
}

TEST(HbmSystem, ClosedPagePolicyPrechargesAfterEachAccess) {
  auto p = trn("trn3");
  p.page_policy = config::PagePolicy::closed;
  HbmSystem h("hbm", HbmGeometry(p));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Same row again: the bank was auto-precharged at max(tRAS 83, READ 35 + tRTP 15) = 83, so
  // ACT at max(83 + tRP, tRC) = 118, data 188..190, a miss.
  expect_time(h.access_at({32, 32, false}, sc_core::SC_ZERO_TIME), done_at(118 + 70 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 2);
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 0);
}

TEST(HbmSystem, FourActivateWindowDelaysTheFifth) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  // Five banks of stack 0, channel 0, PC 0: bank groups 0..3, then bank group 0 bank 1.
  // ACTs at 0, 3, 6, 9 (tRRD_S); the fifth waits for the first + tFAW = 72.
  const std::uint64_t addr[5] = {0, 0x8000, 0x10000, 0x18000, 0x80000};
  const std::int64_t end[5] = {72, 75, 78, 81, 72 + 70 + 2};
  for (int i = 0; i < 5; ++i) {
    expect_time(h.access_at({addr[i], 32, false}, sc_core::SC_ZERO_TIME), done_at(end[i]));
  }
  EXPECT_EQ(stat(h.stack(0), "activates"), 5);
}

TEST(HbmSystem, RefreshBlocksTheChannel) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  // Channel 0 refreshes first at tREFI / 16 = 583, for tRFC: [583, 1780). A read of channel 0
  // arriving at 560 would run 560..632, so it goes behind the refresh: ACT 1780, data ..1852.
  EXPECT_EQ(h.stack(0).refresh_start(0, 0), 583);
  expect_time(h.access_at({0, 32, false}, at_clock(h, 560)), done_at(1780 + 72));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 1);
  // Channel 1 refreshes from 1166 only: the same read there is not delayed.
  expect_time(h.access_at({0x400, 32, false}, at_clock(h, 560)), done_at(560 + 72));
}

TEST(HbmSystem, RefreshClosesOpenRows) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);  // opens row 0, done at clock 72
  // After the refresh of channel 0 ([583, 1780)) the row is closed: a miss, not a hit.
  expect_time(h.access_at({32, 32, false}, at_clock(h, 1800)), done_at(1800 + 72));
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 2);
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 0);
}

TEST(HbmSystem, RefreshesCountedFromTheClock) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  // Until clock 3 x 9332: channels 0..14 start refreshes at phase + {0, 1, 2} x tREFI, channel 15
  // (phase = tREFI) at {1, 2} x tREFI: 15 x 3 + 2 = 47 per stack.
  h.account_until(at_clock(h, 3 * 9332));
  EXPECT_EQ(sum_stat(h, "refreshes"), 4 * 47);
  const auto e = collect_energy(TablePower{}, Duration(0), &h);
  EXPECT_NEAR(e.by_category_joules.at("hbm_refresh"), 4 * 47 * 70e-9, 1e-15);
}

TEST(HbmSystem, SequentialReadEnergyByHand) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  // 512 KiB from 0: 2048 units of 256 B over 128 PCs = 16 units per PC, 4 per bank group, all in
  // one 1 KiB row of bank 0 (4 units per row): 4 ACTs per PC, 512 in all; 1536 row hits.
  const std::uint64_t n = 512 * 1024;
  const sc_core::sc_time done = h.access_at({0, n, false}, sc_core::SC_ZERO_TIME);
  h.account_until(done);
  EXPECT_EQ(sum_stat(h, "activates"), 512);
  EXPECT_EQ(sum_stat(h, "row_hits"), 1536);
  EXPECT_EQ(sum_stat(h, "bytes_read"), double(n));
  const auto e = collect_energy(TablePower{}, Duration(0), &h);
  const double bits = 8.0 * double(n);
  EXPECT_NEAR(e.by_category_joules.at("hbm_activate"), 512 * 0.55e-9, 1e-18);
  EXPECT_NEAR(e.by_category_joules.at("hbm_read"), bits * 2.5e-12, 1e-18);
  EXPECT_NEAR(e.by_category_joules.at("hbm_phy"), bits * 0.3e-12, 1e-18);
  EXPECT_NEAR(e.by_category_joules.at("hbm_controller"), bits * 0.2e-12, 1e-18);
  // Per PC: first data at 70, 16 runs of 8 bursts x 2 clocks, the last run paced by its bank
  // group (7 x tCCD_L + burst = 30): 70 + 15 x 16 + 30 = 340, before the first refresh (583).
  expect_time(done, done_at(340));
  EXPECT_EQ(e.by_category_joules.count("hbm_refresh"), 0u);
  // Background power: 4 stacks x 1.5 W.
  EXPECT_NEAR(collect_energy(TablePower{}, Duration(1e-3), &h).static_.si, 4 * 1.5 * 1e-3, 1e-12);
}

TEST(HbmSystem, SubBurstRoundsUpToWholeBursts) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  h.access_at({5, 1, false}, sc_core::SC_ZERO_TIME);      // one burst
  h.access_at({0x130, 40, false}, sc_core::SC_ZERO_TIME);  // bytes 0x30..0x58 of a unit: 2 bursts
  EXPECT_EQ(stat(h.stack(0), "bytes_read"), 32);
  EXPECT_EQ(stat(h.stack(1), "bytes_read"), 64);
  EXPECT_EQ(stat(h, "bytes_read"), 41);
}

TEST(HbmSystem, AddressOutsideCapacityIsInputError) {
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  const std::uint64_t cap = h.geometry().capacity();
  EXPECT_THROW(h.access_at({cap, 32, false}, sc_core::SC_ZERO_TIME), InputError);
  EXPECT_THROW(h.access_at({cap - 16, 32, false}, sc_core::SC_ZERO_TIME), InputError);
  EXPECT_THROW(h.access_at({0, 0, false}, sc_core::SC_ZERO_TIME), InputError);
  EXPECT_NO_THROW(h.access_at({cap - 32, 32, true}, sc_core::SC_ZERO_TIME));
  try {
    h.access_at({cap, 1, false}, sc_core::SC_ZERO_TIME);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the HBM"), std::string::npos) << e.what();
  }
}

TEST(HbmGeometry, PresetsDefaultToPerBankRefresh) {
  EXPECT_EQ(preset("trn3").refresh_mode, config::RefreshMode::per_bank);
  EXPECT_EQ(preset("trn2").refresh_mode, config::RefreshMode::per_bank);
}

TEST(HbmGeometry, PerBankRefreshIntervalTooLongIsConfigError) {
  // 48 banks per PC x 122 ns (the 8-Hi value) = 5.86 us: banks would go unrefreshed for longer
  // than tREFI = 3.9 us.
  auto p = preset("trn3");
  p.timing.tREFIsb = Duration(122e-9);
  try {
    HbmGeometry g(p);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/chip/hbm/timing/tREFIsb"), std::string::npos) << m;
    EXPECT_NE(m.find("48"), std::string::npos) << m;
  }
  // Not checked when the mode does not use it.
  p.refresh_mode = config::RefreshMode::all_bank;
  EXPECT_NO_THROW(HbmGeometry{p});
}

TEST(HbmSystem, ReadToWriteTurnaroundIsAField) {
  auto p = trn("trn3");
  p.timing.tRTW_ck = 10;
  HbmSystem h("hbm", HbmGeometry(p));
  // Read bank group 0: ACT 0, data 70..72.
  expect_time(h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME), done_at(72));
  // Write bank group 1 of the same PC: ACT just in time at 72 - tCWL - tRCD = 26, data ready at
  // 72, but not before read end + 10 = 82: data 82..84 (with the preset's 2: 74..76).
  expect_time(h.access_at({0x8000, 32, true}, sc_core::SC_ZERO_TIME), done_at(84));
}

// Per-bank refresh, Trainium3: 32 PCs per stack, 48 banks per PC. PC i issues REFsb k at
// (i + 1) x 197 / 32 + 197 k to rotation position (k + i x 48 / 32) mod 48, position =
// sid x 16 + bank x 4 + bank group. PC 0 (channel 0, PC 0): REFsb k at 6 + 197 k to position k:
// bank 0 of bank group 0 (address 0) is refreshed in [6, 485), bank group 1 bank 0 (0x8000) in
// [203, 682), bank group 0 bank 1 (0x80000, position 4) in [794, 1273).

TEST(HbmPerBank, RotationAndStagger) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  const auto& s = h.stack(0);
  EXPECT_EQ(s.refsb_start(0, 0), 6);
  EXPECT_EQ(s.refsb_start(0, 1), 203);
  EXPECT_EQ(s.refsb_start(1, 0), 12);    // 2 x 197 / 32
  EXPECT_EQ(s.refsb_start(31, 0), 197);
  EXPECT_EQ(s.refsb_bank(0, 0), 0);
  EXPECT_EQ(s.refsb_bank(0, 1), 4);      // bank group 1: index (0 x 4 + 1) x 4 + 0
  EXPECT_EQ(s.refsb_bank(0, 4), 1);      // bank group 0, bank 1
  EXPECT_EQ(s.refsb_bank(0, 16), 16);    // SID 1
  EXPECT_EQ(s.refsb_bank(0, 48), 0);     // every bank once per 48 x tREFIsb
  EXPECT_EQ(s.refsb_bank(1, 0), 4);      // PC 1 starts at position 48 / 32 = 1
  EXPECT_EQ(s.refsb_bank(2, 0), 12);     // PC 2 at position 3: bank group 3
}

TEST(HbmPerBank, RequestToTheRefreshingBankWaitsOthersDoNot) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // At clock 100 bank 0 of PC 0 is in its REFsb [6, 485). Bank 1 of the same bank group and PC
  // (position 4, next refresh at 794) is not: ACT 100 (the last REFsb of the PC, at 6, is more
  // than tRREFD before), data 170..172.
  expect_time(h.access_at({0x80000, 32, false}, at_clock(h, 100)), done_at(172));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 0);
  // Bank 0: its ACT would be at max(just in time 172 - 70 = 102, last ACT + tRRD_L = 106) = 106,
  // inside the REFsb, so it waits for its end: ACT 485 (REFsb 2 at 400 is 85 > tRREFD before),
  // data 555..557.
  expect_time(h.access_at({0, 32, false}, at_clock(h, 100)), done_at(555 + 2));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 1);
}

TEST(HbmPerBank, AllBankSameRequestsDoNotWait) {
  // The same two reads under all-bank refresh: channel 0 refreshes only from 583, so neither
  // waits: 172, and the second's ACT at 106 gives data 176..178.
  HbmSystem h("hbm", HbmGeometry(trn("trn3")));
  expect_time(h.access_at({0x80000, 32, false}, at_clock(h, 100)), done_at(172));
  expect_time(h.access_at({0, 32, false}, at_clock(h, 100)), done_at(106 + 70 + 2));
}

TEST(HbmPerBank, QueuedRequestPostponesTheRefreshOfItsBank) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // Bank group 1 bank 0 (0x8000) is due for its REFsb at 203. A read queued at 100: ACT 100,
  // READ 135, data 170..172; the bank is precharged only at max(ACT + tRAS, READ + tRTP) + tRP =
  // 183 + 35 = 218 > 203, so the controller issues that REFsb at 218 instead (15 clocks late,
  // within 8 x tREFIsb): the read is not delayed.
  expect_time(h.access_at({0x8000, 32, false}, at_clock(h, 100)), done_at(172));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 0);
  // The REFsb then runs [218, 697): a read of the same row arriving at 300 waits for it and finds
  // the row closed: ACT 697 (the PC's last REFsb, k = 3 at 597, is more than tRREFD before), data
  // 767..769.
  expect_time(h.access_at({0x8000 + 32, 32, false}, at_clock(h, 300)), done_at(697 + 72));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 1);
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 2);
}

TEST(HbmPerBank, PostponementIsBoundedByEightSlots) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // 400 reads of the same 32 B of 0x8000 (REFsb due at 203), all queued at 100. Read i >= 1 is a
  // hit with READ at 135 + 4 i (tCCD_L) and leaves the bank precharged at 135 + 4 i + tRTP + tRP
  // = 185 + 4 i (from i = 9 on, when that passes ACT + tRAS = 183). Each postpones the REFsb to
  // that clock while it is at most 8 x 197 = 1576 after 203: up to read 398 (1777). Read 399
  // would end at 1781 (1578 late), so it waits for the REFsb [1777, 2256): ACT 2256, data
  // 2326..2328. Read 398's data: 135 + 4 x 398 + 35 .. + 2 = 1764.
  sc_core::sc_time t;
  for (int i = 0; i < 399; ++i) t = h.access_at({0x8000, 32, false}, at_clock(h, 100));
  expect_time(t, done_at(1764));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 0);
  expect_time(h.access_at({0x8000, 32, false}, at_clock(h, 100)), done_at(2328));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 1);
}

TEST(HbmPerBank, RunThatEndsBeforeTheRefreshIsNotDelayed) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // 0x8000 (REFsb due at 203) read at 80: ACT 80, READ 115, precharged by max(163, 130) + 35 =
  // 198 <= 203.
  expect_time(h.access_at({0x8000, 32, false}, at_clock(h, 80)), done_at(152));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 0);
}

TEST(HbmPerBank, ActivateWaitsTrrefdAfterARefreshOfTheSameSid) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // REFsb 1 of PC 0 starts at 203, to a SID-0 bank. SID 1, bank group 0, bank 0 (0x200000,
  // position 16, refreshed from 3158) at 205 is not held: ACT 205, data 275..277.
  expect_time(h.access_at({0x200000, 32, false}, at_clock(h, 205)), done_at(277));
  // SID 0, bank group 0, bank 1 (0x80000, position 4) at 205: ACT no earlier than just in time
  // (277 - 70 = 207) and the last ACT in bank group 0 + tRRD_L = 211, and tRREFD after the REFsb:
  // 203 + 20 = 223; data 293..295.
  expect_time(h.access_at({0x80000, 32, false}, at_clock(h, 205)), done_at(295));
}

TEST(HbmPerBank, RefreshClosesTheRowOfItsBankOnly) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // Row 0 of 0x80000 (position 4, REFsb [794, 1273)) opened at 0: data 70..72.
  expect_time(h.access_at({0x80000, 32, false}, sc_core::SC_ZERO_TIME), done_at(72));
  // At 700 the REFsb of positions 0..3 (at 6, 203, 400, 597) have not closed it: a hit, READ
  // 700, data 735..737.
  expect_time(h.access_at({0x80000 + 32, 32, false}, at_clock(h, 700)), done_at(737));
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 1);
  // Its own REFsb [794, 1273) did: at 1300 a miss. The PC's last REFsb before is k = 6 at 1188
  // (more than tRREFD ago): ACT 1300, data 1370..1372.
  expect_time(h.access_at({0x80000 + 64, 32, false}, at_clock(h, 1300)), done_at(1372));
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 1);
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 2);
}

TEST(HbmPerBank, RefreshesCountedFromTheClockWithTheirEnergy) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // Until clock 1971: PC i starts REFsb at p_i + 197 k with p_i = (i + 1) x 197 / 32 in [6, 197],
  // so k = 0..9 all start before 1971 (197 + 9 x 197 = 1970): 10 per PC, 32 PCs, 4 stacks.
  h.account_until(at_clock(h, 1971));
  EXPECT_EQ(sum_stat(h, "refreshes"), 4 * 32 * 10);
  // A REFsb refreshes one of the 2 PCs x 48 banks a channel's REFab (70 nJ) refreshes.
  const auto e = collect_energy(TablePower{}, Duration(0), &h);
  EXPECT_NEAR(e.by_category_joules.at("hbm_refresh"), 1280 * 70e-9 / 96, 1e-15);
}

TEST(HbmPerBank, RefreshEnergyPerTimeMatchesAllBank) {
  HbmSystem h("hbm", HbmGeometry(preset("trn3")));
  // Until clock 48 x 197 x 2 + 6 = 18918: PC i starts REFsb k while p_i + 197 k <= 18917, i.e.
  // k = 0..95 for every p_i in [6, 197]: 96 REFsb per PC, each bank refreshed twice.
  h.account_until(at_clock(h, 48 * 197 * 2 + 6));
  EXPECT_EQ(sum_stat(h, "refreshes"), 4 * 32 * 96);
  // 96 x 32 x 70/96 nJ = 2240 nJ per stack: what two REFab of each of the 16 channels cost
  // (16 x 2 x 70 nJ).
  const auto e = collect_energy(TablePower{}, Duration(0), &h);
  EXPECT_NEAR(e.by_category_joules.at("hbm_refresh"), 4 * 2240e-9, 1e-14);
}

}  // namespace trnsim::model
