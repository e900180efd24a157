// SPDX-License-Identifier: MIT
// `trnsim bench iteration`: an inference iteration on the rack through run::Simulation and the
// infer::IterationDriver; the bounds are computed from what the iteration's ops must move and
// compute (infer::RankWork), the time from the simulated chips and fabric.
#include "trnsim/bench/iteration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "trnsim/error.hpp"
#include "trnsim/infer/iteration.hpp"
#include "trnsim/resolve/peaks.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/simulation.hpp"

namespace trnsim::bench {

namespace {

DType dtype_option(const std::string& s, const char* option,
                   std::initializer_list<DType> allowed) {
  DType d{};
  try {
    d = parse_dtype(s);
  } catch (const InputError&) {
    d = DType::fp32;  // refused below
  }
  if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) {
    std::string names;
    for (DType x : allowed) names += fmt::format("{}{}", names.empty() ? "" : ", ", to_string(x));
    throw InputError(fmt::format("{}: expected one of {}, got \"{}\"", option, names, s));
  }
  return d;
}

std::vector<std::uint64_t> size_list(const std::string& s, const char* option) {
  std::vector<std::uint64_t> out;
  std::size_t at = 0;
  while (at < s.size()) {
    const auto comma = s.find(',', at);
    const std::string item = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    out.push_back(parse_size(item, option));
    at = comma == std::string::npos ? s.size() : comma + 1;
  }
  return out;
}

struct Prepared {
  infer::IterationSpec spec;
  infer::KvCapacity capacity;
  double hbm_per_rank = 0;
  int ranks_per_chip = 1;
  std::string chip, rack;
  // Keys per tile of the attention GEMMs: the Tensor engine's rows, the keys one matmul of the
  // value GEMM contracts (/chip/core/tensor/rows). The coarser steps, the score GEMM's tiles of
  // moving_free_max keys and its streamed blocks of them, are multiples of it on the presets.
  std::uint64_t key_tile = 128;
};

Prepared prepare(const config::LoadedConfig& cfg, const IterationArgs& a) {
  if (!cfg.config.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: bench iteration needs a rack preset",
                                  cfg.path));
  }
  Prepared p;
  auto& s = p.spec;
  s.model = infer::load_model(infer::model_path(a.model, data_path("configs/models")));
  s.layout = infer::parse_layout(a.layout);
  infer::check_layout(s.model, s.layout);
  s.dtypes.weights = dtype_option(a.weights_dtype, "--weights-dtype",
                                  {DType::bf16, DType::fp8, DType::mxfp8, DType::mxfp4});
  s.dtypes.kv = dtype_option(a.kv_dtype, "--kv-dtype", {DType::bf16, DType::fp8});
  s.decode_seqs = a.batch;
  s.context = a.context;
  s.prefill_tokens = a.prefill_tokens;
  s.prefill_context = a.prefill_context;
  s.seed = a.seed;
  for (auto [v, opt] : {std::pair{a.launch_us, "--launch-us"}, {a.sync_us, "--sync-us"},
                        {a.schedule_us, "--schedule-us"}}) {
    if (!(v >= 0 && v <= 1e6)) throw InputError(fmt::format("{}: expected 0 to 1e6, got {}", opt, v));
  }
  s.runtime = {a.launch_us * 1e-6, a.sync_us * 1e-6, a.schedule_us * 1e-6};
  s.batch_buckets = size_list(a.batch_buckets, "--batch-buckets");
  s.seq_buckets = size_list(a.seq_buckets, "--seq-buckets");
  if (!(a.reserve_fraction >= 0 && a.reserve_fraction < 1)) {
    throw InputError(fmt::format("--reserve: expected a fraction in [0, 1), got {}",
                                 a.reserve_fraction));
  }
  if (a.block_tokens < 1) throw InputError("--block-tokens: expected at least 1");
  const resolve::RackPlan plan = *resolve::plan(cfg, resolve::Purpose::run).rack;
  const auto& hbm = plan.chip.params.hbm;
  p.ranks_per_chip = std::max(1, plan.placement.per_chip);
  p.chip = plan.chip.params.name;
  p.key_tile = std::max<std::uint64_t>(1, std::uint64_t(plan.chip.params.core.tensor.rows));
  p.rack = cfg.config.rack->name;
  p.hbm_per_rank = double(hbm.stacks) * hbm.capacity_per_stack.si / p.ranks_per_chip;
  const std::size_t chips = plan.topology.chip_count();
  s.disaggregated = a.disaggregate;
  if (a.disaggregate && a.prefill_tokens == 0) {
    throw InputError("--disaggregate: the prefill pool needs a chunk (--prefill-tokens)");
  }
  const int ranks = s.layout.ranks() * (a.disaggregate ? 2 : 1);
  if (std::size_t(ranks) > chips * std::size_t(p.ranks_per_chip)) {
    throw InputError(fmt::format("--layout: {}{} needs {} ranks; {} has {} chips x {} ranks per "
                                 "chip",
                                 s.layout.text(), a.disaggregate ? " in two pools" : "", ranks,
                                 cfg.config.rack->name, chips, p.ranks_per_chip));
  }
  infer::CapacityOptions o;
  o.hbm_bytes = p.hbm_per_rank;
  o.reserve_fraction = a.reserve_fraction;
  o.block_tokens = a.block_tokens;
  const auto dp = std::uint64_t(s.layout.dp);
  o.max_tokens = (a.batch + dp - 1) / dp + a.prefill_tokens;
  o.max_sequences = (a.batch + dp - 1) / dp + (a.prefill_tokens > 0 ? 1 : 0);
  p.capacity = infer::kv_capacity(s.model, s.layout, s.dtypes, o);
  infer::check_fits(s.model, s.layout, p.capacity, plan.chip.params.name);
  // The fullest data-parallel group's KV: its decode sequences' contexts and the prefill.
  const std::uint64_t per_group = (a.batch + dp - 1) / dp, block = a.block_tokens;
  const std::uint64_t blocks = per_group * infer::BlockAllocator::blocks_for(a.context + 1, block) +
                               infer::BlockAllocator::blocks_for(a.prefill_context + a.prefill_tokens, block);
  if (blocks > p.capacity.blocks_per_chip) {
    throw InputError(fmt::format(
        "--batch {} --context {}: the KV cache of a data-parallel group needs {} blocks of {} "
        "tokens; {} {} with layout {} holds {} per rank ({} tokens)",
        a.batch, a.context, blocks, block, s.model.name, plan.chip.params.name, s.layout.text(),
        p.capacity.blocks_per_chip, p.capacity.tokens_per_chip));
  }
  return p;
}

