// SPDX-License-Identifier: MIT
// One HBM stack: channels x pseudo-channels, each with SIDs x bank groups x banks, an open row
// and timing state per bank, a data bus per pseudo-channel, activation limits, read/write
// turnaround and refresh: all-bank per channel (REFab) or per-bank per pseudo-channel (REFsb).
//
// Granularity: one reservation per run = the consecutive bursts of one request inside one
// interleave unit (at most interleave_bytes / burst_bytes bursts, all in one open row of one
// bank). The run's timing is arithmetic on per-bank, per-bank-group and per-pseudo-channel
// timelines (all in whole command clocks); no event is scheduled. The bursts of a run are not
// placed one by one: the data bus of the pseudo-channel is a frontier advanced by
// bursts x max(burst_ck, tCCD_S), and the run's own bank group paces its column commands at
// tCCD_L, so runs in different bank groups overlap as if their bursts interleaved. The error of
// this against a per-burst reference is measured in tests/hbm and written in docs/models/hbm.md.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/block.hpp"
#include "common/memory.hpp"
#include "trnsim/resolve/hbm_geometry.hpp"

namespace trnsim::model {

// The HBM blocks are built from the geometry the resolve step derived.
using resolve::HbmCycles;
using resolve::HbmGeometry;
using resolve::HbmLocation;
using resolve::kBitsPerPinPerClock;

// The statistics of one HBM stack.
struct HbmStackStats {
  static constexpr StatKey bytes_read =
      MemoryStats::bytes_read.described("bytes read over the DRAM bus (whole bursts)");
  static constexpr StatKey bytes_written =
      MemoryStats::bytes_written.described("bytes written over the DRAM bus (whole bursts)");
  static constexpr StatKey runs{"runs", StatUnit::count,
                                "reservations: bursts of one request in one interleave unit"};
  static constexpr StatKey activates{"activates", StatUnit::count,
                                     "row activations (ACT+PRE pairs)"};
  static constexpr StatKey row_hits{"row_hits", StatUnit::count, "runs that found their row open"};
  static constexpr StatKey row_misses{"row_misses", StatUnit::count,
                                      "runs that found their bank precharged"};
  static constexpr StatKey row_conflicts{"row_conflicts", StatUnit::count,
                                         "runs that found another row open (PRE first)"};
  static constexpr StatKey refreshes{"refreshes", StatUnit::count,
    "refresh commands: REFab of a channel (all_bank) or REFsb of a bank (per_bank)"};
  static constexpr StatKey refresh_delays{"refresh_delays", StatUnit::count,
                                          "runs moved behind a refresh window"};
  static constexpr StatKey bus_busy_time{"bus_busy_time", StatUnit::seconds,
    "data-bus occupancy averaged over the stack's pseudo-channels"};
  static constexpr StatKey achieved_bandwidth{"achieved_bandwidth", StatUnit::bytes_per_second,
                                              "bytes moved / (last data beat - first arrival)"};
  static constexpr std::array all{
      bytes_read, bytes_written, runs, activates, row_hits, row_misses, row_conflicts, refreshes,
      refresh_delays, bus_busy_time, achieved_bandwidth};
};

class HbmStack : public Block {
 public:
  // One run: `bursts` consecutive bursts in one row of one bank.
  struct Run {
    int channel = 0, pseudo_channel = 0, bank_group = 0, bank = 0, sid = 0;
    std::int64_t row = 0;
    int bursts = 1;
    bool write = false;
  };
  enum class RowResult { hit, miss, conflict };

  // `geo` must outlive the stack (the HbmSystem owns it).
  HbmStack(const sc_core::sc_module_name& name, const HbmGeometry& geo);
  // Achieved bandwidth over this stack's share of the chip's configured peak.
  std::optional<double> utilisation(Duration) const override {
    const double peak = geo_.params().bandwidth.si / double(geo_.params().stacks);
    if (!(peak > 0)) return std::nullopt;
    return s_bandwidth_.value / peak;
  }

  // Reserves the banks and bus for `r`, arriving at clock `arrival_ck`; returns the clock at which
  // its last data beat has crossed the bus. Runs must be reserved in arrival order (FCFS).
  std::int64_t reserve(const Run& r, std::int64_t arrival_ck, RowResult* result = nullptr);

  // Counts the refreshes that started before clock `t_ck` (refresh happens whether or not there
  // is traffic, so it is counted from the clock, not from accesses) and moves the actions counted
  // since the last call into the Block's action meters.
  void account_until(std::int64_t t_ck);

