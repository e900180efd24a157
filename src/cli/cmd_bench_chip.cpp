// SPDX-License-Identifier: MIT
// `trnsim bench gemm` and `trnsim bench dma`: the options and the tables; the benchmarks are in
// src/bench/chip.cpp.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "trnsim/bench/chip.hpp"

namespace trnsim::cli {

namespace {

using nlohmann::json;

void print_gemm_table(const json& rows) {
  fmt::print("{:>6} {:>6} {:>6} {:>6} {:>12} {:>9} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>9} {:>8} {:>8} {:>7}\n",
             "m", "k", "n", "dtype", "time_us", "TFLOPS", "peak", "%peak", "tens", "vec", "scal",
             "dma", "power_W", "events", "ev/us", "wall_s");
  for (const auto& r : rows) {
    const auto& u = r["utilisation"];
    fmt::print("{:>6} {:>6} {:>6} {:>6} {:>12.2f} {:>9.1f} {:>9.1f} {:>6.1f}% {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f} {:>9.1f} {:>8.0f} {:>8.1f} {:>7.3f}\n",
               r["m"].get<std::uint64_t>(), r["k"].get<std::uint64_t>(), r["n"].get<std::uint64_t>(),
               r["dtype"].get<std::string>(), r["time_s"].get<double>() * 1e6,
               r["achieved_tflops"].get<double>(), r["peak_tflops"].get<double>(),
               100 * r["fraction_of_peak"].get<double>(), u["tensor"].get<double>(),
               u["vector"].get<double>(), u["scalar"].get<double>(), u["dma"].get<double>(),
               r["power_w"].get<double>(), r["events"].get<double>(),
               r["events_per_sim_us"].get<double>(), r["wall_time_s"].get<double>());
  }
  if (rows.empty()) return;
  fmt::print("memory model: {}\n", rows.front()["memory_model"].get<std::string>());
  if (rows.size() == 1) {
    const auto& r = rows.front();
    fmt::print("power: chip {:.1f} W = {:.2f} x TDP {:.0f} W; with its idle NeuronLink SerDes "
               "({:.1f} W, the fabric model's in rack runs) {:.1f} W = {:.2f} x TDP\n",
               r["power_w"].get<double>(), r["power_fraction_of_tdp"].get<double>(),
               r["tdp_w"].get<double>(), r["link_idle_power_w"].get<double>(),
               r["power_with_links_w"].get<double>(),
               r["power_with_links_fraction_of_tdp"].get<double>());
  }
}

void print_dma(const json& r) {
  const auto& b = r["breakdown_ns"];
  fmt::print("{} {} B on {} engine(s), {}: {:.1f} ns ({:.2f} GB/s); DMA engine span {:.1f} ns\n",
             r["direction"].get<std::string>(), r["bytes"].get<std::uint64_t>(),
             r["engines"].get<int>(), r["chip"].get<std::string>(), r["time_ns"].get<double>(),
             r["bytes_per_s"].get<double>() / 1e9, r["engine_time_ns"].get<double>());
  fmt::print("  dge wait {:.1f}, descriptor {:.1f}, start latency beyond descriptor {:.1f}, "
             "engine transfer {:.1f}, memory + die crossing {:.1f} (ns)\n",
             b["dge_wait"].get<double>(), b["descriptor"].get<double>(),
             b["start_latency_beyond_descriptor"].get<double>(),
             b["engine_transfer"].get<double>(), b["memory_and_die_crossing"].get<double>());
  fmt::print("memory model: {}\n", r["memory_model"].get<std::string>());
}

}  // namespace

void register_bench_chip(CLI::App& bench, Registry& reg) {
  {
    auto o = std::make_shared<BenchOptions>();
    auto a = std::make_shared<bench::GemmArgs>();
    auto* sub = bench.add_subcommand("gemm", "one GEMM on one chip: time, TFLOPS, utilisation, power");
    add_bench_options(sub, *o);
    // As a trace's dimensions: 1 to 2^40 (a larger number is refused, not saturated).
    const CLI::Range dim(std::uint64_t(1), std::uint64_t(1) << 40, "an integer in [1, 2^40]");
    sub->add_option("--m", a->m, "rows of A and C")->check(dim);
    sub->add_option("--k", a->k, "contraction")->check(dim);
    sub->add_option("--n", a->n, "columns of B and C")->check(dim);
    sub->add_option("--batch", a->batch, "independent GEMMs")->check(dim);
    sub->add_option("--dtype", a->dtype, "fp32|bf16|fp16|fp8|mxfp8|mxfp4");
    sub->add_flag("--sweep", a->sweep, "square 128..16384 and skinny shapes, one row each");
    sub->add_flag("--fallback-memory", a->fallback_memory,
                  "use the fixed-latency HBM fallback instead of the HBM model");
    reg.add(sub, Footprint::builds_models, [o, a] {
      const json r = bench::gemm(o->source, *a);
      if (o->json) {
        fmt::print("{}\n", r.dump(2));
      } else {
        print_gemm_table(a->sweep ? r["gemm_sweep"] : json::array({r}));
      }
      return 0;
    });
  }
  {
    auto o = std::make_shared<BenchOptions>();
    auto a = std::make_shared<bench::DmaArgs>();
    auto* sub = bench.add_subcommand("dma", "one DMA between HBM and SBUF of one core");
    add_bench_options(sub, *o);
    sub->add_option("--bytes", a->bytes, "bytes to move (\"32KiB\" or a number; 512 B .. 64 MiB)")
        ->capture_default_str();
    sub->add_option("--direction", a->direction, "hbm-to-sbuf or sbuf-to-hbm");
    sub->add_option("--engines", a->engines, "DMA engines the transfer is spread over");
    sub->add_flag("--cross-engine", a->cross_engine,
                  "the trigger waits on another engine's semaphore (pays dma/start_latency)");
    sub->add_flag("--fallback-memory", a->fallback_memory,
                  "use the fixed-latency HBM fallback instead of the HBM model");
    reg.add(sub, Footprint::builds_models, [o, a] {
      const json r = bench::dma(o->source, *a);
      if (o->json) {
        fmt::print("{}\n", r.dump(2));
      } else {
        print_dma(r);
      }
      return 0;
    });
  }
}

}  // namespace trnsim::cli