// Stages run one after another within an iteration; within a stage, the rank with the most to
// move (compute) bounds it. A chip's bandwidth and peak are shared by its ranks.
struct Bounds {
  double memory_s = 0, compute_s = 0, weights = 0, kv = 0, flops = 0;
};

// The bounds of the pool whose ranks start at `first`.
Bounds pool_bounds(const infer::IterationSource& source, const resolve::ChipPeaks& peaks,
                   int ranks_per_chip, int first) {
  const auto& l = source.spec().layout;
  Bounds b;
  for (int st = 0; st < l.pp; ++st) {
    double mem = 0, comp = 0;
    for (int r = first + st * l.stage_ranks(); r < first + (st + 1) * l.stage_ranks(); ++r) {
      const auto& w = source.work(r);
      const double bytes = w.weight_bytes + w.kv_read_bytes + w.kv_write_bytes;
      mem = std::max(mem, bytes * ranks_per_chip / peaks.hbm_bytes_per_s);
      double c = 0;
      for (std::size_t d = 0; d < w.flops.size(); ++d) {
        if (w.flops[d] == 0) continue;
        const auto ran = peaks.ran_as(DType(d));
        const double peak = ran ? peaks.tensor(*ran) : 0;
        if (peak > 0) c += w.flops[d] / peak;
        b.flops += w.flops[d];
      }
      comp = std::max(comp, c * ranks_per_chip);
      b.weights += w.weight_bytes;
      b.kv += w.kv_read_bytes;
    }
    b.memory_s += mem;
    b.compute_s += comp;
  }
  return b;
}

