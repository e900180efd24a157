// SPDX-License-Identifier: MIT
// `trnsim serve --estimate`. The spec, rack, model, layout, replicas and KV capacity are read by
// serve()'s own read_setup (setup.hpp), so the estimate refuses what serve refuses; the
// iterations are the IterationSource serve/timer.cpp simulates, estimated by
// run::estimate_workload as `run --estimate` estimates a trace.
#include "trnsim/serve/estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "trnsim/bench/bench.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/infer/iteration.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/serve/arrivals.hpp"
#include "trnsim/serve/timer.hpp"
#include "setup.hpp"

namespace trnsim::serve {

namespace {

// Grid mode: the most simulated shapes one iteration's time is made of (RackTimer::grid_terms):
// a mixed iteration's 4 decode corners, its chunk's 4 mixed corners and 2 anchor decodes, and
// 6 prefills for its cached context.
constexpr std::uint64_t kMaxTermsPerIteration = 16;

// The grid's points from 0 to the top of the cell that holds `max` (grid_cell's points).
std::uint64_t grid_points_to(std::uint64_t max, int per_octave) {
  const std::uint64_t top = grid_cell(max, per_octave).second;
  std::uint64_t n = 0;
  for (std::uint64_t v = 0; v <= top; v = grid_cell(v + 1, per_octave).second) ++n;
  return n;
}

// The decode context's points from 1 to the top of the cell that holds `max` (context_cell's
// cells: [1, tile], then (a x tile, b x tile] for neighbouring grid points a, b, both ends points).
std::uint64_t context_points_to(std::uint64_t max, std::uint64_t tile, int per_octave) {
  const std::uint64_t top = context_cell(max, tile, per_octave).second;
  std::uint64_t n = 0;
  for (std::uint64_t v = 1; v <= top;) {
    ++n;  // v, the low end of its cell (or 1)
    const std::uint64_t hi = context_cell(v + 1, tile, per_octave).second;
    if (hi > v && hi <= top) ++n;
    v = hi + 1;
  }
  return n;
}

// What a shape's cost is simulated from besides the shape (RackTimer's shape-cache key without
// the build), and the grid's points per octave.
std::string shape_group(const config::LoadedConfig& cfg, const infer::IterationSpec& base,
                        int per_octave) {
  config::Json k = shape_inputs(cfg, base);
  k["grid_per_octave"] = per_octave;
  return k.dump();
}

}  // namespace

std::uint64_t grid_box(const GridReach& r) {
  // The fixed grid of the timer (grid_terms): pure decodes on (batch, context), pure prefills
  // on (chunk, cached context), a mixed iteration's chunk on (mixed batch, chunk) at the
  // anchor context of one key tile, with its pure decode there.
  const int per_octave = r.per_octave;
  const std::uint64_t tile = std::max<std::uint64_t>(1, r.tile), dp = std::max<std::uint64_t>(1, r.dp);
  const double d = double(grid_points_to(r.decode, per_octave) - 1);  // batch 1 and up
  const double c = double(context_points_to(r.context, tile, 1));
  // Chunks (and group 0's rows of a mixed iteration) in whole row tiles, as the context.
  const double p = double(context_points_to(r.prefill, tile, per_octave));
  const double rows = double(context_points_to(r.prefill + (r.decode + dp - 1) / dp, tile, per_octave));
  double pc = 1;  // 0, then the coarse grid's points to the top of prefill_context's cell
  for (std::uint64_t v = 1; v <= coarse_cell(r.prefill_context).second; v *= 4) ++pc;
  const std::uint64_t decode_top = grid_cell(r.decode, per_octave).second;
  const std::uint64_t context_top = context_cell(r.context, tile, 1).second;
  double m = 0, anchors = 0;  // mixed batches; their anchor decodes off the decode grid's box
  for (std::uint64_t b = 1; b <= coarse_cell(r.decode).second; b *= 4) {
    ++m;
    if (b > decode_top || tile > context_top) ++anchors;
  }
  const double box = d * c + p * pc + m * rows + anchors;
  return std::uint64_t(std::min(box, 1e18));
}

ServeEstimate estimate(const ServeOptions& o) {
  const ServeSetup su = read_setup(o);  // every refusal serve() makes
  const ServeSpec& spec = su.spec;
  const config::LoadedConfig& cfg = su.cfg;
  const infer::IterationSpec& it = su.it;

  ServeEstimate e;
  const std::uint64_t count = spec.run.requests + spec.run.warmup_requests;
  const Workload w = make_workload(spec.arrivals, count, o.spec_path);
  const std::vector<Request>& reqs = w.open.empty() ? w.lengths : w.open;
  e.requests = reqs.size();
  double tokens = 0;
  for (const Request& r : reqs) {
    e.input_tokens += double(r.input_tokens);
    e.output_tokens += double(r.output_tokens);
    e.max_input = std::max(e.max_input, r.input_tokens);
    e.max_output = std::max(e.max_output, r.output_tokens);
    tokens += double(r.input_tokens + r.output_tokens);
  }
  const SchedulerParams& sch = spec.scheduler;
  e.iterations_max = std::uint64_t(tokens);
  e.iterations_min = std::max<std::uint64_t>(
      e.max_output, std::uint64_t(std::ceil(tokens / double(sch.token_budget))));

  // The shapes the requests can reach (serve/engine.hpp's Shape): a decode batch of at most
  // max_batch sequences (and requests) at a KV length of at most a whole request, a prefill chunk
  // of at most the token budget (chunked) or a prompt, after at most the rest of its prompt.
  const std::uint64_t decode = std::min<std::uint64_t>(sch.max_batch, e.requests);
  const std::uint64_t context = e.max_input + e.max_output;
  const std::uint64_t prefill = sch.chunked_prefill ? std::min(sch.token_budget, e.max_input) : e.max_input;
  const std::uint64_t prefill_context = sch.chunked_prefill && e.max_input > 0 ? e.max_input - 1 : 0;
  const int per_octave = int(spec.timing.grid_per_octave);
  const bool grid = spec.timing.mode == TimingMode::grid;
  const auto top = [&](std::uint64_t v) { return grid ? grid_cell(v, per_octave).second : v; };
  const std::uint64_t tile = std::max<std::uint64_t>(1, std::uint64_t(su.plan->chip.params.core.tensor.rows));
  // Grid: every dimension at the top of its cell (the mixed grid's batch may be above the decode
  // grid's); a bound on the shapes simulated.
  e.largest_shape = {grid ? std::max(top(decode), coarse_cell(decode).second) : decode,
                     grid ? context_cell(context, tile, 1).second : context,
                     grid ? context_cell(prefill, tile, per_octave).second : prefill,
                     grid ? coarse_cell(prefill_context).second : prefill_context};
  e.smallest_shape = {1, 1, 0, 0};
  if (grid) {
    e.reach = {decode, context, prefill, prefill_context, tile,
               std::uint64_t(std::max(1, it.layout.dp)), per_octave};
    e.grid_box = grid_box(e.reach);
    e.shape_group = shape_group(cfg, it, per_octave);
    e.shapes_max = std::min<std::uint64_t>(e.grid_box, kMaxTermsPerIteration * e.iterations_max);
  } else {
    e.shapes_max = e.iterations_max;
  }
  const auto estimate_shape = [&](const Shape& sh) {
    infer::IterationSpec s = it;
    s.decode_seqs = sh.decode;
    s.context = sh.context;
    s.prefill_tokens = sh.prefill;
    s.prefill_context = sh.prefill_context;
    const infer::IterationSource source(s);
    return run::estimate_workload(cfg, source.workload());
  };
  e.smallest = estimate_shape(e.smallest_shape);
  e.largest = estimate_shape(e.largest_shape);
  e.parallel = int(spec.timing.parallel);
  // The serving process: its requests (the workload's and their records, each output token's gap
  // kept as a float) and its iteration records (up to 2^20), beside the start-up.
  e.parent_bytes = run::kFixedBytes +
                   double(e.requests) * double(sizeof(Request) + sizeof(RequestRecord)) +
                   e.output_tokens * double(sizeof(float)) +
                   double(std::min<std::uint64_t>(e.iterations_max, EngineOptions{}.max_iteration_records)) *
                       double(sizeof(IterationRecord));
  e.memory_bytes = e.parent_bytes + double(e.parallel) * e.largest.memory_bytes;
  e.wall_s_short = e.smallest.wall_s_short;
  // A shape's events at the fast rate: its replay fast-forwards most of them (docs/inference.md
  // #speed), so the slow rate ran about 10 times what a shape took.
  e.wall_s = double(e.shapes_max) * e.largest.wall_s_short / double(e.parallel);

  const auto shape_text = [](const Shape& s) {
    return fmt::format("decode {} at KV {}, prefill {} after {}", s.decode, s.context, s.prefill,
                       s.prefill_context);
  };
  e.text = fmt::format(
      "estimate of serve {}: {} ({}) on {}, {}\n"
      "  requests     {} ({} warm-up): {:.4g} input and {:.4g} output tokens, at most {} and {} "
      "in one\n"
      "  iterations   {} to {} (without preemptions: the longest output or the tokens over the "
      "token budget of {}, to one a token)\n"
      "  shapes       at least 1, at most {} ({}): a bound, not a forecast; a run simulates the "
      "shapes its iterations reach, known only as it runs\n"
      "  per shape    {:.3g} to {:.3g} events, {:.3g} to {:.3g} GB, about {:.3g} to {:.3g} s "
      "(the run estimates of the smallest shape, {}, and the largest, {})\n"
      "  memory       {:.3g} GB at most: the serving process {:.3g} GB and {} iteration children "
      "at once (timing.parallel) of the largest shape\n"
      "  wall time    about {:.3g} s (one smallest shape) to {:.3g} s (every shape of the bound "
      "at the largest's, {} at once): a guide, not a bound; each 100 shapes simulated add about "
      "{:.3g} to {:.3g} s\n"
      "  {}\n",
      spec.name, it.model.name, spec.layout, cfg.config.rack->name,
      spec.disaggregated ? fmt::format("{} prefill and {} decode replicas", su.prefill_replicas,
                                        su.replicas - su.prefill_replicas)
                          : fmt::format("{} replicas", su.replicas),
      e.requests,
      spec.run.warmup_requests, e.input_tokens, e.output_tokens, e.max_input, e.max_output,
      e.iterations_min, e.iterations_max, sch.token_budget, e.shapes_max,
      grid ? fmt::format("grid: {} points of the fixed grid the requests reach, {} an iteration",
                         e.grid_box, kMaxTermsPerIteration)
           : std::string("exact: one an iteration"),
      e.smallest.events, e.largest.events, e.smallest.memory_bytes / 1e9,
      e.largest.memory_bytes / 1e9, e.smallest.wall_s_short, e.largest.wall_s_short,
      shape_text(e.smallest_shape), shape_text(e.largest_shape), e.memory_bytes / 1e9,
      e.parent_bytes / 1e9, e.parallel, e.wall_s_short, e.wall_s, e.parallel,
      100 * e.smallest.wall_s_short / double(e.parallel),
      100 * e.largest.wall_s_short / double(e.parallel),
      e.largest.fits ? "the largest shape within the budgets: each iteration would start"
                     : "the largest shape beyond the budgets (/sim/memory_budget, "
                       "/sim/work_budget): its iteration would be refused");
  return e;
}

}  // namespace trnsim::serve
