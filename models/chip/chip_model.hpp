// SPDX-License-Identifier: MIT
// A chip as a rack sees it, whichever compute implementation (/chip/compute/model) models it:
// the tile model (model::Chip, chip.hpp) or the op-level model (model::OpChip, op_chip.hpp).
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chip/compute_op.hpp"
#include "chip/op_profile.hpp"
#include "common/block.hpp"
#include "common/memory.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

// What every compute implementation counts on its chip block.
struct ChipModelStats {
  static constexpr StatKey ops{"ops", StatUnit::count, "ops executed"};
  static constexpr StatKey flops{"flops", StatUnit::count, "useful floating-point operations"};
  static constexpr StatKey hbm_bytes{"hbm_bytes", StatUnit::bytes,
                                     "bytes the ops moved to or from HBM"};
};

class ChipModel : public Block {
 public:
  using Block::Block;
  // From a SystemC thread: runs `op` and blocks until it is done. Several threads may execute
  // ops on one chip at once; they then contend for the chip's resources.
  virtual OpStats execute(const ComputeOp& op, const std::string& name = "op") = 0;
  // Fast-forward (replay::FastForward): `op` is not simulated but timed from `counterpart`, the
  // op it repeats in an earlier micro-batch, which took `duration`: it takes `duration` x the
  // ratio of the two ops' calibrated times (op_chip.hpp). From its profile, its energy, FLOPs
  // and statistics are counted, and its HBM reads and writes are issued to memory() spread over
  // its time as the op-level model issues them, so that concurrent transfers and ops still meet
  // them. InternalError without a profile.
  virtual OpStats fast_forward(const ComputeOp& op, const ComputeOp& counterpart,
                               const std::string& name, const sc_core::sc_time& duration) = 0;
  // The chip's memory: the port the fabric reads and writes.
  virtual MemoryPort& memory() = 0;
  // Passes the memory's pending energy (refresh, ...) up to `t`; call before collecting energy.
  virtual void account_until(const sc_core::sc_time& t) = 0;
  virtual const config::ChipParams& params() const = 0;
  virtual int cores() const = 0;
  // The dynamic energy, at `t`, of the ops in flight whose actions are counted only when they
  // end (an op-tier op, a fast-forwarded op, the extrapolated rest of a tile op): each at the
  // share of its expected time that has passed by `t`, at most all of it. Without it an op's
  // energy landed in the sample interval it ended in, which put the default tier's peak power at
  // 21.8 MW for 16 chips of 700 W. Once the op ends its meters hold it all, so the sum never falls.
  Energy dynamic_unmetered(const PowerModel& power, const sc_core::sc_time& t) const override;
  bool has_unmetered() const override { return true; }

 protected:
  // An op whose `actions` will be counted when it ends, from `start`, expected to take
  // `expected`: it accrues until end_accrual(token) (accruing_dynamic()).
  using Actions = std::vector<std::pair<Action, ActionMeter>>;
  std::uint64_t begin_accrual(Actions actions, const sc_core::sc_time& start,
                              const sc_core::sc_time& expected);
  // `actions` by reference, not copied (one copy per op was 5 % of the default step's CPU): they
  // must outlive end_accrual(), as an op's profile does.
  std::uint64_t begin_accrual(const std::map<Action, ActionMeter>& actions,
                              const sc_core::sc_time& start, const sc_core::sc_time& expected);
  void end_accrual(std::uint64_t token);

  // fast_forward() from the profiles of the op and its counterpart; the caller counts the op in
  // its own statistics.
  OpStats replay_profile(const OpProfile& p, const OpProfile& counterpart, const std::string& name,
                         int cores_used, const sc_core::sc_time& counterpart_duration);
  // Where the next `bytes` of an op's HBM traffic go when the op's own addresses are not
  // modelled (op tier, fast-forward): at a whole interleave round of the lower half of HBM (the
  // fabric's buffers are in the upper half), one after another, wrapping.
  std::uint64_t operand_address(std::uint64_t bytes);