Bounds bounds_of(const infer::IterationSource& source, const resolve::ChipPeaks& peaks,
                 int ranks_per_chip) {
  // Disaggregated pools run at the same time: the slower pool's bound.
  if (source.spec().disaggregated) {
    const Bounds a = pool_bounds(source, peaks, ranks_per_chip, 0);
    const Bounds b = pool_bounds(source, peaks, ranks_per_chip, source.spec().layout.ranks());
    return {std::max(a.memory_s, b.memory_s), std::max(a.compute_s, b.compute_s),
            a.weights + b.weights, a.kv + b.kv, a.flops + b.flops};
  }
  return pool_bounds(source, peaks, ranks_per_chip, 0);
}

// Disaggregated: the chunk's KV the prefill pool sent, between which chips, and what the network
// carried in all (the pools' own collectives included).
Json kv_transfer_json(const infer::IterationSource& source, const run::RunData& out) {
  if (!source.spec().disaggregated) return nullptr;
  double bytes = 0;
  Json pairs = Json::array();
  const int n = source.spec().layout.ranks();
  for (int r = 0; r < n; ++r) {
    const double b = source.work(r).kv_sent_bytes;
    if (b <= 0) continue;
    bytes += b;
    pairs.push_back({{"from_rank", r},
                     {"to_rank", r + n},
                     {"from_chip", out.rank_to_chip[std::size_t(r)]},
                     {"to_chip", out.rank_to_chip[std::size_t(r + n)]},
                     {"bytes", b}});
  }
  // Fast-forwarded layers' transfers are charged to the links without being simulated.
  return {{"bytes", bytes},
          {"pairs", pairs},
          {"network_bytes", double(out.network.bytes_injected) +
                                out.fast_forward_stats.bytes_accounted}};
}

Json capacity_json(const infer::KvCapacity& c) {
  return {{"hbm_bytes", c.hbm},
          {"weights_bytes", c.weights},
          {"activations_bytes", c.activations},
          {"reserve_bytes", c.reserve},
          {"kv_bytes", c.kv},
          {"kv_bytes_per_token", c.kv_bytes_per_token},
          {"block_tokens", c.block_tokens},
          {"blocks_per_chip", c.blocks_per_chip},
          {"kv_tokens_per_chip", c.tokens_per_chip},
          {"kv_tokens_per_replica", c.tokens_per_replica},
          {"fullest_stage", c.stage}};
}

}  // namespace

