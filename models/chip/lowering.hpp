// SPDX-License-Identifier: MIT
// Lowering of trace-level ops to NeuronCore programs (engine instruction streams with
// semaphores), the way the Neuron compiler / NKI kernels structure them.
//
// GEMM: the (batch, M, N) work is split over the chip's cores (whole GEMMs per core when batch >=
// cores, else the M x N grid of cores whose per-core plans read the least from HBM). On a core, C is
// computed in 128 x TN tiles (TN = min(moving_free_max, one PSUM bank of FP32)): blocks of A (Mb
// tiles of 128 rows x Kb*TK, one DMA per tile) and B (Kb*TK x Nb tiles of TN) are DMA'd into SBUF
// slots (double-buffered), each tile accumulates over K in one PSUM bank (matmul per TK = rows x
// k_factor), is evicted by Vector or Scalar (alternating) to SBUF in the output type (BF16, FP32
// for FP32 inputs) and stored by a DMA triggered from the evicting engine. When the whole K fits,
// one operand stays resident in blocks as large as SBUF allows (one DMA per tile, so the first
// matmuls wait for their own tile) while the other streams (one DMA per block); the plan keeps A
// or B resident, whichever reads less from HBM, and PSUM banks form a ring. Otherwise K is
// blocked and Mb * Nb <= banks tiles accumulate at once.
// Tile sizes are the largest that fit SBUF; an op that cannot fit is a WorkloadError naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chip/compute_op.hpp"
#include "neuron_core/program.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

// Bump allocator of HBM addresses (tensors only need distinct, realistic addresses).
struct HbmAllocator {
  std::uint64_t next = 0, capacity = 0;
  std::uint64_t alloc(std::uint64_t bytes);
};

// One step of an op: a program per core (null where the core has no work); the steps of an op
// run one after the other.
struct LoweredStep {
  std::vector<std::unique_ptr<Program>> per_core;
  double flops = 0;
  double hbm_bytes = 0;
  std::uint64_t instructions = 0;
};

struct GemmPlan {
  std::uint64_t tm = 0, tn = 0, tk = 0;        // instruction tile (stationary cols, moving, K)
  std::uint64_t mb = 0, nb = 0, kb = 0;        // block sizes, in tiles
  bool full_k = true;                          // K whole: one operand stays resident
  bool a_resident = true;                      // A stays, B streams (else the reverse)
  int resident_buffers = 2;                    // slots of the resident operand (1 or 2)
  std::uint64_t sbuf_bytes_per_partition = 0;  // footprint
  int psum_banks = 0;
  double hbm_bytes = 0;                        // HBM traffic of the plan (A, B and C)
};

// Tile plan for a [m x k x n] GEMM (batch `batches`) on one core; WorkloadError naming `op` when
// nothing fits, InputError when the Tensor engine does not support the type.
GemmPlan plan_gemm(std::uint64_t m, std::uint64_t k, std::uint64_t n, std::uint64_t batches,
                   Dtype dtype, const config::ChipParams& chip, const std::string& op);

// `granularity` > 1 groups up to that many matmuls of one output tile's contraction into one
// instruction (Instr::reps); the plan (tiles, blocks, SBUF/PSUM footprint) does not change.
std::vector<LoweredStep> lower(const ComputeOp& op, const std::string& name,
                               const config::ChipParams& chip, HbmAllocator& hbm,
                               int granularity = 1);

// The instructions lower() builds for `op` (all steps, all cores), counted from the same plans
// without building them (exact; 0 for an op lower() refuses for a zero dimension), and the
// memory each takes while its op runs (a vector slot, up to twice that while a queue grows).
// What a run of tile-model ops costs, known before any is lowered (run::estimate_work).
double lowered_instructions(const ComputeOp& op, const config::ChipParams& chip, int granularity = 1);
inline constexpr double kLoweredBytesPerInstruction = 2.0 * sizeof(Instr);

}  // namespace trnsim::model