  // The HBM slices of the ops whose traffic is issued in slices over their time (the op tier,
  // fast-forward, the extrapolated rest of a tile op) are issued by one method per chip, not by
  // the op's thread: a slice is posted ahead with its time, and at that time the chip issues it
  // to memory() with every other slice due then, in a fixed order: by time, then by op (the
  // order the ops began on the chip), then by the slice's index. Their order, and so every
  // contention result, does not depend on the order SystemC resumes the ops' threads. The op's
  // thread waits for wake-ups posted the same way, woken by that method in the same order.
  struct Waker {
    sc_core::sc_event ev;
    std::uint64_t woken = 0;
  };
  struct SliceOp;
  struct SliceEntry {
    sc_core::sc_time at;
    std::uint32_t index = 0;
    bool wake = false;
    PieceBytes b;
    SliceOp* op = nullptr;  // a wake's op, or a piece slice's piece
  };
  // An op's posted entries, which it posts in (time, index, wake) order (an entry out of order
  // is put in its place). The chip's heap holds the ops with entries, by their first one and the
  // op's order: the order (time, op, index, wake) of every entry, with a heap of a dozen ops
  // rather than one of hundreds of entries.
  struct SliceStream {
    std::uint64_t seq = 0;
    std::vector<SliceEntry> q;
    std::size_t head = 0;
    bool queued = false;    // in the heap (it has entries)
    bool released = false;  // end_slices() was called: back to the pool once it is drained
    const SliceEntry& first() const { return q[head]; }
    bool empty() const { return head == q.size(); }
  };
  struct SliceOp {
    std::uint64_t seq = 0;  // the order the op began on this chip
    Waker* waker = nullptr;
    SliceStream* stream = nullptr;  // its posted slices and wake-ups, in order
    // A piece whose end waits for its slices (OpChip::execute): when its last slice has been
    // issued, the op is woken at `end` plus the latest slice's finish beyond `memory_alone`.
    int left = 0;
    sc_core::sc_time end, memory_alone, wait_mem;
  };
  // Starts an op's slices (takes a waker); end_slices() returns it.
  void begin_slices(SliceOp& op);
  void end_slices(SliceOp& op);
  // Slice `index` of the op, `b` issued at `at` (>= now). With `piece`, the slice counts towards
  // that piece's end (SliceOp::left); without, nothing of the op need outlive the call.
  void post_slice(const sc_core::sc_time& at, const SliceOp& op, std::uint32_t index,
                  PieceBytes b, SliceOp* piece = nullptr);
  // Wakes the op at `at` (>= now); wait_woken(op, n) returns once it has been woken n times.
  void post_wake(const sc_core::sc_time& at, SliceOp& op, std::uint32_t index);
  void wait_woken(SliceOp& op, std::uint64_t n);
  std::uint64_t woken(const SliceOp& op) const;

 private:
  static bool stream_later(const SliceStream* a, const SliceStream* b);
  void stream_heap_push(SliceStream* s);
  void stream_heap_pop();  // removes the top
  void stream_heap_sift_down(std::size_t i);
  void push_slice(SliceStream& s, const SliceEntry& e);
  void recycle(SliceStream& s);
  void serve_slices();

  struct Accrual {
    std::uint64_t token = 0;
    sc_core::sc_time start, expected;
    Actions actions;                                     // owned, or
    const std::map<Action, ActionMeter>* by_ref = nullptr;  // the caller's
  };
  std::uint64_t next_operand_addr_ = 0;
  std::vector<Accrual> accruing_;  // in the order the ops began
  std::uint64_t next_token_ = 0;
  std::vector<SliceStream*> slice_heap_;  // earliest first entry (at, seq, index, wake) on top
  std::vector<std::unique_ptr<SliceStream>> streams_;
  std::vector<SliceStream*> idle_streams_;
  sc_core::sc_event slices_due_;
  bool slice_method_ = false;
  bool serving_slices_ = false;
  std::uint64_t next_slice_op_ = 0;
  std::vector<std::unique_ptr<Waker>> wakers_;
  std::vector<Waker*> idle_wakers_;
};

}  // namespace trnsim::model
