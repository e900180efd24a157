// SPDX-License-Identifier: MIT
// `trnsim bench gemm` and `trnsim bench dma`: microbenchmarks of the chip model. Each point runs
// in its own child process (run_isolated) because SystemC allows one elaboration per process.
#include "trnsim/bench/chip.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chip/chip.hpp"
#include "chip/lowering.hpp"
#include "common/activity.hpp"
#include "common/driver.hpp"
#include "internal.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"
#include "trnsim/resolve/peaks.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/estimate.hpp"

namespace trnsim::bench {

namespace {

using nlohmann::json;
using model::Chip;

using model::Driver;

// Average busy fraction of every engine of a kind over `elapsed`.
json utilisation(Chip& chip, double elapsed) {
  json u = json::object();
  if (elapsed <= 0) return u;
  const std::pair<const char*, model::EngineId> kinds[] = {
      {"tensor", model::EngineId::tensor},
      {"vector", model::EngineId::vector},
      {"scalar", model::EngineId::scalar},
      {"gpsimd", model::EngineId::gpsimd}};
  for (const auto& [key, id] : kinds) {
    double busy = 0;
    for (int c = 0; c < chip.cores(); ++c) busy += chip.core(c).engine(id).busy().to_seconds();
    u[key] = busy / (chip.cores() * elapsed);
  }
  double dma = 0;
  int engines = 0;
  for (int c = 0; c < chip.cores(); ++c) {
    for (int e = 0; e < chip.core(c).dma().engines(); ++e, ++engines) {
      dma += chip.core(c).dma().engine(e).timeline().busy().to_seconds();
    }
  }
  u["dma"] = engines ? dma / (engines * elapsed) : 0.0;
  return u;
}

// The chip of `loaded` as configured, built through the registry; --fallback-memory picks the
// bandwidth memory model. `granularity` overrides /sim/compute_granularity when given.
std::unique_ptr<Chip> build_chip(const config::LoadedConfig& loaded, bool fallback_memory,
                                 int granularity = 0) {
  resolve::ChipPlan plan = *resolve::plan(loaded, resolve::Purpose::bench_chip).chip;
  if (fallback_memory) plan.memory_model = "bandwidth";
  if (granularity > 0) plan.granularity = granularity;
  registry::Registry registry;
  registry::register_builtin_models(registry);
  return registry::make_tile_chip(registry, "chip", plan, &loaded.provenance);
}

json measure_gemm(const ConfigSource& o, const GemmArgs& a, std::uint64_t m, std::uint64_t k,
                  std::uint64_t n) {
  const auto loaded = o.load();
  const auto& p = chip_of(loaded, o.path);
  const model::Dtype dt = model::parse_dtype(a.dtype);
  const double rate = model::macs_per_pe_cycle(p.core.tensor.macs_per_pe_cycle, dt);
  if (rate <= 0) {
    throw InputError(fmt::format("{} does not support {} (/chip/core/tensor/macs_per_pe_cycle/{} is 0)",
                                 p.name, a.dtype, a.dtype));
  }
  auto chip = build_chip(loaded, a.fallback_memory);
  const auto power_model = power_of(loaded);
  model::OpStats st;
  Driver drv("driver", [&] {
    st = chip->execute(model::GemmOp{m, k, n, dt, a.batch}, fmt::format("gemm {}x{}x{}", m, k, n));
  });
  const auto t0 = std::chrono::steady_clock::now();
  model::run_bounded();
  const double wall = seconds_since(t0);
  const double elapsed = st.end_s;  // the op starts at t = 0
  const double peak = resolve::chip_peaks(p).tensor(dt);
  chip->account_until(sc_core::sc_time(elapsed, sc_core::SC_SEC));
  const auto e = model::collect_energy(*power_model, Duration(elapsed), chip.get());
  const double events = double(chip->wakeups());
  const double power = elapsed > 0 ? e.total().si / elapsed : 0.0;
  // The chip's NeuronLink SerDes idle at `idle_fraction` of full rate; in rack runs the fabric
  // model counts them, here they are reported beside the chip, since a TDP covers them.
  const double links = p.link.idle_fraction * p.link.energy.si * 8.0 * p.link.lane_rate.si *
                       double(p.link.lanes);
  json j = {{"chip", p.name},
            {"m", m}, {"k", k}, {"n", n}, {"batch", a.batch}, {"dtype", a.dtype},
            {"time_s", elapsed},
            {"achieved_tflops", elapsed > 0 ? st.flops / elapsed / 1e12 : 0.0},
            {"peak_tflops", peak / 1e12},
            {"fraction_of_peak", elapsed > 0 ? st.flops / elapsed / peak : 0.0},
            {"cores_used", st.cores_used},
            {"hbm_bytes", st.hbm_bytes},
            {"instructions", st.instructions},
            {"utilisation", utilisation(*chip, elapsed)},
            {"energy_j", e.total().si},
            {"static_energy_j", e.static_.si},
            {"power_w", power},
            {"tdp_w", p.tdp.si},
            {"power_fraction_of_tdp", p.tdp.si > 0 ? power / p.tdp.si : 0.0},
            {"link_idle_power_w", links},
            {"power_with_links_w", power + links},
            {"power_with_links_fraction_of_tdp", p.tdp.si > 0 ? (power + links) / p.tdp.si : 0.0},
            {"energy_by_category_j", e.by_category_joules},
            {"events", events},
            {"events_per_sim_us", elapsed > 0 ? events / (elapsed * 1e6) : 0.0},
            {"wall_time_s", wall},
            {"compute_granularity", loaded.config.sim.compute_granularity},
            {"memory_model", chip->memory_model()}};
  return j;
}

std::vector<std::array<std::uint64_t, 3>> sweep_shapes() {
  std::vector<std::array<std::uint64_t, 3>> s;
  for (std::uint64_t x = 128; x <= 16384; x *= 2) s.push_back({x, x, x});
  // Skinny shapes: decode-like (few rows), tall-skinny and a long contraction.
  s.push_back({128, 8192, 8192});
  s.push_back({8192, 8192, 128});
  s.push_back({1024, 65536, 1024});
  s.push_back({65536, 1024, 1024});
  return s;
}

json measure_dma(const ConfigSource& o, const DmaArgs& a) {
  const auto loaded = o.load();
  const auto& p = chip_of(loaded, o.path);
  if (a.direction != "hbm-to-sbuf" && a.direction != "sbuf-to-hbm") {
    throw InputError(fmt::format("--direction: expected hbm-to-sbuf or sbuf-to-hbm, got \"{}\"",
                                 a.direction));
  }
  if (a.engines < 1 || a.engines > p.core.dma.engines) {
    throw InputError(fmt::format("--engines: expected 1..{}, got {}", p.core.dma.engines, a.engines));
  }
  const std::uint64_t bytes = parse_size(a.bytes, "--bytes");
  if (bytes < 512 || bytes > (std::uint64_t(64) << 20)) {
    throw InputError(fmt::format("--bytes: expected 512 B to 64 MiB, got {} B", bytes));
  }
  auto chip = build_chip(loaded, a.fallback_memory, 1);
  Chip::DmaResult r;
  Driver drv("driver", [&] {
    r = chip->dma_sbuf(0, bytes, a.direction == "hbm-to-sbuf", a.engines, a.cross_engine);
  });
  const auto t0 = std::chrono::steady_clock::now();
  model::run_bounded();
  const double wall = seconds_since(t0);
  const double total = r.end_s - r.trigger_s;
  const double share = std::ceil(double(bytes) / a.engines);
  const double transfer = share / p.core.dma.engine_bandwidth.si;
  const double engine_span = r.end_s - r.start_s;
  json j = {{"chip", p.name}, {"bytes", bytes}, {"direction", a.direction},
            {"engines", a.engines}, {"cross_engine", a.cross_engine},
            {"time_ns", total * 1e9},
            {"bytes_per_s", total > 0 ? double(bytes) / total : 0.0},
            {"engine_time_ns", engine_span * 1e9},
            {"engine_bytes_per_s", engine_span > 0 ? double(bytes) / engine_span : 0.0},
            {"breakdown_ns",
             {{"dge_wait", (r.dge_start_s - r.trigger_s) * 1e9},
              {"descriptor", (r.dge_end_s - r.dge_start_s) * 1e9},
              {"start_latency_beyond_descriptor", (r.start_s - r.dge_end_s) * 1e9},
              {"engine_transfer", transfer * 1e9},
              {"memory_and_die_crossing", (engine_span - transfer) * 1e9}}},
            {"wall_time_s", wall},
            {"memory_model", chip->memory_model()}};
  return j;
}

}  // namespace

Json gemm(const ConfigSource& config, const GemmArgs& a) {
  const model::Dtype dt = model::parse_dtype(a.dtype);  // reject a bad type before forking
  if (!a.sweep) {
    // Before forking: the GEMM's program is built whole, so its size is its instructions.
    const auto loaded = config.load();
    const auto& p = chip_of(loaded, config.path);
    double instructions = 0;
    if (model::macs_per_pe_cycle(p.core.tensor.macs_per_pe_cycle, dt) > 0) {
      instructions = model::lowered_instructions(model::GemmOp{a.m, a.k, a.n, dt, a.batch}, p,
                                                 loaded.config.sim.compute_granularity);
    }
    run::check_budgets(
        run::kEventsPerInstruction * instructions,
        model::kLoweredBytesPerInstruction * instructions, loaded.config.sim,
        fmt::format("bench gemm --m {} --k {} --n {} --batch {}", a.m, a.k, a.n, a.batch),
        fmt::format("{:.4g} tile-model instructions", instructions),
        "use smaller --m, --k, --n or --batch");
    return run_isolated([&] { return measure_gemm(config, a, a.m, a.k, a.n); });
  }
  json rows = json::array();
  for (const auto& s : sweep_shapes()) {
    rows.push_back(run_isolated([&] { return measure_gemm(config, a, s[0], s[1], s[2]); }));
  }
  return {{"gemm_sweep", rows}};
}

Json dma(const ConfigSource& config, const DmaArgs& a) {
  return run_isolated([&] { return measure_dma(config, a); });
}

}  // namespace trnsim::bench
