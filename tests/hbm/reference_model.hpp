// SPDX-License-Identifier: MIT
// A per-burst reference for the HBM stack model: every burst is its own column command, placed at
// the earliest clock that keeps every pairwise constraint with the bursts already placed on its
// pseudo-channel (data-bus overlap, tCCD_S/tCCD_L, tWTR_S/tWTR_L, read-to-write turnaround), so a
// younger burst may fill a gap an older one left. Like HbmStack, it does not move a burst ahead
// of an older burst of the other direction (no read/write reordering), and it opens a row just in
// time for the first free data slot. Row commands (PRE, ACT, tRRD, tFAW, tRC, tRAS,
// tRTP, tWR, the just-in-time ACT) follow the same rules as HbmStack, so a comparison measures the
// error of the run granularity alone. No refresh: compare with refresh pushed out of the window.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "trnsim/resolve/hbm_geometry.hpp"

namespace trnsim::model::test {

class PerBurstReference {
 public:
  explicit PerBurstReference(const HbmGeometry& geo) : geo_(geo), ck_(geo.ck()) {
    const auto& p = geo.params();
    Pc proto;
    proto.last_act_bg.assign(std::size_t(p.bank_groups), kNever);
    proto.banks.assign(std::size_t(geo.banks_per_pc()), Bank{});
    pcs_.assign(std::size_t(p.stacks * geo.pcs_per_stack()), proto);
  }

  // Same contract as HbmSystem::access_at, in clocks; returns the clock of the last data beat.
  std::int64_t access(std::uint64_t addr, std::uint64_t bytes, bool write, std::int64_t arrival) {
    const std::uint64_t il = geo_.interleave(), b = geo_.burst();
    std::int64_t last = 0;
    for (std::uint64_t pos = addr; pos < addr + bytes;) {
      const std::uint64_t in_unit = pos % il;
      const std::uint64_t take = std::min(il - in_unit, addr + bytes - pos);
      const HbmLocation l = geo_.decode(pos);
      const int n = int((in_unit + take - 1) / b - in_unit / b + 1);
      last = std::max(last, run(l, n, write, arrival));
      pos += take;
    }
    return last;
  }

 private:
  static constexpr std::int64_t kNever = -(std::int64_t(1) << 50);
  struct Bank {
    std::int64_t open_row = -1, col_ready = 0, act_ready = 0, pre_ready = 0;
  };
  struct Burst {
    std::int64_t cmd, data;
    int bg;
    bool write;
  };
  struct Pc {
    std::multimap<std::int64_t, Burst> placed;  // by command clock
    std::array<std::int64_t, 2> last_data{kNever, kNever};  // latest data start: read, write
    std::int64_t last_act = kNever;
    std::array<std::int64_t, 4> faw{kNever, kNever, kNever, kNever};
    int faw_pos = 0;
    std::vector<std::int64_t> last_act_bg;
    std::vector<Bank> banks;
  };

  // Earliest command clock >= c at which a burst (bank group g, direction w) fits.
  std::int64_t place(Pc& pc, std::int64_t c, int g, bool w) const {
    const std::int64_t lat = w ? ck_.CWL : ck_.CL;
    const std::int64_t span = std::max(ck_.CL, ck_.CWL) + ck_.BL +
                              std::max({ck_.WTR_L, ck_.WTR_S, ck_.RTW, ck_.CCD_L, ck_.CCD_S}) + 1;
    for (bool moved = true; moved;) {
      moved = false;
      for (auto it = pc.placed.lower_bound(c - 2 * span);
           it != pc.placed.end() && it->first <= c + 2 * span; ++it) {
        const Burst& y = it->second;
        const std::int64_t d = c + lat;
        std::int64_t need = c;  // smallest c that puts this burst after y legally
        const std::int64_t ccd = y.bg == g ? ck_.CCD_L : ck_.CCD_S;
        if (std::abs(c - y.cmd) < ccd) need = std::max(need, y.cmd + ccd);
        if (std::abs(d - y.data) < ck_.BL) need = std::max(need, y.data + ck_.BL - lat);
        if (y.write != w) {
          const std::int64_t wtr = y.bg == g ? ck_.WTR_L : ck_.WTR_S;
          if (!w) {  // read against a placed write
            const bool before = y.data >= d + ck_.BL + ck_.RTW;
            const bool after = c >= y.data + ck_.BL + wtr;
            if (!before && !after) need = std::max(need, y.data + ck_.BL + wtr);
          } else {  // write against a placed read
            const bool after = d >= y.data + ck_.BL + ck_.RTW;
            const bool before = y.cmd >= d + ck_.BL + wtr;
            if (!before && !after) need = std::max(need, y.data + ck_.BL + ck_.RTW - lat);
          }
        }
        if (need > c) {
          c = need;
          moved = true;
          break;
        }
      }
    }
    return c;
  }

