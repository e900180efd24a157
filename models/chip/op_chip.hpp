// SPDX-License-Identifier: MIT
// The op-level compute model (/chip/compute/model "op"; docs/models/fidelity.md): an op's time
// comes from the tile model without simulating its tiles. Each distinct op of a run was run once
// in detail on a tile chip of the same plan (src/run/calibrate.cpp); every occurrence here is
// replayed from that profile: it takes its SBUF and PSUM footprint, then runs as kOpPieces pieces. A piece reserves, on each core the op uses,
// every engine for its share of the op's calibrated busy time on it, and issues its share of the
// op's HBM reads and writes to the chip's memory — the same MemoryPort the fabric uses — so
// concurrent ops and transfers contend. A piece ends after its share of the isolated time, or
// later: when an engine reservation ends later (another op held the engine), plus however much
// later its memory requests finished than they did on an idle memory. Alone, an occurrence takes exactly its calibrated time; a few
// events per op, whatever its size.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chip/chip.hpp"
#include "chip/chip_model.hpp"
#include "chip/op_profile.hpp"

namespace trnsim::model {

// The statistics of one core of the op-level model, {} per engine.
struct OpCoreStats {
  static constexpr StatKey engine_busy{"{}_busy", StatUnit::seconds,
                                       "time op pieces held the {} engine"};
  static constexpr std::array all{engine_busy};
};

// A core as the op-level model sees it: its four compute engines, each a Timeline that op
// pieces reserve for their share of the op's calibrated busy time on that engine. Ops that use
// different engines overlap; ops that need the same engine queue for it.
class OpCore : public Block {
 public:
  explicit OpCore(const sc_core::sc_module_name& name);
  // The busiest engine's fraction of `elapsed`.
  std::optional<double> utilisation(Duration elapsed) const override;
  std::array<Timeline, 4> engines;  // tensor, vector, scalar, gpsimd
  // The core's DMA queues, FIFO: an op's memory traffic joins them when it starts (as long as it
  // takes alone, at most the op's time), behind what earlier ops queued.
  Timeline dma;
  std::array<Stat*, 4> busy{};
  std::uint64_t sbuf_used = 0;  // bytes per partition
  std::uint64_t psum_used = 0;  // banks
};

// The statistics of the op-level model's chip (registry entry "op").
struct OpChipStats {
  static constexpr StatKey ops = ChipModelStats::ops;
  static constexpr StatKey interpolated_ops{"interpolated_ops", StatUnit::count,
    "ops whose profile was interpolated on a grid of sizes"};
  static constexpr StatKey flops = ChipModelStats::flops;
  static constexpr StatKey hbm_bytes = ChipModelStats::hbm_bytes;
  static constexpr StatKey memory_wait{"memory_wait", StatUnit::seconds,
    "time op pieces ran beyond their isolated time, waiting for HBM"};
  static constexpr std::array all{ops, interpolated_ops, flops, hbm_bytes, memory_wait};
};

class OpChip : public ChipModel {
 public:
  // `opt.calibration` holds the profiles of every op it will be given (InternalError if null).
  OpChip(const sc_core::sc_module_name& name, const config::ChipParams& p, ChipOptions opt);
  ~OpChip() override;

  // InternalError for an op without a profile (the run calibrates every op of its trace).
  OpStats execute(const ComputeOp& op, const std::string& name = "op") override;
  OpStats fast_forward(const ComputeOp& op, const ComputeOp& counterpart, const std::string& name,
                       const sc_core::sc_time& duration) override;
  MemoryPort& memory() override { return *memory_; }
  void account_until(const sc_core::sc_time& t) override;
  const config::ChipParams& params() const override { return p_; }
  int cores() const override { return int(cores_.size()); }

 private:
  // Waits until cores 0 .. used-1 all have room for the op's SBUF and PSUM footprint, and takes it.
  void acquire(const OpProfile& p, int used);
  void release(const OpProfile& p, int used);

  config::ChipParams p_;
  std::shared_ptr<const OpTable> table_;
  std::unique_ptr<sc_core::sc_module> owned_memory_;
  MemoryPort* memory_ = nullptr;
  std::vector<std::unique_ptr<OpCore>> cores_;
  std::uint64_t sbuf_capacity_ = 0, psum_capacity_ = 0;
  sc_core::sc_event freed_;
  Stat& ops_;
  Stat& interpolated_;
  Stat& flops_;
  Stat& hbm_bytes_;
  Stat& contention_;
};

}  // namespace trnsim::model