  // refresh_mode all_bank: start clock of refresh `k` (k >= 0) of `channel`; all-bank refresh of
  // a channel occupies [start, start + tRFC). Channels are staggered by tREFI / channels so that
  // the stack never refreshes all channels at once.
  std::int64_t refresh_start(int channel, std::int64_t k) const;
  // refresh_mode per_bank: REFsb `k` (k >= 0) of pseudo-channel `pc` (channel x pseudo_channels +
  // pseudo-channel) starts at refsb_start(pc, k) and blocks bank refsb_bank(pc, k) (bank index
  // as in HbmLocation) for tRFCsb. A PC refreshes one bank every tREFIsb, rotating bank group
  // fastest, then bank, then SID, so every bank is refreshed once per banks x tREFIsb. PCs are
  // staggered in time by tREFIsb / PCs and start their rotations at different banks (PC i at
  // position i x banks / PCs), so the stack never refreshes the same bank of every PC at once.
  std::int64_t refsb_start(int pc, std::int64_t k) const;
  int refsb_bank(int pc, std::int64_t k) const;

  // Counters, for the system and the tests.
  std::uint64_t activates() const { return activates_; }
  std::uint64_t bursts_read() const { return bursts_read_; }
  std::uint64_t bursts_written() const { return bursts_written_; }

 private:
  static constexpr std::int64_t kNever = -(std::int64_t(1) << 50);
  struct Bank {
    std::int64_t open_row = -1;     // -1: precharged
    std::int64_t col_ready = 0;     // ACT + tRCD
    std::int64_t act_ready = 0;     // next ACT (tRC, or PRE + tRP)
    std::int64_t pre_ready = 0;     // next PRE (tRAS, tRTP, tWR)
    std::int64_t last_cmd = kNever;  // last column command (refresh since then closes the row)
    // per_bank: REFsb window `ref_late_k` of this bank postponed to start at `ref_late_start`.
    std::int64_t ref_late_k = -1, ref_late_start = 0;
  };
  struct Pc {
    std::int64_t bus_free = 0;  // data-bus frontier
    std::int64_t rd_end = kNever, wr_end = kNever;
    std::int64_t last_act = kNever;
    std::array<std::int64_t, 4> faw{kNever, kNever, kNever, kNever};  // last 4 ACTs, ring
    int faw_pos = 0;                                                   // oldest entry
    std::vector<std::int64_t> wr_end_bg, bg_next_cmd, last_act_bg;   // per bank group
    std::vector<Bank> banks;
  };

  // A periodic refresh: windows [phase + k x period, ... + length), k >= 0, except window
  // `late_k`, which starts at `late_start` (a postponed REFsb; never past the next window).
  struct Periodic {
    std::int64_t phase = 0, period = 1, length = 0, late_k = -1, late_start = 0;
    std::int64_t nominal(std::int64_t k) const { return phase + k * period; }
    std::int64_t start(std::int64_t k) const { return k == late_k ? late_start : nominal(k); }
    std::int64_t index(std::int64_t t) const {  // last window started <= t, or -1
      const std::int64_t k = t < phase ? -1 : (t - phase) / period;
      return k >= 0 && k == late_k && t < late_start ? k - 1 : k;
    }
    std::int64_t overlap(std::int64_t a, std::int64_t b) const;  // first window meeting [a, b)
  };
  // The refresh windows that block bank `bank` of pseudo-channel `pc` (all_bank: its channel's).
  Periodic refresh_of(int pc, int bank, const Bank& bk) const;
  // Earliest clock >= t at which pseudo-channel `pc` may activate a bank of `sid`: tRREFD after a
  // REFsb to the same SID.
  std::int64_t after_rrefd(int pc, int sid, std::int64_t t) const;
  std::uint64_t refreshes_before(std::int64_t t) const;

  const HbmGeometry& geo_;
  const HbmCycles ck_;
  std::vector<Pc> pcs_;
  const bool per_bank_;
  std::vector<std::int64_t> phase_;     // per channel (all_bank)
  std::vector<std::int64_t> sb_phase_;  // per pseudo-channel (per_bank)
  std::vector<int> rotation_pos_;       // per bank index: its place in the REFsb rotation
  int rotation_start(int pc) const {
    return int(std::int64_t(pc) * geo_.banks_per_pc() / std::int64_t(pcs_.size()));
  }
  std::int64_t first_arrival_ = -1, last_end_ = 0, accounted_ = 0;
  std::uint64_t activates_ = 0, bursts_read_ = 0, bursts_written_ = 0, refreshes_ = 0;
  // Counted but not yet passed to the Block's action meters (a meter is a map lookup; see
  // account_until).
  std::uint64_t pending_acts_ = 0, pending_rd_ = 0, pending_wr_ = 0, pending_ref_ = 0;

  Stat& s_bytes_read_;
  Stat& s_bytes_written_;
  Stat& s_runs_;
  Stat& s_activates_;
  Stat& s_hits_;
  Stat& s_misses_;
  Stat& s_conflicts_;
  Stat& s_refreshes_;
  Stat& s_refresh_delays_;
  Stat& s_busy_;
  Stat& s_bandwidth_;
};

}  // namespace trnsim::model
