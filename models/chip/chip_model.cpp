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
  if (idle_streams_.empty()) {
    streams_.push_back(std::make_unique<SliceStream>());
    idle_streams_.push_back(streams_.back().get());
  }
  op.stream = idle_streams_.back();
  idle_streams_.pop_back();
  op.stream->seq = op.seq;
  op.stream->released = false;
}

void ChipModel::end_slices(SliceOp& op) {
  idle_wakers_.push_back(op.waker);
  op.waker = nullptr;
  // Slices posted without a wake-up (an op that takes no time) may still be due.
  op.stream->released = true;
  if (op.stream->empty()) recycle(*op.stream);
  op.stream = nullptr;
}

void ChipModel::recycle(SliceStream& s) {
  s.q.clear();
  s.head = 0;
  idle_streams_.push_back(&s);
}

void ChipModel::post_slice(const sc_time& at, const SliceOp& op, std::uint32_t index,
                           PieceBytes b, SliceOp* piece) {
  push_slice(*op.stream, {at, index, false, b, piece});
}

void ChipModel::post_wake(const sc_time& at, SliceOp& op, std::uint32_t index) {
  push_slice(*op.stream, {at, index, true, {}, &op});
}

void ChipModel::wait_woken(SliceOp& op, std::uint64_t n) {
  while (op.waker->woken < n) wait_counted(activity(), op.waker->ev);
}

std::uint64_t ChipModel::woken(const SliceOp& op) const { return op.waker->woken; }

namespace {

bool entry_before(const sc_time& a_at, std::uint32_t a_index, bool a_wake, const sc_time& b_at,
                  std::uint32_t b_index, bool b_wake) {
  return std::tie(a_at, a_index, a_wake) < std::tie(b_at, b_index, b_wake);
}

}  // namespace

bool ChipModel::stream_later(const SliceStream* a, const SliceStream* b) {
  const SliceEntry& x = a->first();
  const SliceEntry& y = b->first();
  return std::tie(x.at, a->seq, x.index, x.wake) > std::tie(y.at, b->seq, y.index, y.wake);
}

void ChipModel::stream_heap_push(SliceStream* s) {
  slice_heap_.push_back(s);
  std::size_t i = slice_heap_.size() - 1;
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (!stream_later(slice_heap_[parent], s)) break;
    slice_heap_[i] = slice_heap_[parent];
    i = parent;
  }
  slice_heap_[i] = s;
}

void ChipModel::stream_heap_sift_down(std::size_t i) {
  const std::size_t n = slice_heap_.size();
  SliceStream* s = slice_heap_[i];
  for (;;) {
    std::size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && stream_later(slice_heap_[c], slice_heap_[c + 1])) ++c;
    if (!stream_later(s, slice_heap_[c])) break;
    slice_heap_[i] = slice_heap_[c];
    i = c;
  }
  slice_heap_[i] = s;
}

void ChipModel::stream_heap_pop() {
  slice_heap_.front() = slice_heap_.back();
  slice_heap_.pop_back();
  if (!slice_heap_.empty()) stream_heap_sift_down(0);
}

void ChipModel::push_slice(SliceStream& s, const SliceEntry& e) {
  bool new_first = false;
  if (s.empty() || !entry_before(e.at, e.index, e.wake, s.q.back().at, s.q.back().index,
                                 s.q.back().wake)) {
    s.q.push_back(e);
  } else {
    // Before an entry already posted (no caller posts so today): into its place.
    const auto it = std::upper_bound(
        s.q.begin() + std::ptrdiff_t(s.head), s.q.end(), e,
        [](const SliceEntry& x, const SliceEntry& y) {
          return entry_before(x.at, x.index, x.wake, y.at, y.index, y.wake);
        });
    new_first = it == s.q.begin() + std::ptrdiff_t(s.head);
    s.q.insert(it, e);
  }
  if (!s.queued) {
    s.queued = true;
    stream_heap_push(&s);
  } else if (new_first) {
    std::make_heap(slice_heap_.begin(), slice_heap_.end(),
                   [](const SliceStream* a, const SliceStream* b) { return stream_later(a, b); });
  }
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
  while (!slice_heap_.empty() && slice_heap_.front()->first().at <= now) {
    SliceStream& s = *slice_heap_.front();
    const SliceEntry e = s.q[s.head++];
    if (s.empty()) {
      s.queued = false;
      s.q.clear();
      s.head = 0;
      stream_heap_pop();
      if (s.released) recycle(s);
    } else {
      stream_heap_sift_down(0);
    }
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
      if (--p->left == 0) push_slice(*p->stream, {p->end + p->wait_mem, e.index, true, {}, p});
    }
  }
  serving_slices_ = false;
  if (!slice_heap_.empty()) slices_due_.notify(slice_heap_.front()->first().at - now);
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
