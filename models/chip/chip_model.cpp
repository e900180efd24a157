// SPDX-License-Identifier: MIT
#include "chip/chip_model.hpp"

#include <algorithm>

#include "common/activity.hpp"

namespace trnsim::model {

using sc_core::sc_time;

std::uint64_t ChipModel::operand_address(std::uint64_t bytes) {
  const auto& hbm = params().hbm;
  const std::uint64_t round = std::max<std::uint64_t>(
      1, std::uint64_t(hbm.interleave_bytes.si) * std::uint64_t(hbm.stacks));
  const std::uint64_t region = std::uint64_t(hbm.capacity_per_stack.si) * std::uint64_t(hbm.stacks) / 2;
  const std::uint64_t span = (bytes + round - 1) / round * round;
  if (next_operand_addr_ + span > region) next_operand_addr_ = 0;
  const std::uint64_t a = next_operand_addr_;
  next_operand_addr_ += span;
  return a;
}

std::uint64_t ChipModel::begin_accrual(Actions actions, const sc_time& start,
                                       const sc_time& expected) {
  accruing_.push_back({++next_token_, start, expected, std::move(actions)});
  return next_token_;
}

std::uint64_t ChipModel::begin_accrual(const std::map<Action, ActionMeter>& actions,
                                       const sc_time& start, const sc_time& expected) {
  return begin_accrual(Actions(actions.begin(), actions.end()), start, expected);
}

void ChipModel::end_accrual(std::uint64_t token) {
  // Ops end in about the order they began: search from the front, keep the order.
  const auto it = std::find_if(accruing_.begin(), accruing_.end(),
                               [token](const Accrual& a) { return a.token == token; });
  if (it != accruing_.end()) accruing_.erase(it);
}

Energy ChipModel::dynamic_unmetered(const PowerModel& power, const sc_time& t) const {
  Energy e{};
  for (const Accrual& a : accruing_) {
    if (t <= a.start) continue;
    const double f = a.expected > sc_core::SC_ZERO_TIME
                         ? std::min(1.0, (t - a.start).to_seconds() / a.expected.to_seconds())
                         : 1.0;
    for (const auto& [action, m] : a.actions) {
      e = e + power.dynamic(*this, action, {m.quantity * f, m.rated_j * f, m.per_unit_j});
    }
  }
  return e;
}

OpStats ChipModel::replay_profile(const OpProfile& p, const OpProfile& counterpart,
                                  const std::string& name, int cores_used,
                                  const sc_time& counterpart_duration) {
  const sc_time duration =
      counterpart.time_ps > 0 && p.time_ps != counterpart.time_ps
          ? counterpart_duration * (double(p.time_ps) / double(counterpart.time_ps))
          : counterpart_duration;
  OpStats st;
  st.name = name;
  const sc_time start = sc_core::sc_time_stamp();
  st.start_s = start.to_seconds();
  // The op-level model's slices (op_chip.cpp), at even steps of the duration.
  const int n = kOpPieces * op_slices(p);
  const std::uint64_t accrual = begin_accrual(p.actions, start, duration);
  for (int i = 0; i < n; ++i) {
    const sc_time issue = start + duration * (double(i) / double(n));
    if (issue > sc_core::sc_time_stamp()) wait_counted(activity(), issue - sc_core::sc_time_stamp());
    const PieceBytes b = slice_bytes(p, i);
    if (b.read > 0) memory().access({operand_address(b.read), b.read, false});
    if (b.write > 0) memory().access({operand_address(b.write), b.write, true});
  }
  const sc_time end = start + duration;
  if (end > sc_core::sc_time_stamp()) wait_counted(activity(), end - sc_core::sc_time_stamp());
  end_accrual(accrual);
  for (const auto& [a, m] : p.actions) meter(a, 0).count_priced(m.quantity, m.rated_j);
  st.end_s = sc_core::sc_time_stamp().to_seconds();
  st.time_s = st.end_s - st.start_s;
  st.flops = p.flops;
  st.hbm_bytes = p.hbm_bytes;
  st.instructions = p.instructions;
  st.cores_used = cores_used;
  return st;
}

}  // namespace trnsim::model
