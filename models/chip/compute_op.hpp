// SPDX-License-Identifier: MIT
// Trace-level compute ops as the replay engine hands them to a chip, and what the chip reports
// back for each.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "neuron_core/dtype.hpp"

namespace trnsim::model {

// C[m,n] = A[m,k] B[k,n], `batch` independent instances.
struct GemmOp {
  std::uint64_t m = 0, k = 0, n = 0;
  Dtype dtype = Dtype::bf16;
  std::uint64_t batch = 1;
};

enum class ElementKind { elementwise, activation, reduction, softmax, norm };
const char* to_string(ElementKind k);

// Element-wise families: `elements` per input, `inputs` input tensors (element-wise only).
struct ElementOp {
  ElementKind kind = ElementKind::elementwise;
  std::uint64_t elements = 0;
  Dtype dtype = Dtype::bf16;
  int inputs = 1;
};

// Unfused attention: S = Q K^T, softmax(S), O = P V, per (batch, head).
struct AttentionOp {
  std::uint64_t batch = 1, heads = 1, seq_q = 0, seq_kv = 0, head_dim = 0;
  Dtype dtype = Dtype::bf16;
};

// HBM to HBM copy through the DMA engines of all cores.
struct MemcpyOp {
  std::uint64_t bytes = 0;
};

using ComputeOp = std::variant<GemmOp, ElementOp, AttentionOp, MemcpyOp>;

struct OpStats {
  std::string name;
  double start_s = 0, end_s = 0, time_s = 0;
  double flops = 0;      // useful floating-point operations (2 per MAC)
  double hbm_bytes = 0;  // bytes the op's DMAs moved to or from HBM
  std::uint64_t instructions = 0;
  int cores_used = 0;
  // The largest SBUF (bytes per partition) and PSUM (banks) footprint of the programs the op
  // was lowered to: the tile model's, 0 where nothing was lowered.
  std::uint64_t sbuf_bytes_per_partition = 0;
  int psum_banks = 0;
};

}  // namespace trnsim::model
