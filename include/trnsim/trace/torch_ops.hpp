// SPDX-License-Identifier: MIT
// Recorded PyTorch operators (aten::mm, addmm, bmm, matmul, linear, convolutions, attention,
// norms, softmax, elementwise, activation, pooling, optimizer foreach ops) as trnsim compute ops,
// from the tensor shapes and dtypes that PyTorch's execution trace records and Chakra's converter
// copies into each node's inputs/outputs. The table of operators is in
// docs/traces-from-pytorch.md ("What is mapped").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

// One argument of a recorded call: its type string ("Tensor(float)", "Int",
// "GenericList[Tensor(float),Tensor(float)]", ...), its shape as recorded (a tensor: a list of
// ints; a tensor list: a list of those) and its value (ints, bools and lists of them; a tensor's
// value is PyTorch's [id, storage, offset, numel, element size, device]).
struct TorchArg {
  std::string type;
  Json shape;
  Json value;
};

struct TorchCall {
  std::string op;  // "aten::mm": the node name without Chakra's "(n)" suffix
  std::vector<TorchArg> inputs, outputs;
};

// "aten::mm(3)" -> "aten::mm"; other names unchanged.
std::string torch_op_name(std::string_view node_name);

// True when `op` is an operator map_torch_op knows (whatever its shapes).
bool is_known_torch_op(std::string_view op);

// Chakra IOInfo strings (Python literals: "[[1, 2], [3]]", "['Tensor(float)', 'Int']") as
// arguments. Throws TraceError (naming `where`) when they are not literals or disagree in length.
std::vector<TorchArg> parse_torch_args(std::string_view values, std::string_view shapes,
                                       std::string_view types, const std::string& where);

// The same from PyTorch ET JSON arrays (inputs/input_shapes/input_types).
std::vector<TorchArg> torch_args_from_json(const Json& values, const Json& shapes,
                                           const Json& types);

// The dtype of a recorded type string ("Tensor(c10::BFloat16)", "GenericList[Tensor(float)]"):
// bf16, fp16, fp8, else fp32 (double, integers and bool run as fp32 element work).
DType torch_dtype(std::string_view type);

// Python literal -> JSON (lists, ints, floats, 'strings', True/False/None). Throws TraceError.
Json parse_python_literal(std::string_view text, const std::string& where);

// The trnsim compute op for a recorded operator, or none when the operator is not one it knows or
// its shapes are missing. `matmul_dtype`, when set, replaces the recorded dtype of matrix work
// (GEMMs, convolutions, attention). The op has kind, shape, dtype and source_type (the operator
// name); id, name and deps are the caller's.
std::optional<Op> map_torch_op(const TorchCall& call, std::optional<DType> matmul_dtype = {});

}  // namespace trnsim::trace
