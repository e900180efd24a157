// SPDX-License-Identifier: MIT
// A chip as a rack sees it, whichever compute implementation (/chip/compute/model) models it:
// the tile model (model::Chip, chip.hpp) or the op-level model (model::OpChip, op_chip.hpp).
#pragma once

#include <systemc>

#include <cstdint>
#include <string>

#include "chip/compute_op.hpp"
#include "common/block.hpp"
#include "common/memory.hpp"
#include "trnsim/config/chip_params.hpp"

namespace trnsim::model {

class ChipModel : public Block {
 public:
  using Block::Block;
  // From a SystemC thread: runs `op` and blocks until it is done. Several threads may execute
  // ops on one chip at once; they then contend for the chip's resources.
  virtual OpStats execute(const ComputeOp& op, const std::string& name = "op") = 0;
  // The chip's memory: the port the fabric reads and writes.
  virtual MemoryPort& memory() = 0;
  // Passes the memory's pending energy (refresh, ...) up to `t`; call before collecting energy.
  virtual void account_until(const sc_core::sc_time& t) = 0;
  virtual const config::ChipParams& params() const = 0;
  virtual int cores() const = 0;
};

}  // namespace trnsim::model
