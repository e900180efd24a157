// SPDX-License-Identifier: MIT
// PyTorch execution traces (torch.profiler.ExecutionTraceObserver JSON, optionally gzip-compressed)
// read directly, without Chakra's linker and converter: the recorded operators as Trainium compute,
// the recorded collectives as trnsim collectives, one file per rank, and the Kineto profile's
// kernel times for the operators that do not map.
// Described in docs/traces-from-pytorch.md ("Without Chakra's tools: PyTorch execution traces read directly").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

struct PytorchEtOptions {
  // Replaces the recorded dtype of matrix work (GEMMs, convolutions, attention) when set.
  std::optional<DType> matmul_dtype;
  std::uint64_t max_file_bytes = std::uint64_t(4) << 30;  // after gzip decompression
  // The Kineto profile recorded with the ET (torch.profiler's JSON, gzip or not): a file for one
  // rank, or a directory whose profiles name their rank (/distributedInfo/rank). Its kernels'
  // durations are linked to the ET's calls; an unmapped call keeps its recorded GPU time.
  std::string kineto;
  // No mapping: every call with recorded GPU time keeps it (needs `kineto`).
  bool keep_durations = false;
  double unmapped_scale = 1.0;  // factor on the kept durations
};

// The workload of one PyTorch ET file (one rank), or none when `path` is not a PyTorch ET (a JSON
// object with "schema" and a "nodes" array). Each operator the table of torch_ops.hpp maps, taken
// at the outermost call that maps (its sub-calls are its own work), becomes a compute op; each
// record_param_comms collective becomes a trnsim collective with its recorded sizes, dtype and
// per-peer splits; the ops run in recorded order, one after the other (the ET records no GPU
// streams or kernel times). Other leaf operators that do work are counted in
// Workload::coverage. A collective of a group larger than the one rank read runs on that rank
// alone (counted in a warning). Throws TraceError for a malformed ET.
std::optional<Workload> load_pytorch_et(const std::string& path, const PytorchEtOptions& options = {});
// The same on the file's text already read (inflated if it was gzip): a caller that reads a file
// once for every reader it tries.
std::optional<Workload> load_pytorch_et_text(const std::string& text, const std::string& path,
                                             const PytorchEtOptions& options = {});

// The ET files of several ranks as one workload: files[r] is rank r. The collectives' process
// groups come from the files' process-group records (pg_name, "## process_group:init ##", global
// rank start/stride/size), or are all the ranks when the trace names none; the k-th collective of
// a group must agree across its ranks (kind, sizes; an all-to-all-v's receive splits must be what
// its peers send). Throws TraceError naming the file and node id of what does not agree, or a
// file that is not a PyTorch ET.
Workload load_pytorch_et_ranks(const std::vector<std::string>& files,
                               const PytorchEtOptions& options = {});

// The rank files of a set of PyTorch ETs, rank order: a directory holding NAME<r>.json or
// NAME<r>.json.gz for r = 0..N-1 (one NAME), or a prefix P with files P<r>.json[.gz] or
// P.<r>.json[.gz]. Empty when `path` is neither. Throws TraceError for a directory whose
// numbered files skip or repeat a rank, or have several names.
std::vector<std::string> pytorch_et_rank_files(const std::string& path);

}  // namespace trnsim::trace
