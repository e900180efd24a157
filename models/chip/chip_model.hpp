// SPDX-License-Identifier: MIT
// A chip as a rack sees it, whichever compute implementation (/chip/compute/model) models it:
// the tile model (model::Chip, chip.hpp) or the op-level model (model::OpChip, op_chip.hpp).
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
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

 protected:
  // An op whose `actions` will be counted when it ends, from `start`, expected to take
  // `expected`: it accrues until end_accrual(token) (accruing_dynamic()).
  using Actions = std::vector<std::pair<Action, ActionMeter>>;
  std::uint64_t begin_accrual(Actions actions, const sc_core::sc_time& start,
                              const sc_core::sc_time& expected);
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

 private:
  struct Accrual {
    std::uint64_t token = 0;
    sc_core::sc_time start, expected;
    Actions actions;
  };
  std::uint64_t next_operand_addr_ = 0;
  std::vector<Accrual> accruing_;  // in the order the ops began
  std::uint64_t next_token_ = 0;
};

}  // namespace trnsim::model
