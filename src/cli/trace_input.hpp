// SPDX-License-Identifier: MIT
// Reading a trace given on the command line (`run --trace`, `trace info|convert|export`): a
// native file, a Chakra prefix, or a Chakra rank file PREFIX.0.et / PREFIX.0.json standing for
// its prefix; with the files read and a hash of their bytes for the report.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/run/run.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::cli {

struct TraceInput {
  std::string path;
  std::string size_unit, num_ops_unit, groups;  // "": detected from the trace
  std::string all_gather_size = "input", matmul_dtype;  // matmul_dtype "": from the trace
  std::uint32_t element_bytes = 2;
  bool keep_durations = false;   // --chakra-keep-durations: no operator mapping
  double unmapped_scale = 1.0;   // --chakra-unmapped-scale
  std::string kineto;            // --kineto: the Kineto profile(s) of a PyTorch ET
  bool log_notes = true;         // log the reader's warnings and operator coverage (run)
  bool log_warnings = true;      // with log_notes: the warnings too (run's summary prints them)
  std::vector<CLI::Option*> chakra_options;  // set by add_chakra_options
  // A native JSON trace's binary form kept in, and read from, this cache (trace_cache.hpp); `run`
  // turns it on as it does the calibration cache.
  run::CacheSettings cache;
  bool chakra_options_given() const;
};

// --chakra-size-unit, --chakra-element-bytes, --chakra-num-ops, --chakra-all-gather-size,
// --chakra-matmul-dtype, --process-groups.
void add_chakra_options(CLI::App* sub, TraceInput& in);

struct LoadedTrace {
  trace::Workload workload;
  bool chakra = false;
  bool native_binary = false;        // a native trace in the binary form
  std::string prefix;                // Chakra: the prefix the rank files share
  std::vector<std::string> files;    // in the order read
  std::string sha256;                // of their bytes, concatenated
  std::uint64_t bytes = 0;
};

// The reader's warnings grouped: the same message of several rank files once, with the files'
// count and the summed count of what it counts ("3 rank files: 1277 dependencies name ...").
std::vector<std::string> grouped_warnings(const trace::Workload& w);

// `in.path`, or `fallback` when it is empty. Throws TraceError for what cannot be read.
LoadedTrace load_trace(const TraceInput& in, const std::string& fallback);

}  // namespace trnsim::cli
