// SPDX-License-Identifier: MIT
// MLCommons Chakra execution traces (.et): PREFIX.<rank>.et per rank, each a varint32-framed
// GlobalMetadata followed by Nodes, optionally gzip-compressed. How nodes map to ops is in
// docs/trace-format.md ("Chakra").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

struct ChakraOptions {
  // Units of comm_size, tensor_size and trnsim_send_bytes: bytes, or elements of element_bytes
  // each (ASTRA-sim's symbolic generator counts elements). Unset: detected from the trace
  // (detect_units); a trace whose units cannot be told is read as bytes with a warning that
  // gives both readings' totals.
  enum class SizeUnit { bytes, elements };
  std::optional<SizeUnit> size_unit;
  std::uint32_t element_bytes = 2;

  // What num_ops counts: floating-point operations, or multiply-accumulates (2 FLOPs each;
  // ASTRA-sim's symbolic generator counts MACs). Unset: detected with the size unit.
  enum class NumOpsUnit { flops, macs };
  std::optional<NumOpsUnit> num_ops_unit;

  // GPU kernels of a PyTorch-derived trace whose operator (the kernel's own name, or the CPU op
  // that launched it) is a known aten operator with recorded shapes run as Trainium compute ops
  // (torch_ops.hpp); false keeps every kernel's recorded duration.
  bool map_operators = true;
  // Factor on the recorded durations of kernels that stay delays (1: as recorded).
  double unmapped_scale = 1.0;
  // GPU nodes (not CPU ops) with a "tid" attribute (PyTorch-derived traces: the CUDA stream) run
  // in file order per stream, as a GPU runs a stream's kernels; false: only recorded dependencies.
  bool stream_order = true;

  // Element type given to ops that Chakra records without one.
  DType dtype = DType::bf16;

  // Element type of matmuls (op_type "M", run as GEMMs): this when set, else the node's "dtype"
  // string attribute where it has one ("bf16", "fp8", ...), else `dtype`.
  std::optional<DType> matmul_dtype;

  // What an ALL_GATHER's comm_size is: each rank's input (ASTRA-sim's meaning and that of the
  // traces its tools make; the gathered output is comm_size x the group's ranks), or the
  // gathered output itself.
  enum class AllGatherSize { input, output };
  AllGatherSize all_gather_size = AllGatherSize::input;

  // Process-group file: {"<pg_name>": [ranks...], ...}. Empty: PREFIX.json when it exists.
  std::string process_groups;

  // Largest size of one rank file, after gzip decompression (a gzip bomb stops here).
  std::uint64_t max_file_bytes = std::uint64_t(4) << 30;
};

// How a trace's sizes and num_ops were read, and why.
struct ChakraUnits {
  ChakraOptions::SizeUnit size_unit = ChakraOptions::SizeUnit::bytes;
  ChakraOptions::NumOpsUnit num_ops_unit = ChakraOptions::NumOpsUnit::flops;
  bool detected = false;  // false: could not be told (read as bytes and FLOPs, with a warning)
  std::string reason;     // "GlobalMetadata schema \"symbolic_tensor_network\" (...)", ...
};

// Reads PREFIX.0.et, PREFIX.1.et, ... while they exist (a rank without an .et file may be in
// Chakra's JSON form, PREFIX.<rank>.json with a "workload_graph" array). Throws TraceError when
// rank 0 does not exist or a file is malformed; what real traces get wrong but can be replayed
// anyway (dependencies on absent nodes, self-dependencies, a pg_name without a process-group
// file, collectives known only by their duration) goes to Workload::warnings.
Workload load_chakra(const std::string& prefix, const ChakraOptions& options = {});

// True when `path` is a JSON object with a "workload_graph" key: Chakra's JSON form, not a
// native trace.
bool is_chakra_json(const std::string& path);

struct ChakraExportOptions {
  // Also embed each op as native JSON in the extension attribute `trnsim_op`, so that trnsim
  // reads back exactly what it wrote (GEMM shapes, dtypes, sub-microsecond delays) while other
  // tools see plain Chakra nodes.
  bool embed_native = true;
  bool gzip = false;
};

// Writes PREFIX.<rank>.et for every rank and the process-group file PREFIX.json. Sizes are
// written in bytes and num_ops in FLOPs (the reader's defaults).
void export_chakra(const Workload& w, const std::string& prefix,
                   const ChakraExportOptions& options = {});

// The same nodes in Chakra's JSON form: PREFIX.<rank>.json, each {"workload_graph": [...]} with
// the node attributes in protobuf's JSON mapping under "attr", and PREFIX.json. `gzip` is ignored.
void export_chakra_json(const Workload& w, const std::string& prefix,
                        const ChakraExportOptions& options = {});

}  // namespace trnsim::trace
