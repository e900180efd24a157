// SPDX-License-Identifier: MIT
// `trnsim bench gemm` and `trnsim bench dma`: microbenchmarks of the chip model. Each point runs
// in its own child process (run_isolated) because SystemC allows one elaboration per process.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "chip/chip.hpp"
#include "trnsim/build/registry.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/error.hpp"

namespace trnsim::cli {

namespace {

using nlohmann::json;
using model::Chip;

// A top-level module whose one thread runs `body` against the chip.
struct Driver : sc_core::sc_module {
  SC_HAS_PROCESS(Driver);
  Driver(const sc_core::sc_module_name& n, std::function<void()> body)
      : sc_core::sc_module(n), body_(std::move(body)) {
    SC_THREAD(run);
  }
  void run() { body_(); }
  std::function<void()> body_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

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
  resolve::ChipPlan plan = resolve::resolve_chip(loaded, resolve::ChipUse::as_configured);
  if (fallback_memory) plan.memory_model = "bandwidth";
  if (granularity > 0) plan.granularity = granularity;
  build::Registry registry;
  build::register_builtin_models(registry);
  return build::make_chip(registry, "chip", plan, &loaded.provenance);
}

struct GemmArgs {
  std::uint64_t m = 8192, k = 8192, n = 8192, batch = 1;
  std::string dtype = "bf16";
  bool sweep = false;
  bool fallback_memory = false;
};

json measure_gemm(const BenchOptions& o, const GemmArgs& a, std::uint64_t m, std::uint64_t k,
                  std::uint64_t n) {
  const auto loaded = o.load();
  const auto& p = BenchOptions::chip_of(loaded, o.config);
  const model::Dtype dt = model::parse_dtype(a.dtype);
  const double rate = model::macs_per_pe_cycle(p.core.tensor.macs_per_pe_cycle, dt);
  if (rate <= 0) {
    throw InputError(fmt::format("{} does not support {} (/chip/core/tensor/macs_per_pe_cycle/{} is 0)",
                                 p.name, a.dtype, a.dtype));
  }
  auto chip = build_chip(loaded, a.fallback_memory);
  model::OpStats st;
  Driver drv("driver", [&] {
    st = chip->execute(model::GemmOp{m, k, n, dt, a.batch}, fmt::format("gemm {}x{}x{}", m, k, n));
  });
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double wall = seconds_since(t0);
  const double elapsed = st.end_s;  // the op starts at t = 0
  const double peak = p.cores * p.core.tensor.rows * p.core.tensor.cols * 2.0 * rate *
                      p.core.tensor.clock.si;
  chip->account_until(sc_core::sc_time(elapsed, sc_core::SC_SEC));
  const auto e = model::collect_energy(Duration(elapsed), chip.get());
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

void print_gemm_table(const std::vector<json>& rows) {
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

struct DmaArgs {
  std::string bytes = "32768";
  std::string direction = "hbm-to-sbuf";
  int engines = 1;
  bool cross_engine = false;
  bool fallback_memory = false;
};

json measure_dma(const BenchOptions& o, const DmaArgs& a) {
  const auto loaded = o.load();
  const auto& p = BenchOptions::chip_of(loaded, o.config);
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
  sc_core::sc_start();
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

void register_bench_chip(CLI::App& bench, Registry& reg) {
  {
    auto o = std::make_shared<BenchOptions>();
    auto a = std::make_shared<GemmArgs>();
    auto* sub = bench.add_subcommand("gemm", "one GEMM on one chip: time, TFLOPS, utilisation, power");
    add_bench_options(sub, *o);
    sub->add_option("--m", a->m, "rows of A and C")->check(CLI::PositiveNumber);
    sub->add_option("--k", a->k, "contraction")->check(CLI::PositiveNumber);
    sub->add_option("--n", a->n, "columns of B and C")->check(CLI::PositiveNumber);
    sub->add_option("--batch", a->batch, "independent GEMMs")->check(CLI::PositiveNumber);
    sub->add_option("--dtype", a->dtype, "fp32|bf16|fp16|fp8|mxfp8|mxfp4");
    sub->add_flag("--sweep", a->sweep, "square 128..16384 and skinny shapes, one row each");
    sub->add_flag("--fallback-memory", a->fallback_memory,
                  "use the fixed-latency HBM fallback instead of the HBM model");
    reg.add(sub, [o, a] {
      model::parse_dtype(a->dtype);  // reject a bad type before forking
      std::vector<json> rows;
      if (a->sweep) {
        for (const auto& s : sweep_shapes()) {
          rows.push_back(run_isolated([&] { return measure_gemm(*o, *a, s[0], s[1], s[2]); }));
        }
      } else {
        rows.push_back(run_isolated([&] { return measure_gemm(*o, *a, a->m, a->k, a->n); }));
      }
      if (o->json) {
        fmt::print("{}\n", a->sweep ? json{{"gemm_sweep", rows}}.dump(2) : rows.front().dump(2));
      } else {
        print_gemm_table(rows);
      }
      return 0;
    });
  }
  {
    auto o = std::make_shared<BenchOptions>();
    auto a = std::make_shared<DmaArgs>();
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
    reg.add(sub, [o, a] {
      const json r = run_isolated([&] { return measure_dma(*o, *a); });
      if (o->json) {
        fmt::print("{}\n", r.dump(2));
      } else {
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
      return 0;
    });
  }
}

}  // namespace trnsim::cli
