// SPDX-License-Identifier: MIT
// One NeuronCore: Tensor, Vector, Scalar and GpSimd engines plus the Sync (SP) queue, each with
// its own in-order instruction queue; SBUF and PSUM with enforced capacity; 16 DMA engines.
// run() executes one op's Program: it takes the program's SBUF/PSUM footprint (waiting while a
// concurrent op holds it), hands each engine its queue and blocks until the program's last
// instruction has signalled.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <memory>

#include "common/block.hpp"
#include "common/memory.hpp"
#include "neuron_core/dma.hpp"
#include "neuron_core/engines.hpp"
#include "neuron_core/program.hpp"
#include "neuron_core/sram.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

// The SP/Sync engine: a sequencer that only triggers DMAs.
class SyncEngine : public Engine {
 public:
  SyncEngine(const sc_core::sc_module_name& name, DmaSystem& dma, std::uint64_t& wakeups)
      : Engine(name, EngineId::sync, dma, wakeups) {}

 protected:
  sc_core::sc_time execute(const Instr& in, const sc_core::sc_time& start,
                           const sc_core::sc_time& operands) override;
};

class NeuronCore : public Block {
 public:
  // `hbm` is the memory as this core's DMA engines see it (the chip adds die crossing).
  // `granularity` > 1 lets each DMA engine wake-up move that many windows (see dma.hpp).
  // `calendar` orders the DMA engines' wake-ups; a chip passes one for all its cores (null: the
  // core makes its own).
  NeuronCore(const sc_core::sc_module_name& name, const config::CoreParams& p, MemoryPort& hbm,
             int granularity = 1, WakeCalendar* calendar = nullptr);

  // From a SystemC thread: runs `prog` to completion and returns its end time.
  sc_core::sc_time run(Program& prog);

  const config::CoreParams& params() const { return p_; }
  Engine& engine(EngineId e) { return *engines_[std::size_t(e)]; }
  TensorEngine& tensor() { return *tensor_; }
  ElementEngine& element(EngineId e) { return static_cast<ElementEngine&>(engine(e)); }
  DmaSystem& dma() { return *dma_; }
  Sram& sbuf() { return *sbuf_; }
  Sram& psum() { return *psum_; }
  // Simulation wake-ups of this core's threads (engines, DMA engines).
  std::uint64_t wakeups() const { return wakeups_; }

 private:
  config::CoreParams p_;
  std::uint64_t wakeups_ = 0;
  std::unique_ptr<Sram> sbuf_, psum_;
  std::unique_ptr<DmaSystem> dma_;
  TensorEngine* tensor_ = nullptr;
  std::array<std::unique_ptr<Engine>, kEngineQueues> engines_;
};

}  // namespace trnsim::model
