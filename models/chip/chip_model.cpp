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

void ChipModel::spread_traffic(const OpProfile& traffic, const sc_time& duration) {
  const sc_time start = sc_core::sc_time_stamp();
  // The op-level model's slices (op_chip.cpp), at even steps of the duration.
  const int n = kOpPieces * op_slices(traffic);
  for (int i = 0; i < n; ++i) {
    const sc_time issue = start + duration * (double(i) / double(n));
    if (issue > sc_core::sc_time_stamp()) wait_counted(activity(), issue - sc_core::sc_time_stamp());
    const PieceBytes b = slice_bytes(traffic, i);
    if (b.read > 0) memory().access({operand_address(b.read), b.read, false});
    if (b.write > 0) memory().access({operand_address(b.write), b.write, true});
  }
  const sc_time end = start + duration;
  if (end > sc_core::sc_time_stamp()) wait_counted(activity(), end - sc_core::sc_time_stamp());
}

void ChipModel::run_rest(const OpProfile& rest, const sc_time& duration, int) {
  spread_traffic(rest, duration);
}

OpStats ChipModel::extend_head(const OpProfile& pr, const OpProfile& ph, const OpStats& h) {
  OpProfile rest;
  rest.read_bytes = std::max(0.0, pr.read_bytes - ph.read_bytes);
  rest.write_bytes = std::max(0.0, pr.write_bytes - ph.write_bytes);
  for (std::size_t e = 0; e < rest.engine_busy_s.size(); ++e) {
    rest.engine_busy_s[e] = std::max(0.0, pr.engine_busy_s[e] - ph.engine_busy_s[e]);
  }
  // The rest's time alone; contention lengthens it as it waits for the engines (run_rest).
  run_rest(rest,
           pr.time_ps > ph.time_ps ? sc_time(double(pr.time_ps - ph.time_ps), sc_core::SC_PS)
                                   : sc_core::SC_ZERO_TIME,
           std::max(1, std::min(pr.cores_used, cores())));
  for (const auto& [cat, j] : pr.energy_j) {
    const auto it = ph.energy_j.find(cat);
    const double head_j = it == ph.energy_j.end() ? 0.0 : it->second;
    if (j > head_j) energy_slot(cat) += j - head_j;
  }
  OpStats st = h;
  st.end_s = sc_core::sc_time_stamp().to_seconds();
  st.time_s = st.end_s - st.start_s;
  st.flops = pr.flops;
  st.hbm_bytes = pr.hbm_bytes;
  st.instructions = pr.instructions;
  st.cores_used = std::max(h.cores_used, std::min(pr.cores_used, cores()));
  return st;
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
  st.start_s = sc_core::sc_time_stamp().to_seconds();
  spread_traffic(p, duration);
  for (const auto& [cat, j] : p.energy_j) energy_slot(cat) += j;
  st.end_s = sc_core::sc_time_stamp().to_seconds();
  st.time_s = st.end_s - st.start_s;
  st.flops = p.flops;
  st.hbm_bytes = p.hbm_bytes;
  st.instructions = p.instructions;
  st.cores_used = cores_used;
  return st;
}

}  // namespace trnsim::model
