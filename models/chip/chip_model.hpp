// SPDX-License-Identifier: MIT
// A chip as a rack sees it, whichever compute implementation (/chip/compute/model) models it:
// the tile model (model::Chip, chip.hpp) or the op-level model (model::OpChip, op_chip.hpp).
#pragma once

#include <systemc>

#include <cstdint>
#include <string>

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

 protected:
  // fast_forward() from the profiles of the op and its counterpart; the caller counts the op in
  // its own statistics.
  OpStats replay_profile(const OpProfile& p, const OpProfile& counterpart, const std::string& name,
                         int cores_used, const sc_core::sc_time& counterpart_duration);
  // Where the next `bytes` of an op's HBM traffic go when the op's own addresses are not
  // modelled (op tier, fast-forward): at a whole interleave round of the lower half of HBM (the
  // fabric's buffers are in the upper half), one after another, wrapping.
  std::uint64_t operand_address(std::uint64_t bytes);

 private:
  std::uint64_t next_operand_addr_ = 0;
};

}  // namespace trnsim::model