  // First data clock >= d at which a burst fits on the bus (overlap and order only).
  std::int64_t free_slot(const Pc& pc, std::int64_t d, bool w) const {
    d = std::max(d, pc.last_data[!w]);
    for (bool moved = true; moved;) {
      moved = false;
      const std::int64_t lo = d - std::max(ck_.CL, ck_.CWL) - ck_.BL;
      for (auto it = pc.placed.lower_bound(lo); it != pc.placed.end() && it->first <= d; ++it) {
        const std::int64_t yd = it->second.data;
        if (yd < d + ck_.BL && d < yd + ck_.BL) {
          d = yd + ck_.BL;
          moved = true;
          break;
        }
      }
    }
    return d;
  }

  std::int64_t run(const HbmLocation& l, int n, bool w, std::int64_t arrival) {
    const auto& p = geo_.params();
    Pc& pc = pcs_[std::size_t((l.stack * p.channels + l.channel) * p.pseudo_channels +
                              l.pseudo_channel)];
    const int g = l.bank_group;
    Bank& bk = pc.banks[std::size_t((l.sid * p.bank_groups + g) * p.banks_per_group + l.bank)];
    const std::int64_t lat = w ? ck_.CWL : ck_.CL;
    const std::int64_t jit_act = free_slot(pc, arrival + ck_.RCD + lat, w) - lat - ck_.RCD;
    std::int64_t cmd_ready = 0;
    if (bk.open_row == l.row) {
      cmd_ready = std::max(arrival, bk.col_ready);
    } else {
      std::int64_t act_min = std::max({arrival, bk.act_ready, jit_act});
      if (bk.open_row >= 0) {
        const std::int64_t pre = std::max({arrival, bk.pre_ready, jit_act - ck_.RP});
        act_min = std::max(act_min, pre + ck_.RP);
      }
      const std::int64_t act =
          std::max({act_min, pc.last_act + ck_.RRD_S, pc.last_act_bg[std::size_t(g)] + ck_.RRD_L,
                    pc.faw[std::size_t(pc.faw_pos)] + ck_.FAW});
      pc.last_act = act;
      pc.last_act_bg[std::size_t(g)] = act;
      pc.faw[std::size_t(pc.faw_pos)] = act;
      pc.faw_pos = (pc.faw_pos + 1) % 4;
      bk.open_row = l.row;
      bk.col_ready = act + ck_.RCD;
      bk.act_ready = act + ck_.RC;
      bk.pre_ready = act + ck_.RAS;
      cmd_ready = act + ck_.RCD;
    }
    std::int64_t c = std::max(cmd_ready, pc.last_data[!w] - lat), end = 0;
    for (int i = 0; i < n; ++i) {
      c = place(pc, c, g, w);
      pc.placed.emplace(c, Burst{c, c + lat, g, w});
      pc.last_data[w] = std::max(pc.last_data[w], c + lat);
      end = std::max(end, c + lat + ck_.BL);
      if (w) {
        bk.pre_ready = std::max(bk.pre_ready, c + lat + ck_.BL + ck_.WR);
      } else {
        bk.pre_ready = std::max(bk.pre_ready, c + ck_.RTP);
      }
      c += ck_.CCD_L;  // next burst of the run: same bank group
    }
    if (geo_.params().page_policy == config::PagePolicy::closed) {
      bk.act_ready = std::max(bk.act_ready, bk.pre_ready + ck_.RP);
      bk.open_row = -1;
    }
    return end;
  }

  const HbmGeometry& geo_;
  const HbmCycles ck_;
  std::vector<Pc> pcs_;
};

}  // namespace trnsim::model::test