namespace {

// One iteration simulated in a child process.
Json measure(const ConfigSource& config, const Prepared& p, const IterationArgs& a) {
  return run_isolated([&]() -> Json {
    const auto cfg = config.load();
    infer::IterationSource source(p.spec);
    // The same iteration at its exact shapes: the useful work the bounds count (the iteration
    // itself without compiled buckets).
    std::optional<infer::IterationSource> exact_source;
    if (!p.spec.batch_buckets.empty() || !p.spec.seq_buckets.empty()) {
      infer::IterationSpec exact_spec = p.spec;
      exact_spec.batch_buckets.clear();
      exact_spec.seq_buckets.clear();
      exact_source.emplace(exact_spec);
    }
    const infer::IterationSource& exact = exact_source ? *exact_source : source;
    infer::IterationDriver driver(source);
    run::Simulation sim(cfg, driver);
    const run::RunData out = sim.run();
    const resolve::ChipPeaks peaks = resolve::chip_peaks(sim.rack_plan().chip);
    const auto& l = p.spec.layout;
    const Bounds useful = bounds_of(exact, peaks, p.ranks_per_chip);
    const Bounds padded = bounds_of(source, peaks, p.ranks_per_chip);
    const double mem_s = useful.memory_s, comp_s = useful.compute_s;
    // Breakdown: the ops of the rank that finished last, by part (ops that overlap, such as a
    // shared expert beside the dispatch, count in full, so the parts may add up to more).
    int last_rank = 0;
    sc_core::sc_time last_end = sc_core::SC_ZERO_TIME;
    for (const auto& r : out.records) {
      if (r.end >= last_end) last_end = r.end, last_rank = r.rank;
    }
    std::array<double, infer::kPartCount> parts{};
    for (const auto& r : out.records) {
      if (r.rank != last_rank) continue;
      parts[std::size_t(source.part(r.rank, r.index))] += (r.end - r.start).to_seconds();
    }
    Json breakdown = Json::object();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      breakdown[infer::part_name(infer::Part(i))] = parts[i] * 1e9;
    }
    const double t = out.end.to_seconds();
    const double bound = std::max(mem_s, comp_s);
    return {{"model", p.spec.model.name},
            {"layout", l.text()},
            {"rack", cfg.config.rack->name},
            {"chip", sim.rack_plan().chip.params.name},
            {"ranks", source.num_ranks()},
            {"disaggregated", p.spec.disaggregated},
            {"ranks_per_chip", p.ranks_per_chip},
            {"weights_dtype", to_string(p.spec.dtypes.weights)},
            {"kv_dtype", to_string(p.spec.dtypes.kv)},
            {"batch", a.batch},
            {"context", a.context},
            {"prefill_tokens", a.prefill_tokens},
            {"prefill_context", a.prefill_context},
            {"seed", a.seed},
            {"fidelity", out.fidelity},
            {"time_ns", t * 1e9},
            {"breakdown_ns", breakdown},
            {"breakdown_rank", last_rank},
            {"bounds",
             {{"memory_ns", mem_s * 1e9},
              {"compute_ns", comp_s * 1e9},
              {"weight_bytes_read", useful.weights},
              {"kv_bytes_read", useful.kv},
              {"flops", useful.flops},
              {"hbm_bytes_per_s_per_chip", peaks.hbm_bytes_per_s}}},
            {"ratio_to_memory_bound", mem_s > 0 ? t / mem_s : 0},
            {"ratio_to_compute_bound", comp_s > 0 ? t / comp_s : 0},
            {"bound_limit", mem_s >= comp_s ? "memory" : "compute"},
            {"ratio_to_bound", bound > 0 ? t / bound : 0},
            {"capacity", capacity_json(p.capacity)},
            {"kv_transfer", kv_transfer_json(source, out)},
            {"padding",
             {{"buckets", !p.spec.batch_buckets.empty() || !p.spec.seq_buckets.empty()},
              {"decode_per_group", source.shape().decode},
              {"context", source.shape().context},
              {"prefill_tokens", source.shape().prefill_tokens},
              {"memory_ns", padded.memory_s * 1e9},
              {"compute_ns", padded.compute_s * 1e9},
              {"flops", padded.flops},
              {"kv_bytes_read", padded.kv}}},
            {"ops", out.records.size()},
            {"compute_shapes_simulated", out.compute_shapes_simulated},
            {"wall_time_s", out.wall_seconds},
            {"calibration_s", out.calibration_seconds},
            {"fast_forward",
             {{"on", out.fast_forward},
              {"units", out.fast_forward_stats.units},
              {"repeating_units", out.fast_forward_stats.repeating_units},
              {"units_fast_forwarded", out.fast_forward_stats.units_fast_forwarded},
              {"ops_fast_forwarded", out.fast_forward_stats.ops_fast_forwarded},
              {"compute_fast_forwarded", out.fast_forward_stats.compute_fast_forwarded},
              {"collectives_fast_forwarded", out.fast_forward_stats.collectives_fast_forwarded},
              {"collectives", out.collectives.size()}}},
            {"simulation_s", out.simulation_seconds}};
  });
}

