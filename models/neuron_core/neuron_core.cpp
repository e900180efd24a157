// SPDX-License-Identifier: MIT
#include "neuron_core/neuron_core.hpp"

#include "common/activity.hpp"
#include "trnsim/error.hpp"

namespace trnsim::model {

using sc_core::sc_time;

sc_time SyncEngine::execute(const Instr&, const sc_time&, const sc_time&) {
  throw InternalError(std::string(name()) + ": the Sync engine only triggers DMAs");
}

NeuronCore::NeuronCore(const sc_core::sc_module_name& name, const config::CoreParams& p,
                       MemoryPort& hbm, int granularity, WakeCalendar* calendar)
    : Block(name), p_(p) {
  sbuf_ = std::make_unique<Sram>("sbuf", p.sbuf, Sram::Unit::bytes_per_partition);
  psum_ = std::make_unique<Sram>("psum", p.psum, Sram::Unit::banks);
  dma_ = std::make_unique<DmaSystem>("dma", p.dma, hbm, *sbuf_, wakeups_, granularity,
                                     calendar);
  auto tensor = std::make_unique<TensorEngine>("tensor", p.tensor, *dma_, *sbuf_, *psum_, wakeups_);
  tensor_ = tensor.get();
  engines_[std::size_t(EngineId::tensor)] = std::move(tensor);
  engines_[std::size_t(EngineId::vector)] = std::make_unique<ElementEngine>(
      "vector", EngineId::vector, p.vector, *dma_, *sbuf_, *psum_, wakeups_);
  engines_[std::size_t(EngineId::scalar)] = std::make_unique<ElementEngine>(
      "scalar", EngineId::scalar, p.scalar, *dma_, *sbuf_, *psum_, wakeups_);
  engines_[std::size_t(EngineId::gpsimd)] = std::make_unique<ElementEngine>(
      "gpsimd", EngineId::gpsimd, p.gpsimd, *dma_, *sbuf_, *psum_, wakeups_);
  engines_[std::size_t(EngineId::sync)] = std::make_unique<SyncEngine>("sync", *dma_, wakeups_);
}

sc_time NeuronCore::run(Program& prog) {
  sbuf_->acquire(prog.sbuf_bytes_per_partition, prog.op_name);
  psum_->acquire(std::uint64_t(prog.psum_banks), prog.op_name);
  for (int e = 0; e < kEngineQueues; ++e) {
    for (const Instr& in : prog.queues[std::size_t(e)]) engines_[std::size_t(e)]->enqueue(&in);
  }
  sc_time end = sc_core::sc_time_stamp();
  if (prog.done && prog.done_target > 0) {
    for (;;) {
      if (const auto t = prog.done->reaches(prog.done_target)) {
        end = *t;
        if (end > sc_core::sc_time_stamp()) wait_counted(activity(), end - sc_core::sc_time_stamp());
        break;
      }
      ++wakeups_;
      wait_counted(activity(), prog.done->changed());
    }
  }
  psum_->release(std::uint64_t(prog.psum_banks));
  sbuf_->release(prog.sbuf_bytes_per_partition);
  return end;
}

}  // namespace trnsim::model
