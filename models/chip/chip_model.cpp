// SPDX-License-Identifier: MIT
#include "chip/chip_model.hpp"

#include <algorithm>
#include <tuple>

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
  accruing_.push_back({++next_token_, start, expected, {}, &actions});
  return next_token_;
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
    const auto add = [&](const Action action, const ActionMeter& m) {
      e = e + power.dynamic(*this, action, {m.quantity * f, m.rated_j * f, m.per_unit_j});
    };
    if (a.by_ref) {
      for (const auto& am : *a.by_ref) add(am.first, am.second);
    } else {
      for (const auto& am : a.actions) add(am.first, am.second);
    }
  }
  return e;
}

void ChipModel::begin_slices(SliceOp& op) {
  op.seq = ++next_slice_op_;
  if (idle_wakers_.empty()) {
    wakers_.push_back(std::make_unique<Waker>());
    idle_wakers_.push_back(wakers_.back().get());
  }
  op.waker = idle_wakers_.back();
  idle_wakers_.pop_back();
  op.waker->woken = 0;
}

void ChipModel::end_slices(SliceOp& op) {
  idle_wakers_.push_back(op.waker);
  op.waker = nullptr;
}

void ChipModel::post_slice(const sc_time& at, const SliceOp& op, std::uint32_t index,
                           PieceBytes b, SliceOp* piece) {
  push_slice({at, op.seq, index, false, b, piece});
}

void ChipModel::post_wake(const sc_time& at, SliceOp& op, std::uint32_t index) {
  push_slice({at, op.seq, index, true, {}, &op});
}

void ChipModel::wait_woken(SliceOp& op, std::uint64_t n) {
  while (op.waker->woken < n) wait_counted(activity(), op.waker->ev);
}

std::uint64_t ChipModel::woken(const SliceOp& op) const { return op.waker->woken; }

namespace {

struct SliceLater {
  template <class E>
  bool operator()(const E& a, const E& b) const {
    return std::tie(a.at, a.seq, a.index, a.wake) > std::tie(b.at, b.seq, b.index, b.wake);
  }
};

}  // namespace

void ChipModel::push_slice(const SliceEntry& e) {
  slices_.push_back(e);
  std::push_heap(slices_.begin(), slices_.end(), SliceLater{});
  if (serving_slices_) return;  // serve_slices() takes it, or schedules itself for it
  if (!slice_method_) {
    slice_method_ = true;
    sc_core::sc_spawn_options opt;
    opt.spawn_method();
    opt.set_sensitivity(&slices_due_);
    opt.dont_initialize();
    sc_core::sc_spawn([this] { serve_slices(); }, nullptr, &opt);
  }
  // An earlier pending notification wins; one at `now` is a delta notification.
  slices_due_.notify(e.at - sc_core::sc_time_stamp());
}

void ChipModel::serve_slices() {
  activity().count(Activity::slices);
  const sc_time now = sc_core::sc_time_stamp();
  serving_slices_ = true;
  while (!slices_.empty() && slices_.front().at <= now) {
    std::pop_heap(slices_.begin(), slices_.end(), SliceLater{});
    const SliceEntry e = slices_.back();
    slices_.pop_back();
    if (e.wake) {
      ++e.op->waker->woken;
      e.op->waker->ev.notify();
      continue;
    }
    sc_time done = now;
    if (e.b.read > 0) done = std::max(done, memory().access({operand_address(e.b.read), e.b.read, false}));
    if (e.b.write > 0) done = std::max(done, memory().access({operand_address(e.b.write), e.b.write, true}));
    if (SliceOp* p = e.op) {
      if (done - now > p->memory_alone) p->wait_mem = std::max(p->wait_mem, done - now - p->memory_alone);
      if (--p->left == 0) push_slice({p->end + p->wait_mem, p->seq, e.index, true, {}, p});
    }
  }
  serving_slices_ = false;
  if (!slices_.empty()) slices_due_.notify(slices_.front().at - now);
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
  SliceOp op;
  begin_slices(op);
  for (int i = 0; i < n; ++i) {
    post_slice(start + duration * (double(i) / double(n)), op, std::uint32_t(i), slice_bytes(p, i));
  }
  // One wake-up, at its end (none when it takes no time).
  const sc_time end = start + duration;
  if (end > start) {
    post_wake(end, op, std::uint32_t(n));
    wait_woken(op, 1);
  }
  end_slices(op);
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
