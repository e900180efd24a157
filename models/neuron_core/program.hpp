// SPDX-License-Identifier: MIT
// A program for one NeuronCore: an in-order instruction stream per engine queue, synchronised
// through semaphores, as the Neuron compiler emits it. The lowering (models/chip/lowering.*)
// builds programs; NeuronCore::run() executes one.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/memory.hpp"
#include "neuron_core/dtype.hpp"
#include "neuron_core/semaphore.hpp"

namespace trnsim::model {

// Engine queues (sequencers) of a core. `sync` is the SP/Sync engine that only triggers DMAs.
enum class EngineId : std::uint8_t { tensor = 0, vector, scalar, gpsimd, sync };
inline constexpr int kEngineQueues = 5;
const char* engine_name(EngineId e);

// Where a DMA reads or writes. `external` is a port outside the chip's HBM (a fabric link's
// network interface, attached through Chip::attach_network_port()).
enum class DmaEndpoint : std::uint8_t { hbm, sbuf, external };

struct Instr {
  // Members ordered by alignment so that no padding sits between them: a large op's programs
  // hold millions of instructions (an attention of 8,192 x 20,480 x 128 heads: 2.9 M).
  std::array<SemWait, 3> waits{};
  std::array<Semaphore*, 3> signals{};
  // element: elements processed; bytes read from PSUM and SBUF and written to SBUF (for energy).
  std::uint64_t elements = 0;
  std::uint64_t psum_read = 0, sbuf_read = 0, sbuf_write = 0;
  // dma: bytes, HBM (or external) byte address, the external port (below: source and
  // destination, queue, engines).
  std::uint64_t bytes = 0, addr = 0;
  MemoryPort* external = nullptr;
  // matmul: rows of the contraction used (k), stationary columns (m), moving free size (n);
  // whether the stationary tile changes (a LoadStationary precedes it).
  // reps > 1 (coarse granularity, /sim/compute_granularity): `reps` back-to-back matmuls of the
  // same m x n tile in one instruction; k is then their total contraction.
  std::uint32_t k = 0, m = 0, n = 0;
  std::uint32_t reps = 1;
  std::uint32_t inputs = 1;  // element: number of input tensors
  Dtype dtype = Dtype::bf16;
  std::uint16_t queue = 0, engines = 16, first_engine = 0;  // dma
  enum class Kind : std::uint8_t { matmul, element, dma };
  Kind kind = Kind::element;
  std::uint8_t nwaits = 0, nsignals = 0;
  DmaEndpoint src = DmaEndpoint::hbm, dst = DmaEndpoint::sbuf;
  bool new_stationary = true;
  bool accumulate = false;  // adds into the PSUM bank (read-modify-write) instead of overwriting
  bool wide = false;        // element: the inputs are 32-bit (PSUM FP32)
  // True when the DMA's trigger waits on a semaphore set by another engine: only then does it
  // pay the DMA start latency (DMAG's ~1.3 us is measured from such a semaphore to the start).
  bool cross_engine = true;

  Instr& wait(Semaphore* s, std::uint64_t target) {
    if (target > 0) waits[nwaits++] = SemWait{s, target};
    return *this;
  }
  Instr& signal(Semaphore* s) {
    signals[nsignals++] = s;
    return *this;
  }
};
static_assert(sizeof(Instr) <= 168, "Instr: members reordered or grown; see the comment above");

// Everything one op runs on one core. Semaphores live as long as the program.
struct Program {
  std::string op_name;
  std::array<std::vector<Instr>, kEngineQueues> queues;
  std::deque<Semaphore> semaphores;
  Semaphore* done = nullptr;  // signalled by every instruction that ends the program
  std::uint64_t done_target = 0;
  std::uint64_t sbuf_bytes_per_partition = 0;  // footprint the lowering chose
  int psum_banks = 0;

  Semaphore* new_semaphore() { return &semaphores.emplace_back(); }
  // Reserves each semaphore's room for the increments the program's instructions record (an
  // allocation per semaphore; no effect on timing).
  void reserve_signals() {
    for (const auto& q : queues) {
      for (const Instr& in : q) {
        for (int i = 0; i < in.nsignals; ++i) in.signals[std::size_t(i)]->plan_signal();
      }
    }
    for (Semaphore& s : semaphores) s.reserve_planned();
  }
  Instr& push(EngineId e, Instr in) {
    auto& q = queues[static_cast<int>(e)];
    q.push_back(in);
    return q.back();
  }
};

}  // namespace trnsim::model
