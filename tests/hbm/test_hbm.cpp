// SPDX-License-Identifier: MIT
// HBM model: hand-computed clocks for single accesses, activation limits, refresh, the address
// map, energy and errors. Every TEST builds at most one HbmSystem (one elaboration per process).
//
// Trainium3 preset (configs/chips/trn3.json): 4.9 TB/s over 4 stacks x 1024 pins = 9.5703125 Gb/s
// per pin, tCK = 4 / 9.5703125e9 s = 0.41796 ns. In clocks (ns / tCK, rounded up):
// tCL 35, tRCD 35, tRP 35, tRAS 83, tRC 116, tWR 39, tCWL 11, tRRD_S 3, tRRD_L 6, tFAW 72,
// tWTR_S 15, tWTR_L 20, tRTP 15, tRFC 1197, tREFI 9332; tCCD_S 2, tCCD_L 4, burst 2.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "hbm/hbm_system.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"

// libsystemc's own main() needs sc_main; GoogleTest's main() is the one that runs.
int sc_main(int, char**) { return 1; }

namespace trnsim::model {
namespace {

config::HbmParams trn(const char* chip) {
  const auto c =
      config::load_config(std::string(TRNSIM_SOURCE_DIR) + "/configs/chips/" + chip + ".json");
  return c.config.chip->hbm;
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

TEST(HbmSystem, RowMissOnIdleStack) {
  HbmSystem h("hbm", trn("trn3"));
  // 32 B at 0: ACT at 0, READ at tRCD = 35, data 70..72.
  expect_time(h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME), done_at(35 + 35 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 1);
  // 64 B: two bursts in one bank, tCCD_L = 4 apart: data 70..72 and 74..76.
  expect_time(h.access_at({0x100, 64, false}, sc_core::SC_ZERO_TIME), done_at(35 + 35 + 4 + 2));
}

TEST(HbmSystem, RowHitAfterMiss) {
  HbmSystem h("hbm", trn("trn3"));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Same row, arriving at clock 479 when the bank is idle: READ at 479, data 514..516.
  expect_time(h.access_at({32, 32, false}, at_clock(h, 479)), done_at(479 + 35 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 1);
  EXPECT_EQ(stat(h.stack(0), "activates"), 1);
}

TEST(HbmSystem, RowConflictAddsPrecharge) {
  HbmSystem h("hbm", trn("trn3"));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Row 1 of the same bank at clock 300: PRE 300, ACT 335 (tRP), READ 370, data 405..407
  // (before channel 0's first refresh at 583).
  expect_time(h.access_at({0x600000, 32, false}, at_clock(h, 300)), done_at(300 + 35 + 35 + 35 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_conflicts"), 1);
}

TEST(HbmSystem, RowConflictWaitsForTras) {
  HbmSystem h("hbm", trn("trn3"));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Immediately: PRE waits for tRAS (83), ACT at max(83 + tRP, tRC) = max(118, 116) = 118,
  // data 188..190.
  expect_time(h.access_at({0x600000, 32, false}, sc_core::SC_ZERO_TIME), done_at(118 + 70 + 2));
}

TEST(HbmSystem, ReadAfterWriteWaitsForTwtrL) {
  HbmSystem h("hbm", trn("trn3"));
  // Write: ACT 0, WRITE at 35, data 46..48.
  expect_time(h.access_at({0, 32, true}, sc_core::SC_ZERO_TIME), done_at(35 + 11 + 2));
  // Read of the same row (same bank group): READ at 48 + tWTR_L = 68, data 103..105.
  expect_time(h.access_at({32, 32, false}, sc_core::SC_ZERO_TIME), done_at(68 + 35 + 2));
}

TEST(HbmSystem, ClosedPagePolicyPrechargesAfterEachAccess) {
  auto p = trn("trn3");
  p.page_policy = config::PagePolicy::closed;
  HbmSystem h("hbm", p);
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);
  // Same row again: the bank was auto-precharged at max(tRAS 83, READ 35 + tRTP 15) = 83, so
  // ACT at max(83 + tRP, tRC) = 118, data 188..190, a miss.
  expect_time(h.access_at({32, 32, false}, sc_core::SC_ZERO_TIME), done_at(118 + 70 + 2));
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 2);
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 0);
}

TEST(HbmSystem, FourActivateWindowDelaysTheFifth) {
  HbmSystem h("hbm", trn("trn3"));
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
  HbmSystem h("hbm", trn("trn3"));
  // Channel 0 refreshes first at tREFI / 16 = 583, for tRFC: [583, 1780). A read of channel 0
  // arriving at 560 would run 560..632, so it goes behind the refresh: ACT 1780, data ..1852.
  EXPECT_EQ(h.stack(0).refresh_start(0, 0), 583);
  expect_time(h.access_at({0, 32, false}, at_clock(h, 560)), done_at(1780 + 72));
  EXPECT_EQ(stat(h.stack(0), "refresh_delays"), 1);
  // Channel 1 refreshes from 1166 only: the same read there is not delayed.
  expect_time(h.access_at({0x400, 32, false}, at_clock(h, 560)), done_at(560 + 72));
}

TEST(HbmSystem, RefreshClosesOpenRows) {
  HbmSystem h("hbm", trn("trn3"));
  h.access_at({0, 32, false}, sc_core::SC_ZERO_TIME);  // opens row 0, done at clock 72
  // After the refresh of channel 0 ([583, 1780)) the row is closed: a miss, not a hit.
  expect_time(h.access_at({32, 32, false}, at_clock(h, 1800)), done_at(1800 + 72));
  EXPECT_EQ(stat(h.stack(0), "row_misses"), 2);
  EXPECT_EQ(stat(h.stack(0), "row_hits"), 0);
}

TEST(HbmSystem, RefreshesCountedFromTheClock) {
  HbmSystem h("hbm", trn("trn3"));
  // Until clock 3 x 9332: channels 0..14 start refreshes at phase + {0, 1, 2} x tREFI, channel 15
  // (phase = tREFI) at {1, 2} x tREFI: 15 x 3 + 2 = 47 per stack.
  h.account_until(at_clock(h, 3 * 9332));
  EXPECT_EQ(sum_stat(h, "refreshes"), 4 * 47);
  const auto e = collect_energy(Duration(0), &h);
  EXPECT_NEAR(e.by_category_joules.at("hbm_refresh"), 4 * 47 * 70e-9, 1e-15);
}

TEST(HbmSystem, SequentialReadEnergyByHand) {
  HbmSystem h("hbm", trn("trn3"));
  // 512 KiB from 0: 2048 units of 256 B over 128 PCs = 16 units per PC, 4 per bank group, all in
  // one 1 KiB row of bank 0 (4 units per row): 4 ACTs per PC, 512 in all; 1536 row hits.
  const std::uint64_t n = 512 * 1024;
  const sc_core::sc_time done = h.access_at({0, n, false}, sc_core::SC_ZERO_TIME);
  h.account_until(done);
  EXPECT_EQ(sum_stat(h, "activates"), 512);
  EXPECT_EQ(sum_stat(h, "row_hits"), 1536);
  EXPECT_EQ(sum_stat(h, "bytes_read"), double(n));
  const auto e = collect_energy(Duration(0), &h);
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
  EXPECT_NEAR(collect_energy(Duration(1e-3), &h).static_.si, 4 * 1.5 * 1e-3, 1e-12);
}

TEST(HbmSystem, SubBurstRoundsUpToWholeBursts) {
  HbmSystem h("hbm", trn("trn3"));
  h.access_at({5, 1, false}, sc_core::SC_ZERO_TIME);      // one burst
  h.access_at({0x130, 40, false}, sc_core::SC_ZERO_TIME);  // bytes 0x30..0x58 of a unit: 2 bursts
  EXPECT_EQ(stat(h.stack(0), "bytes_read"), 32);
  EXPECT_EQ(stat(h.stack(1), "bytes_read"), 64);
  EXPECT_EQ(stat(h, "bytes_read"), 41);
}

TEST(HbmSystem, AddressOutsideCapacityIsInputError) {
  HbmSystem h("hbm", trn("trn3"));
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

}  // namespace trnsim::model
