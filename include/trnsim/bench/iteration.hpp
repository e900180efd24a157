// SPDX-License-Identifier: MIT
// `trnsim bench iteration`: one inference iteration of a model (configs/models/) under a layout,
// simulated on the rack (docs/inference.md): its time, where it went, and the roofline bounds
// it is compared against.
#pragma once

#include <cstdint>
#include <string>

#include "trnsim/bench/bench.hpp"

namespace trnsim::bench {

struct IterationArgs {
  std::string model = "llama-3.1-8b";  // a name under configs/models/ or a file
  std::string layout = "tp=1";         // infer::parse_layout
  std::uint64_t batch = 1;             // decode sequences
  std::uint64_t context = 1024;        // their KV length
  std::uint64_t prefill_tokens = 0;    // one prefill chunk
  std::uint64_t prefill_context = 0;   // its prompt already cached
  std::string weights_dtype = "bf16";  // bf16, fp8, mxfp8, mxfp4
  std::string kv_dtype = "bf16";       // bf16, fp8
  std::uint64_t seed = 1;
  double launch_us = 15, sync_us = 10, schedule_us = 0;  // infer::RuntimeCosts
  double reserve_fraction = 0.10;
  std::uint64_t block_tokens = 16;
  std::string batch_buckets, seq_buckets;  // "1,2,4,8" (empty: exact shapes)
  // > 0: a decode run of this many iterations, the context growing from `context` by one token
  // each; each distinct shape simulated once and reused ("decode_run" in the result).
  std::uint64_t decode_steps = 0;
  // A decode run's steps between two context lengths of a grid timed on the line between them
  // (only the grid's shapes simulated); `held_back` steps off the grid also simulated exactly,
  // and the error reported.
  bool interpolate = false;
  std::uint64_t held_back = 0;
  // The KV capacity alone (with the checks that refuse what does not fit), no simulation.
  bool capacity_only = false;
  // Disaggregated prefill (the chunk) and decode (the batch) on two pools of the layout, the
  // chunk's KV sent layer by layer from one to the other (infer::IterationSpec::disaggregated).
  bool disaggregate = false;
};

// {"model", "layout", "rack", "chip", "ranks", "time_ns", "breakdown_ns" {part: ns on the rank
// that finished last}, "bounds" {"memory_ns", "compute_ns", bytes and flops}, "ratio_to_memory",
// "ratio_to_compute", "limit", "capacity" {KV per chip and replica}, "padding" {the shapes run
// at, and the bounds of the padded work}, ...}. The bounds are the useful (exact-shape) work's. Refuses (InputError)
// a model whose weights do not fit the layout, and a batch whose KV does not fit.
Json iteration(const ConfigSource& config, const IterationArgs& a);

}  // namespace trnsim::bench
