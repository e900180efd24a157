// SPDX-License-Identifier: MIT
#include "hbm/hbm_stack.hpp"

#include <algorithm>

namespace trnsim::model {

using config::PagePolicy;

namespace {
// How many REFsb slots of its pseudo-channel a bank's REFsb may be postponed while requests to the
// bank are queued: by analogy with the up to 8 skipped refreshes of AMD's HBM controller deficit
// mode (PG313, "Refresh"); an estimate, not a JEDEC figure.
constexpr std::int64_t kRefsbPostponeSlots = 8;
}  // namespace

HbmStack::HbmStack(const sc_core::sc_module_name& name, const HbmGeometry& geo)
    : Block(name),
      geo_(geo),
      ck_(geo.ck()),
      per_bank_(geo.params().refresh_mode == config::RefreshMode::per_bank),
      s_bytes_read_(stats().add(HbmStackStats::bytes_read)),
      s_bytes_written_(stats().add(HbmStackStats::bytes_written)),
      s_runs_(stats().add(HbmStackStats::runs)),
      s_activates_(stats().add(HbmStackStats::activates)),
      s_hits_(stats().add(HbmStackStats::row_hits)),
      s_misses_(stats().add(HbmStackStats::row_misses)),
      s_conflicts_(stats().add(HbmStackStats::row_conflicts)),
      s_refreshes_(stats().add(HbmStackStats::refreshes)),
      s_refresh_delays_(stats().add(HbmStackStats::refresh_delays)),
      s_busy_(stats().add(HbmStackStats::bus_busy_time)),
      s_bandwidth_(stats().add(HbmStackStats::achieved_bandwidth)) {
  const auto& p = geo.params();
  Pc proto;
  proto.wr_end_bg.assign(std::size_t(p.bank_groups), kNever);
  proto.bg_next_cmd.assign(std::size_t(p.bank_groups), kNever);
  proto.last_act_bg.assign(std::size_t(p.bank_groups), kNever);
  proto.banks.assign(std::size_t(geo.banks_per_pc()), Bank{});
  pcs_.assign(std::size_t(geo.pcs_per_stack()), proto);
  for (int c = 0; c < p.channels; ++c) {
    phase_.push_back(std::int64_t(c + 1) * ck_.REFI / p.channels);
  }
  const int pcs = geo.pcs_per_stack();
  for (int i = 0; i < pcs; ++i) sb_phase_.push_back(std::int64_t(i + 1) * ck_.REFIsb / pcs);
  rotation_pos_.assign(std::size_t(geo.banks_per_pc()), 0);
  for (int k = 0; k < geo.banks_per_pc(); ++k) rotation_pos_[std::size_t(refsb_bank(0, k))] = k;
  set_static_power(p.energy.background_per_stack);
}

std::int64_t HbmStack::Periodic::overlap(std::int64_t a, std::int64_t b) const {
  const std::int64_t k = index(a);
  if (k >= 0 && a < start(k) + length) return k;
  if (start(k + 1) < b) return k + 1;
  return -1;
}

std::int64_t HbmStack::refresh_start(int channel, std::int64_t k) const {
  return phase_[std::size_t(channel)] + k * ck_.REFI;
}

std::int64_t HbmStack::refsb_start(int pc, std::int64_t k) const {
  return sb_phase_[std::size_t(pc)] + k * ck_.REFIsb;
}

int HbmStack::refsb_bank(int pc, std::int64_t k) const {
  // Bank group fastest, so consecutive REFsb of a PC fall into different bank groups.
  const auto& p = geo_.params();
  const std::int64_t pos = (k + rotation_start(pc)) % geo_.banks_per_pc();
  const int g = int(pos % p.bank_groups);
  const int bank = int(pos / p.bank_groups % p.banks_per_group);
  const int sid = int(pos / (p.bank_groups * p.banks_per_group));
  return (sid * p.bank_groups + g) * p.banks_per_group + bank;
}

HbmStack::Periodic HbmStack::refresh_of(int pc, int bank, const Bank& bk) const {
  if (per_bank_) {
    const int b = geo_.banks_per_pc();
    const int first = (rotation_pos_[std::size_t(bank)] - rotation_start(pc) + b) % b;
    return {refsb_start(pc, first), ck_.REFIsb * b, ck_.RFCsb, bk.ref_late_k, bk.ref_late_start};
  }
  return {phase_[std::size_t(pc / geo_.params().pseudo_channels)], ck_.REFI, ck_.RFC};
}

std::int64_t HbmStack::after_rrefd(int pc, int sid, std::int64_t t) const {
  const Periodic all{sb_phase_[std::size_t(pc)], ck_.REFIsb, ck_.RREFD};
  const int per_sid = geo_.params().bank_groups * geo_.params().banks_per_group;
  for (std::int64_t k = all.index(t); k >= 0; k = all.index(t)) {
    if (refsb_bank(pc, k) / per_sid != sid || t >= all.start(k) + ck_.RREFD) break;
    t = all.start(k) + ck_.RREFD;
  }
  return t;
}

std::uint64_t HbmStack::refreshes_before(std::int64_t t) const {
  std::uint64_t n = 0;
  const auto& phases = per_bank_ ? sb_phase_ : phase_;
  const std::int64_t period = per_bank_ ? ck_.REFIsb : ck_.REFI;
  for (const std::int64_t ph : phases) n += std::uint64_t(Periodic{ph, period, 0}.index(t - 1) + 1);
  return n;
}

std::int64_t HbmStack::reserve(const Run& r, std::int64_t arrival, RowResult* result) {
  const auto& p = geo_.params();
  const int pci = r.channel * p.pseudo_channels + r.pseudo_channel;
  Pc& pc = pcs_[std::size_t(pci)];
  const int g = r.bank_group;
  const int bank_index = (r.sid * p.bank_groups + g) * p.banks_per_group + r.bank;
  Bank& bk = pc.banks[std::size_t(bank_index)];
  Periodic ref = refresh_of(pci, bank_index, bk);
  // per_bank: a REFsb waits for requests to its bank that were queued before it was due, for at
  // most kRefsbPostponeSlots x tREFIsb (then the request waits for the refresh).
  const std::int64_t max_late =
      std::min(kRefsbPostponeSlots * ck_.REFIsb, ref.period - ref.length - 1);
  const std::int64_t n = r.bursts;
  const std::int64_t lat = r.write ? ck_.CWL : ck_.CL;
  const std::int64_t bus_step = std::max(ck_.BL, ck_.CCD_S);  // per burst on the data bus
  const std::int64_t bg_step = std::max(ck_.BL, ck_.CCD_L);   // per burst in one bank group
  // A controller opens a row just in time for its data slot, not while the bus is still busy
  // with earlier requests (that would hold the row open, and a refresh could close it again).
  const std::int64_t jit_act = pc.bus_free - lat - ck_.RCD;

  std::int64_t earliest = arrival;
  bool open = bk.open_row >= 0;
  RowResult kind = RowResult::hit;
  std::int64_t act = kNever, bus_start = 0, bg_start = 0, end = 0;
  for (;;) {
    kind = !open ? RowResult::miss : bk.open_row == r.row ? RowResult::hit : RowResult::conflict;
    std::int64_t first_cmd = 0, cmd_ready = 0;
    if (kind == RowResult::hit) {
      cmd_ready = std::max(earliest, bk.col_ready);
    } else {
      std::int64_t act_min = std::max({earliest, bk.act_ready, jit_act});
      if (kind == RowResult::conflict) {
        first_cmd = std::max({earliest, bk.pre_ready, jit_act - ck_.RP});
        act_min = std::max(act_min, first_cmd + ck_.RP);
      }
      act = std::max({act_min, pc.last_act + ck_.RRD_S, pc.last_act_bg[std::size_t(g)] + ck_.RRD_L,
                      pc.faw[std::size_t(pc.faw_pos)] + ck_.FAW});
      if (per_bank_) act = after_rrefd(pci, r.sid, act);
      if (kind == RowResult::miss) first_cmd = act;
      cmd_ready = act + ck_.RCD;
    }
    if (!r.write) {
      cmd_ready = std::max({cmd_ready, pc.wr_end + ck_.WTR_S,
                            pc.wr_end_bg[std::size_t(g)] + ck_.WTR_L});
    }
    std::int64_t ready_data = cmd_ready + lat;
    if (r.write) ready_data = std::max(ready_data, pc.rd_end + ck_.RTW);
    bus_start = std::max(ready_data, pc.bus_free);
    bg_start = std::max(bus_start, pc.bg_next_cmd[std::size_t(g)] + lat);
    end = std::max(bus_start + (n - 1) * bus_step + ck_.BL, bg_start + (n - 1) * bg_step + ck_.BL);
    if (kind == RowResult::hit) first_cmd = bg_start - lat;
    // A refresh since the row was last used precharged it: the run is a miss after all.
    if (open && ref.index(first_cmd) > ref.index(bk.last_cmd)) {
      open = false;
      continue;
    }
    // all_bank: no command or data of the run may fall into a refresh of its channel. per_bank:
    // the bank must be idle and precharged (tRTP/tWR, then tRP) when its REFsb starts; other
    // banks and the data bus are not blocked. Otherwise move the run behind the refresh.
    std::int64_t busy_end = end;
    if (per_bank_) {
      const std::int64_t last_col = end - ck_.BL - lat;
      busy_end = std::max({kind == RowResult::hit ? bk.pre_ready : act + ck_.RAS,
                           r.write ? end + ck_.WR : last_col + ck_.RTP}) + ck_.RP;
    }
    const std::int64_t k = ref.overlap(first_cmd, busy_end);
    if (k < 0) break;
    if (per_bank_ && arrival <= ref.start(k) && busy_end - ref.nominal(k) <= max_late) {
      ref.late_k = bk.ref_late_k = k;  // the controller issues this REFsb after the run
      ref.late_start = bk.ref_late_start = busy_end;
      break;
    }
    earliest = ref.start(k) + ref.length;
    open = false;
    s_refresh_delays_ += 1;
  }

  if (kind != RowResult::hit) {
    pc.last_act = act;
    pc.last_act_bg[std::size_t(g)] = act;
    pc.faw[std::size_t(pc.faw_pos)] = act;
    pc.faw_pos = (pc.faw_pos + 1) % 4;
    bk.open_row = r.row;
    bk.col_ready = act + ck_.RCD;
    bk.act_ready = act + ck_.RC;
    bk.pre_ready = act + ck_.RAS;
    ++activates_;
    ++pending_acts_;
    s_activates_ += 1;
    (kind == RowResult::miss ? s_misses_ : s_conflicts_) += 1;
  } else {
    s_hits_ += 1;
  }
  const std::int64_t last_cmd = end - ck_.BL - lat;
  if (r.write) {
    bk.pre_ready = std::max(bk.pre_ready, end + ck_.WR);
    pc.wr_end = std::max(pc.wr_end, end);
    pc.wr_end_bg[std::size_t(g)] = std::max(pc.wr_end_bg[std::size_t(g)], end);
    bursts_written_ += std::uint64_t(n);
    pending_wr_ += std::uint64_t(n);
    s_bytes_written_ += double(n) * double(geo_.burst());
  } else {
    bk.pre_ready = std::max(bk.pre_ready, last_cmd + ck_.RTP);
    pc.rd_end = std::max(pc.rd_end, end);
    bursts_read_ += std::uint64_t(n);
    pending_rd_ += std::uint64_t(n);
    s_bytes_read_ += double(n) * double(geo_.burst());
  }
  bk.last_cmd = std::max(bk.last_cmd, last_cmd);
  pc.bus_free = bus_start + n * bus_step;
  pc.bg_next_cmd[std::size_t(g)] = bg_start - lat + n * bg_step;
  if (p.page_policy == PagePolicy::closed) {
    // Auto-precharge as soon as tRAS, tRTP and tWR allow.
    bk.act_ready = std::max(bk.act_ready, bk.pre_ready + ck_.RP);
    bk.open_row = -1;
  }

  s_runs_ += 1;
  s_busy_ += double(n * ck_.BL) * geo_.tck_seconds() / double(pcs_.size());
  if (first_arrival_ < 0 || arrival < first_arrival_) first_arrival_ = arrival;
  last_end_ = std::max(last_end_, end);
  if (result) *result = kind;
  return end;
}

void HbmStack::account_until(std::int64_t t_ck) {
  if (t_ck > accounted_) {
    const std::uint64_t n = refreshes_before(t_ck) - refreshes_before(accounted_);
    refreshes_ += n;
    pending_ref_ += n;
    s_refreshes_ += double(n);
    accounted_ = t_ck;
  }
  const auto& e = geo_.params().energy;
  const double burst = double(geo_.burst());
  if (pending_acts_) {
    meter(Action::hbm_activate, e.activate_precharge.si).count(double(pending_acts_));
  }
  if (pending_rd_) meter(Action::hbm_read, per_byte(e.read)).count(burst * double(pending_rd_));
  if (pending_wr_) meter(Action::hbm_write, per_byte(e.write)).count(burst * double(pending_wr_));
  if (pending_rd_ + pending_wr_) {
    const double bytes = burst * double(pending_rd_ + pending_wr_);
    meter(Action::hbm_phy, per_byte(e.phy)).count(bytes);
    meter(Action::hbm_controller, per_byte(e.controller)).count(bytes);
  }
  if (pending_ref_) {
    // A REFsb refreshes one bank of the pseudo_channels x banks_per_pc that one REFab of the
    // channel refreshes, and each bank gets one per tREFI in both modes: same energy per time.
    const double per_ref =
        per_bank_ ? 1.0 / double(geo_.params().pseudo_channels * geo_.banks_per_pc()) : 1.0;
    meter(Action::hbm_refresh, e.refresh_per_channel.si).count(per_ref * double(pending_ref_));
  }
  pending_acts_ = pending_rd_ = pending_wr_ = pending_ref_ = 0;
  if (first_arrival_ >= 0 && last_end_ > first_arrival_) {
    s_bandwidth_.value = (s_bytes_read_.value + s_bytes_written_.value) /
                         (double(last_end_ - first_arrival_) * geo_.tck_seconds());
  }
}

}  // namespace trnsim::model
