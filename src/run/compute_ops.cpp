// SPDX-License-Identifier: MIT
#include "compute_ops.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "trnsim/error.hpp"
#include "trnsim/resolve/peaks.hpp"

namespace trnsim::run {

namespace {

model::ElementKind element_kind(trace::OpKind k) {
  switch (k) {
    case trace::OpKind::activation: return model::ElementKind::activation;
    case trace::OpKind::reduction: return model::ElementKind::reduction;
    case trace::OpKind::softmax: return model::ElementKind::softmax;
    case trace::OpKind::norm: return model::ElementKind::norm;
    default: return model::ElementKind::elementwise;
  }
}

// The type an op of type `d` runs as on the Tensor engines (resolve/peaks.hpp); a substitution
// is said once in the report's notes.
model::Dtype chip_dtype(trace::DType d, const config::ChipParams& chip,
                        std::vector<std::string>& notes) {
  const auto ran = resolve::tensor_dtype(chip.core.tensor.macs_per_pe_cycle, d);
  if (!ran) {
    std::vector<std::string_view> names;
    for (DType alt : resolve::kTensorSubstitutes) names.push_back(to_string(alt));
    throw InternalError(fmt::format("{} supports none of {} (the resolve step checks "
                                    "/chip/core/tensor/macs_per_pe_cycle)",
                                    chip.name, fmt::join(names, ", ")));
  }
  if (*ran != d) {
    const std::string note = fmt::format("{} has no {}: those ops ran as {}", chip.name,
                                         model::to_string(d), model::to_string(*ran));
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  }
  return *ran;
}

}  // namespace

std::optional<model::ComputeOp> to_compute_op(const trace::Op& op, const config::ChipParams& chip,
                                              std::vector<std::string>& notes) {
  using K = trace::OpKind;
  switch (op.kind) {
    case K::gemm:
      return model::GemmOp{op.m, op.k, op.n, chip_dtype(op.dtype, chip, notes), op.batch};
    case K::attention:
      // A causal mask halves the score and value work: model it as half the keys.
      return model::AttentionOp{op.batch, op.heads, op.seq_q,
                                op.causal ? std::max<std::uint64_t>(1, op.seq_kv / 2) : op.seq_kv,
                                op.head_dim, chip_dtype(op.dtype, chip, notes)};
    case K::mem_load:
    case K::mem_store:
      return model::MemcpyOp{op.bytes};
    default: {
      // Element-wise families. Ops known only by their work (Chakra num_ops) carry `flops`: a
      // matmul ("M") becomes a cube GEMM of the same work, anything else that many element ops.
      // A Chakra matmul (op_type "M") arrives as element-wise work with its num_ops as the
      // element count; run it as a GEMM, or a 10240^3 matmul becomes 10^12 element operations.
      if (op.source_type && *op.source_type == "M" && op.flops && *op.flops > 0) {
        const auto side = std::uint64_t(std::max(1.0, std::round(std::cbrt(*op.flops / 2))));
        return model::GemmOp{side, side, side, chip_dtype(op.dtype, chip, notes), 1};
      }
      std::uint64_t elements = op.elements;
      if (elements == 0 && op.flops && *op.flops > 0) elements = std::uint64_t(*op.flops);
      if (elements == 0) return std::nullopt;
      return model::ElementOp{
          element_kind(op.kind), elements, model::parse_dtype(config::enum_name(op.dtype)),
          int(std::max<std::uint64_t>(1, op.kind == K::elementwise ? op.inputs : 1))};
    }
  }
}

}  // namespace trnsim::run
