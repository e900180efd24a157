// SPDX-License-Identifier: MIT
// `trnsim bench iteration`: the options and the table; the benchmark is in
// src/bench/iteration.cpp.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "trnsim/bench/iteration.hpp"

namespace trnsim::cli {

namespace {

void print_capacity(const nlohmann::json& c) {
  fmt::print("KV cache per rank   {:.2f} GB free of {:.2f} GB HBM (weights {:.2f} GB, activations "
             "{:.3f} GB, reserve {:.2f} GB): {} bytes per token, {} tokens per chip, {} per "
             "replica\n",
             c["kv_bytes"].get<double>() / 1e9, c["hbm_bytes"].get<double>() / 1e9,
             c["weights_bytes"].get<double>() / 1e9, c["activations_bytes"].get<double>() / 1e9,
             c["reserve_bytes"].get<double>() / 1e9, c["kv_bytes_per_token"].get<double>(),
             c["kv_tokens_per_chip"].get<std::uint64_t>(),
             c["kv_tokens_per_replica"].get<std::uint64_t>());
}

void print_table(const nlohmann::json& r) {
  const auto& b = r["bounds"];
  fmt::print("{} on {} ({} ranks, layout {}, weights {}, KV {}): batch {} at context {}, prefill {}"
             " after {}\n",
             r["model"].get<std::string>(), r["rack"].get<std::string>(), r["ranks"].get<int>(),
             r["layout"].get<std::string>(), r["weights_dtype"].get<std::string>(),
             r["kv_dtype"].get<std::string>(), r["batch"].get<std::uint64_t>(),
             r["context"].get<std::uint64_t>(), r["prefill_tokens"].get<std::uint64_t>(),
             r["prefill_context"].get<std::uint64_t>());
  fmt::print("iteration time      {:>12.2f} us ({} fidelity)\n", r["time_ns"].get<double>() / 1e3,
             r["fidelity"].get<std::string>());
  fmt::print("memory bound        {:>12.2f} us  (weights {:.3f} GB + KV {:.3f} GB read / HBM)  "
             "time/bound {:.2f}\n",
             b["memory_ns"].get<double>() / 1e3, b["weight_bytes_read"].get<double>() / 1e9,
             b["kv_bytes_read"].get<double>() / 1e9, r["ratio_to_memory_bound"].get<double>());
  fmt::print("compute bound       {:>12.2f} us  ({:.3f} TFLOP / peak of the dtypes run)  "
             "time/bound {:.2f}\n",
             b["compute_ns"].get<double>() / 1e3, b["flops"].get<double>() / 1e12,
             r["ratio_to_compute_bound"].get<double>());
  const auto& pad = r["padding"];
  if (pad["buckets"].get<bool>()) {
    fmt::print("compiled shapes     batch per group {} at context {}, prefill {}: padded work's "
               "bounds {:.2f} us memory, {:.2f} us compute\n",
               pad["decode_per_group"].dump(), pad["context"].get<std::uint64_t>(),
               pad["prefill_tokens"].get<std::uint64_t>(), pad["memory_ns"].get<double>() / 1e3,
               pad["compute_ns"].get<double>() / 1e3);
  }
  fmt::print("breakdown (rank {}, us; overlapping ops count in full):\n",
             r["breakdown_rank"].get<int>());
  for (const auto& [k, v] : r["breakdown_ns"].items()) {
    if (v.get<double>() > 0) fmt::print("  {:<16} {:>12.2f}\n", k, v.get<double>() / 1e3);
  }
  if (r.contains("decode_run")) {
    const auto& d = r["decode_run"];
    fmt::print("decode run          {} steps in {:.2f} ms ({:.2f} us each, {:.0f} tokens/s); {} "
               "shapes simulated, reuse rate {:.1f} %\n",
               d["steps"].get<std::uint64_t>(), d["total_time_ns"].get<double>() / 1e6,
               d["mean_iteration_ns"].get<double>() / 1e3, d["tokens_per_s"].get<double>(),
               d["shapes_simulated"].get<std::size_t>(), 100 * d["reuse_rate"].get<double>());
    if (d.contains("held_back")) {
      for (const auto& h : d["held_back"]) {
        fmt::print("  held back: context {} exact {:.2f} us, interpolated {:.2f} us ({:+.2f} %)\n",
                   h["context"].get<std::uint64_t>(), h["exact_ns"].get<double>() / 1e3,
                   h["interpolated_ns"].get<double>() / 1e3, 100 * h["error"].get<double>());
      }
    }
  }
  if (!r["kv_transfer"].is_null()) {
    const auto& k = r["kv_transfer"];
    fmt::print("KV transfer         {:.3f} MB from the prefill pool to the decode pool over {} "
               "chip pairs (the network carried {:.3f} MB in all)\n",
               k["bytes"].get<double>() / 1e6, k["pairs"].size(),
               k["network_bytes"].get<double>() / 1e6);
  }
  print_capacity(r["capacity"]);
}

}  // namespace

void register_bench_iteration(CLI::App& bench, Registry& reg) {
  auto o = std::make_shared<std::pair<BenchOptions, bench::IterationArgs>>();
  auto& a = o->second;
  auto* sub = bench.add_subcommand(
      "iteration", "one inference iteration of a model on the rack: time, breakdown, bounds");
  add_bench_options(sub, o->first, "rack preset", false);  // --seed is the routing seed here
  sub->add_option("--model", a.model, "a model of configs/models/ (name) or a model file");
  sub->add_option("--layout", a.layout, "tp=N,dp=N,ep=N,pp=N (missing keys are 1)");
  sub->add_option("--batch", a.batch, "sequences decoding one token each");
  sub->add_option("--context", a.context, "their KV cache length in tokens");
  sub->add_option("--prefill-tokens", a.prefill_tokens, "tokens of one prefill chunk (0: none)");
  sub->add_option("--prefill-context", a.prefill_context, "prompt tokens before the chunk");
  sub->add_option("--weights-dtype", a.weights_dtype, "bf16, fp8, mxfp8 or mxfp4");
  sub->add_option("--kv-dtype", a.kv_dtype, "bf16 or fp8");
  sub->add_option("--seed", a.seed, "MoE routing seed");
  sub->add_option("--launch-us", a.launch_us, "runtime launch cost per iteration (us)");
  sub->add_option("--sync-us", a.sync_us, "host-device synchronisation per iteration (us)");
  sub->add_option("--schedule-us", a.schedule_us, "scheduler cost per iteration (us)");
  sub->add_option("--reserve", a.reserve_fraction, "fraction of HBM kept free (default 0.1)");
  sub->add_option("--block-tokens", a.block_tokens, "tokens per KV cache block (default 16)");
  sub->add_flag("--disaggregate", a.disaggregate,
               "prefill the chunk and decode the batch on two pools of the layout, the chunk's "
               "KV sent between them layer by layer");
  sub->add_flag("--capacity", a.capacity_only,
               "print the KV cache capacity per chip and per replica only (no simulation)");
  sub->add_option("--decode-steps", a.decode_steps,
                  "a decode run of N iterations, context growing by one each; distinct shapes "
                  "simulated once and reused");
  sub->add_flag("--interpolate", a.interpolate,
               "decode run: simulate only a grid of context lengths and batch sizes and interpolate "
               "between them");
  sub->add_option("--held-back", a.held_back,
                  "decode run with --interpolate: steps also simulated exactly, with the error");
  sub->add_option("--batch-buckets", a.batch_buckets,
                  "compiled batch sizes, e.g. 1,2,4,8,16,32,64 (default: exact shapes)");
  sub->add_option("--seq-buckets", a.seq_buckets,
                  "compiled sequence lengths for the context and the prefill chunk, e.g. "
                  "128,256,512,1024,2048 (default: exact shapes)");
  reg.add(sub, Footprint::builds_models, [o]() {
    const auto r = bench::iteration(o->first.source, o->second);
    if (o->first.json) {
      fmt::print("{}\n", r.dump(2));
    } else if (o->second.capacity_only) {
      fmt::print("{} on {} ({} ranks, layout {}, weights {}, KV {})\n",
                 r["model"].get<std::string>(), r["rack"].get<std::string>(),
                 r["ranks"].get<int>(), r["layout"].get<std::string>(),
                 r["weights_dtype"].get<std::string>(), r["kv_dtype"].get<std::string>());
      print_capacity(r["capacity"]);
    } else {
      print_table(r);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