// The size after `s` on the op tier's grid of sizes (docs/models/fidelity.md): 1 to 4, then
// 4 x {1, 1.25, 1.5, 1.75} x 2^k (5, 6, 7, 8, 10, 12, 14, 16, 20, ...).
std::uint64_t next_grid_size(std::uint64_t s) {
  if (s < 4) return s + 1;
  std::uint64_t p = 4;
  while (p * 2 <= s) p *= 2;
  return s + p / 4;
}

// The context lengths of the interpolation cell around `c`, in whole tiles of `tile` keys: the
// attention GEMMs run keys in tiles (and stream them in blocks of tiles), so the time steps up
// between the last context of a tile count and the first of the next one. A cell covers the tile
// counts (a, b] of two neighbouring sizes of the op tier's grid and ends on both sides of such a
// step: it runs from the first context of tile a + 1 (a x tile + 1) to the last of tile b
// (b x tile), and no step at a grid point falls inside it. {c, c} up to one tile or at a cell's
// end.
std::pair<std::uint64_t, std::uint64_t> context_grid(std::uint64_t c, std::uint64_t tile) {
  if (c <= tile) return {c, c};
  const std::uint64_t tiles = (c + tile - 1) / tile;
  std::uint64_t a = 1;
  while (next_grid_size(a) < tiles) a = next_grid_size(a);
  const std::uint64_t lo = a * tile + 1, hi = next_grid_size(a) * tile;
  if (c == lo || c == hi) return {c, c};
  return {lo, hi};
}

// The batch sizes of the interpolation grid around `b`: 1 to 4, then 4 x {1, 1.25, 1.5, 1.75}
// x 2^k (the op tier's grid of sizes: 5, 6, 7, 8, 10, 12, 14, 16, 20, ...); {b, b} on a point.
std::pair<std::uint64_t, std::uint64_t> batch_grid(std::uint64_t b) {
  if (b <= 4) return {b, b};
  std::uint64_t lo = 4;
  for (std::uint64_t p = 4;; p *= 2) {
    for (std::uint64_t q : {p, p / 4 * 5, p / 4 * 6, p / 4 * 7}) {
      if (q == b) return {b, b};
      if (q > b) return {lo, q};
      lo = q;
    }
  }
}

// The shape an iteration runs at: what decides its time (its routing comes from the seed).
std::string shape_key(const infer::IterationShape& sh) {
  std::string key = fmt::format("C={} P={} B=", sh.context, sh.prefill_tokens);
  for (auto b : sh.decode) key += fmt::format("{},", b);
  return key;
}

}  // namespace

