// SPDX-License-Identifier: MIT
// PyTorch execution traces (torch.profiler.ExecutionTraceObserver JSON, optionally gzip-compressed)
// read directly, without Chakra's linker and converter: the recorded operators as Trainium compute.
// Described in docs/traces-from-pytorch.md ("Reading PyTorch execution traces directly").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

struct PytorchEtOptions {
  // Replaces the recorded dtype of matrix work (GEMMs, convolutions, attention) when set.
  std::optional<DType> matmul_dtype;
  std::uint64_t max_file_bytes = std::uint64_t(4) << 30;  // after gzip decompression
};

// The workload of one PyTorch ET file (one rank), or none when `path` is not a PyTorch ET (a JSON
// object with "schema" and a "nodes" array). Each operator the table of torch_ops.hpp maps, taken
// at the outermost call that maps (its sub-calls are its own work), becomes a compute op; the ops
// run in recorded order, one after the other (the ET records no GPU streams or kernel times).
// Other leaf operators that do work are counted in Workload::coverage; collectives
// (record_param_comms) are not replayed and are counted in a warning. Throws TraceError for a
// malformed ET.
std::optional<Workload> load_pytorch_et(const std::string& path, const PytorchEtOptions& options = {});

}  // namespace trnsim::trace