Json iteration(const ConfigSource& config, const IterationArgs& a) {
  if (a.capacity_only) {
    const Prepared p = prepare(config.load(), a);
    return {{"model", p.spec.model.name},
            {"layout", p.spec.layout.text()},
            {"rack", p.rack},
            {"chip", p.chip},
            {"ranks", p.spec.layout.ranks()},
            {"ranks_per_chip", p.ranks_per_chip},
            {"weights_dtype", to_string(p.spec.dtypes.weights)},
            {"kv_dtype", to_string(p.spec.dtypes.kv)},
            {"capacity", capacity_json(p.capacity)}};
  }
  if (a.decode_steps == 0) return measure(config, prepare(config.load(), a), a);
  if (a.prefill_tokens > 0) {
    throw InputError("--decode-steps: a decode run has no prefill chunk (--prefill-tokens 0)");
  }
  if (a.interpolate && !a.seq_buckets.empty()) {
    throw InputError("--interpolate: sequence buckets already fix the shapes (--seq-buckets)");
  }
  // A decode run: `decode_steps` iterations of the batch, the context growing by one token each.
  // Each distinct shape is simulated once (its own child) and reused for the steps that run at
  // it; with sequence buckets most steps share their bucket's shape. With --interpolate a step
  // inside a cell of the context grid (context_grid) is timed on the line between its ends.
  IterationArgs last = a;
  last.context = a.context + a.decode_steps - 1;
  // The last step's KV must fit too.
  const std::uint64_t tile = prepare(config.load(), last).key_tile;
  std::map<std::string, Json> simulated;
  std::map<std::pair<std::uint64_t, std::uint64_t>, double> by_shape;  // (batch, context) known
  Json first;
  auto time_at = [&](std::uint64_t batch, std::uint64_t context) {
    if (const auto known = by_shape.find({batch, context}); known != by_shape.end()) {
      return known->second;
    }
    IterationArgs step = a;
    step.batch = batch;
    step.context = context;
    const Prepared p = prepare(config.load(), step);
    const std::string key = shape_key(infer::iteration_shape(p.spec));
    auto it = simulated.find(key);
    if (it == simulated.end()) it = simulated.emplace(key, measure(config, p, step)).first;
    if (first.is_null()) first = it->second;
    return by_shape[{batch, context}] = it->second["time_ns"].get<double>();
  };
  // With --interpolate, bilinear between the grid's batch sizes and context lengths around the
  // step (a grid point in either is exact in it).
  // Plain variables, not structured bindings: Clang 14 (the asan preset) cannot capture those.
  const std::pair<std::uint64_t, std::uint64_t> bgrid =
      a.interpolate ? batch_grid(a.batch) : std::pair{a.batch, a.batch};
  const std::uint64_t blo = bgrid.first, bhi = bgrid.second;
  auto timed = [&](std::uint64_t context) {
    const std::pair<std::uint64_t, std::uint64_t> cgrid =
        a.interpolate ? context_grid(context, tile) : std::pair{context, context};
    const std::uint64_t lo = cgrid.first, hi = cgrid.second;
    auto at_batch = [&](std::uint64_t b) {
      if (lo == hi) return time_at(b, context);
      const double tlo = time_at(b, lo), thi = time_at(b, hi);
      return tlo + (thi - tlo) * double(context - lo) / double(hi - lo);
    };
    if (blo == bhi) return at_batch(a.batch);
    const double tlo = at_batch(blo), thi = at_batch(bhi);
    return tlo + (thi - tlo) * double(a.batch - blo) / double(bhi - blo);
  };
  double total_ns = 0;
  for (std::uint64_t i = 0; i < a.decode_steps; ++i) total_ns += timed(a.context + i);
  const double steps = double(a.decode_steps);
  const std::size_t shapes = simulated.size();
  first["decode_run"] = {
      {"steps", a.decode_steps},
      {"interpolated", a.interpolate},
      {"batch_grid", {blo, bhi}},
      {"shapes_simulated", shapes},
      {"reuse_rate", 1.0 - double(shapes) / steps},
      {"total_time_ns", total_ns},
      {"mean_iteration_ns", total_ns / steps},
      {"tokens_per_s", total_ns > 0 ? double(a.batch) * steps / (total_ns * 1e-9) : 0}};
  if (a.interpolate && a.held_back > 0) {
    // Steps off the grid, evenly spread, simulated exactly against their interpolated time.
    Json checks = Json::array();
    double worst = 0;
    for (std::uint64_t k = 0; k < a.held_back; ++k) {
      std::uint64_t c = a.context + (a.decode_steps - 1) * (2 * k + 1) / (2 * a.held_back);
      const auto [lo, hi] = context_grid(c, tile);
      if (lo == hi && blo == bhi) continue;  // on the grid: nothing interpolated
      const double interp = timed(c);
      IterationArgs step = a;
      step.context = c;
      const double exact = measure(config, prepare(config.load(), step), step)["time_ns"];
      const double err = (interp - exact) / exact;
      worst = std::max(worst, std::abs(err));
      checks.push_back({{"context", c}, {"grid", {lo, hi}}, {"batch", a.batch},
                        {"batch_grid", {blo, bhi}}, {"exact_ns", exact},
                        {"interpolated_ns", interp}, {"error", err}});
    }
    first["decode_run"]["held_back"] = checks;
    first["decode_run"]["max_abs_error"] = worst;
  }
  return first;
}

}  // namespace trnsim::bench
