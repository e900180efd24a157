// SPDX-License-Identifier: MIT
#include "calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <set>
#include <unordered_set>
#include <nlohmann/json.hpp>

#include "chip/chip.hpp"
#include "common/driver.hpp"
#include "common/activity.hpp"
#include "compute_ops.hpp"
#include "profile_cache.hpp"
#include "trnsim/error.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/log.hpp"
#include "trnsim/registry/registry.hpp"

namespace trnsim::run {

namespace {

using nlohmann::json;
using sc_core::sc_time;

constexpr model::EngineId kEngines[4] = {model::EngineId::tensor, model::EngineId::vector,
                                         model::EngineId::scalar, model::EngineId::gpsimd};

std::int64_t to_ps(const sc_time& t) { return std::llround(t.to_seconds() * 1e12); }

double stat_value(const model::Block& b, const model::StatKey& key) {
  if (const model::Stat* s = b.stats().find(key)) return s->value;
  throw InternalError(fmt::format("{} has no statistic {}", b.name(), key.name));
}

// What the chip counted during one op, from zero: its meters are zeroed before the op
// (model::zero_actions), so each action is a sum over that op's counts alone, the same to the bit
// whichever ops the chip ran before it (test OpCalibration.ProfileDoesNotDependOnItsCompany).
// Bytes (whole numbers) and engine busy time (integer sc_time ticks, per engine of each core)
// are differences that are exact.
struct Counters {
  double read = 0, written = 0;
  std::vector<sc_time> busy;  // per engine, per core
};

Counters counters(model::Chip& chip, const model::Block& memory) {
  Counters c;
  c.read = stat_value(memory, model::MemoryStats::bytes_read);
  c.written = stat_value(memory, model::MemoryStats::bytes_written);
  for (std::size_t e = 0; e < 4; ++e) {
    for (int k = 0; k < chip.cores(); ++k) c.busy.push_back(chip.core(k).engine(kEngines[e]).busy());
  }
  return c;
}

// The chip's actions without its memory's (the op-level model replays the memory's own).
std::map<model::Action, model::ActionMeter> op_actions(model::Chip& chip, const model::Block& memory) {
  auto actions = model::collect_actions(&chip);
  for (const auto& [k, v] : model::collect_actions(&memory)) {
    actions[k].quantity -= v.quantity;
    actions[k].rated_j -= v.rated_j;
  }
  return actions;
}

// One child: the ops of one chunk on one tile chip, one after another.
json calibrate_chunk(const resolve::ChipPlan& plan, const std::vector<model::ComputeOp>& ops) {
  registry::Registry registry;
  registry::register_builtin_models(registry);
  resolve::ChipPlan tile = plan;
  tile.compute_model = registry.calibration_reference().name;
  model::Simulation sim;
  auto chip = registry::make_tile_chip(registry, "calibration", tile);
  const auto* memory = dynamic_cast<const model::Block*>(chip->memory_block());
  if (!memory) throw InternalError("op-level calibration: the chip's memory is not a block");
  const sc_time gap(1, sc_core::SC_US);  // lets the memory's last latencies pass
  json out = json::array();
  model::Driver drv("driver", [&] {
    for (const auto& op : ops) {
      model::OpProfile p;
      chip->hbm_allocator().next = 0;
      model::zero_actions(chip.get());
      const Counters before = counters(*chip, *memory);
      const sc_time t0 = sc_core::sc_time_stamp();
      const auto wall0 = std::chrono::steady_clock::now();
      const std::string key = model::op_key(op);
      const model::OpStats st = chip->execute(op, key);
      p.time_ps = to_ps(sc_core::sc_time_stamp() - t0);
      p.cores_used = st.cores_used;
      p.flops = st.flops;
      p.hbm_bytes = st.hbm_bytes;
      p.instructions = st.instructions;
      p.sbuf_bytes_per_partition = st.sbuf_bytes_per_partition;  // the lowering's footprint
      p.psum_banks = st.psum_banks;
      const Counters after = counters(*chip, *memory);
      p.read_bytes = after.read - before.read;
      p.write_bytes = after.written - before.written;
      for (std::size_t e = 0, i = 0; e < 4; ++e) {
        double busy = 0;
        for (int k = 0; k < chip->cores(); ++k, ++i) busy += (after.busy[i] - before.busy[i]).to_seconds();
        p.engine_busy_s[e] = busy;
      }
      for (const auto& [k, v] : op_actions(*chip, *memory)) {
        if (v.rated_j != 0) p.actions[k].count_priced(v.quantity, v.rated_j);
      }
      // The probe: one slice's requests on the idle memory, as model::OpChip issues them.
      sc_core::wait(gap);
      const model::PieceBytes b = model::slice_bytes(p, 0);
      const auto& hbm = tile.params.hbm;
      const std::uint64_t round = std::uint64_t(hbm.interleave_bytes.si) * std::uint64_t(hbm.stacks);
      const sc_time now = sc_core::sc_time_stamp();
      sc_time done = now;
      if (b.read > 0) done = std::max(done, chip->memory().access({0, b.read, false}));
      if (b.write > 0) {
        const std::uint64_t addr = (b.read + round - 1) / round * round;
        done = std::max(done, chip->memory().access({addr, b.write, true}));
      }
      p.memory_ps = to_ps(done - now);
      sc_core::wait(done - now + gap);
      out.push_back(profile_to_json(p));
      // Which ops a calibration spends its time on (--log-level debug; wall time, not a result).
      logger("calibrate")->debug(
          "{}: {} instructions in {:.1f} ms", key, p.instructions,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count());
    }
  });
  model::run_bounded();
  const auto power = registry::make_power(registry, tile);
  const double static_w =
      model::collect_energy(*power, Duration(1.0), chip.get()).static_.si -
      model::collect_energy(*power, Duration(1.0), memory).static_.si;
  return {{"profiles", out}, {"static_power_w", static_w}};
}

}  // namespace

std::map<std::string, model::OpProfile> calibrate_ops(const resolve::ChipPlan& plan,
                                                      const std::vector<model::ComputeOp>& ops,
                                                      int parallel, double* static_power_w) {
  std::map<std::string, model::ComputeOp> distinct;
  for (const auto& op : ops) distinct.emplace(model::op_key(op), op);
  std::map<std::string, model::OpProfile> out;
  if (distinct.empty()) return out;
  const std::size_t chunks = parallel > 1 ? std::min(kCalibrationChunks, distinct.size()) : 1;
  std::vector<std::vector<model::ComputeOp>> chunk_ops(chunks);
  std::vector<std::vector<std::string>> chunk_keys(chunks);
  std::size_t i = 0;
  for (const auto& [key, op] : distinct) {  // key order: independent of the trace's order
    chunk_ops[i % chunks].push_back(op);
    chunk_keys[i % chunks].push_back(key);
    ++i;
  }
  std::vector<std::function<std::string()>> jobs;
  for (std::size_t c = 0; c < chunks; ++c) {
    jobs.push_back([&plan, &chunk_ops, c] { return calibrate_chunk(plan, chunk_ops[c]).dump(); });
  }
  const std::vector<std::string> results = run_forked(jobs, parallel);
  for (std::size_t c = 0; c < chunks; ++c) {
    const json j = json::parse(results[c]);
    const json& profiles = j.at("profiles");
    for (std::size_t k = 0; k < chunk_keys[c].size(); ++k) {
      out.emplace(chunk_keys[c][k], profile_from_json(profiles.at(k)));
    }
    if (static_power_w && c == 0) *static_power_w = j.at("static_power_w").get<double>();
  }
  return out;
}

std::vector<std::uint64_t> grid_sizes(std::uint64_t max_elements) {
  std::vector<std::uint64_t> g{1, 2, 3};
  for (std::uint64_t p = 4; g.back() < max_elements; p *= 2) {
    for (std::uint64_t q : {p, p / 4 * 5, p / 4 * 6, p / 4 * 7}) {
      if (g.back() < max_elements) g.push_back(q);
    }
  }
  while (g.size() > 1 && g[g.size() - 2] >= max_elements) g.pop_back();
  return g;
}

std::vector<std::uint64_t> grid_points(std::uint64_t unit, std::uint64_t lo, std::uint64_t hi,
                                       std::uint64_t cap) {
  std::vector<std::uint64_t> all;
  const std::uint64_t top = std::max(std::min(hi, cap), unit * 2);
  for (std::uint64_t g : grid_sizes((top + unit - 1) / unit)) all.push_back(g * unit);
  // From the last point at or below `lo` (two points at least); with sizes above the cap, from
  // half the top at least, for the line above it (model::find_profile).
  std::size_t first = 0;
  while (first + 1 < all.size() && all[first + 1] <= lo) ++first;
  first = std::min(first, all.size() - 2);
  if (hi > all.back()) {
    while (first > 0 && all[first] * 2 > all.back()) --first;
  }
  return {all.begin() + std::ptrdiff_t(first), all.end()};
}

namespace {

// A grid key with more distinct sizes than this in the trace is calibrated on a grid of sizes
// instead of at each size (MoE expert GEMMs and activations, whose sizes follow the routing:
// thousands of distinct rows in a realistic step). docs/models/fidelity.md measures the error.
constexpr std::size_t kMaxExactSizes = 8;
// Grids: a GEMM dimension in multiples of the 128 partitions (model::kGemmTile), up to 16,384;
// element counts up to 2^27 (the default step's largest expert activation has 118 M). Above its cap a size is on the line through the last point and the one at half its
// size (the time of a large GEMM or element-wise op grows about linearly in that size: measured
// in fidelity.md).
constexpr std::uint64_t kGemmRowCap = 16384;
constexpr std::uint64_t kElementCap = 1ULL << 27;

}  // namespace

std::shared_ptr<const model::OpTable> calibrate_workload(const resolve::ChipPlan& plan,
                                                         const trace::Workload& w, int parallel,
                                                         bool op_heads) {
  return calibrate_workload(plan, replay::TraceSource(w), parallel, op_heads);
}

// The ops a calibration simulates: each distinct op of the source (and its head), except kinds
// with many sizes, which are simulated at their grid's points instead.
CalibrationSet calibration_set(const resolve::ChipPlan& plan, const replay::WorkSource& source,
                               bool op_heads) {
  CalibrationSet set;
  std::vector<std::string> notes;  // the rack notes the same substitutions when it runs them
  std::vector<model::ComputeOp> ops;
  auto& by_grid = set.by_grid;
  std::size_t& trace_ops = set.trace_ops;
  auto add = [&](const model::ComputeOp& c) {
    ops.push_back(c);
    for (int dim = 0; dim < model::grid_dims(c); ++dim) {
      auto& s = by_grid.try_emplace(model::grid_key(c, dim), CalibrationSet::Sizes{c, dim, {}}).first->second;
      s.sizes.insert(model::grid_size(c, dim));
    }
  };
  std::unordered_set<model::OpFields, model::OpFieldsHash> seen;
  source.calibration_ops([&](int, const trace::Op& op) {
    if (trace::is_compute(op.kind) || op.kind == trace::OpKind::mem_load ||
        op.kind == trace::OpKind::mem_store) {
      if (auto c = to_compute_op(op, plan.params, notes)) {
        ++trace_ops;
        // A repeat adds nothing (its sizes are in, its first occurrence is the one calibrated):
        // skipped before any key is formatted (the default step has 432,240 ops, 109 distinct).
        if (!seen.insert(model::op_fields(*c)).second) return;
        add(*c);
        // A tile chip that fast-forwards inside ops times an op from its head's profile too.
        if (op_heads && plan.op_head < 1) {
          const model::ComputeOp head = model::op_head(*c, plan.op_head, plan.params.cores);
          if (model::op_key(head) != model::op_key(*c)) add(head);
        }
      }
    }
  });
  // Reductions of collectives run on the collective DMA engines (Rack::reduce), not on the
  // compute model; only the source's own ops are calibrated.
  auto& grids = set.grids;
  for (const auto& [key, s] : by_grid) {
    if (s.sizes.size() <= kMaxExactSizes) continue;
    const bool gemm = std::holds_alternative<model::GemmOp>(s.op);
    grids[key] = grid_points(gemm ? model::kGemmTile : 1, *s.sizes.begin(), *s.sizes.rbegin(),
                             gemm ? kGemmRowCap : kElementCap);
  }
  // An op on a grid is found there (the first of its grids, as find_profile looks), unless its
  // size is below the grid's first point: find_profile has nothing to interpolate from there (a
  // GEMM grid starts at one tile of rows, and an expert GEMM of a decode or prefill batch may
  // have fewer), so such an op is calibrated at its own size.
  auto on_grid = [&](const model::ComputeOp& op) {
    for (int dim = 0; dim < model::grid_dims(op); ++dim) {
      const auto g = grids.find(model::grid_key(op, dim));
      if (g == grids.end()) continue;
      return !g->second.empty() && model::grid_size(op, dim) >= g->second.front();
    }
    return false;
  };
  auto& all = set.ops;
  for (const auto& op : ops) {
    if (!on_grid(op)) all.push_back(op);
  }
  for (const auto& [key, pts] : grids) {
    const CalibrationSet::Sizes& s = by_grid.at(key);
    for (std::uint64_t n : pts) all.push_back(model::with_grid_size(s.op, n, s.dim));
  }
  return set;
}

std::shared_ptr<const model::OpTable> calibrate_workload(const resolve::ChipPlan& plan,
                                                         const replay::WorkSource& source,
                                                         int parallel, bool op_heads,
                                                         const CacheSettings* cache,
                                                         CalibrationOrigin* origin) {
  const CalibrationSet set = calibration_set(plan, source, op_heads);
  const auto& all = set.ops;
  const auto& grids = set.grids;
  const auto& by_grid = set.by_grid;
  const std::size_t trace_ops = set.trace_ops;
  auto table = std::make_shared<model::OpTable>();
  std::optional<ProfileCache> store;
  CacheKey pkey;
  CachedCalibration found;
  std::unique_ptr<ProfileCache::Lock> held;  // until the profiles are stored
  std::set<std::string> wanted;
  for (const auto& op : all) wanted.insert(model::op_key(op));
  auto complete = [&] { return found.static_power_w && found.profiles.size() == wanted.size(); };
  if (cache && cache->enabled && !all.empty()) {
    const CacheKey ckey = calibration_key(plan, std::vector<std::string>(wanted.begin(), wanted.end()), op_heads);
    pkey = plan_key(plan, op_heads);
    store.emplace(*cache);
    found = store->get(pkey, wanted);
    if (!complete()) {
      held = store->lock(ckey);  // another worker calibrating these ops: wait for its profiles
      if (held && held->waited) found = store->get(pkey, wanted);
    }
    if (origin) {
      origin->key = ckey.hex;
      origin->file = store->path_of(pkey);
    }
  }
  // Only the ops the store lacks are simulated: each profile is counted from zero for its op
  // (calibrate_chunk), so it does not matter which were simulated here and which elsewhere.
  std::vector<model::ComputeOp> missing;
  for (const auto& op : all) {
    if (!found.profiles.contains(model::op_key(op))) missing.push_back(op);
  }
  // The static power comes with any calibration; with every op stored but not it, one is redone.
  if (missing.empty() && !found.static_power_w && !all.empty()) missing.push_back(all.front());
  std::size_t simulated = 0;
  if (!missing.empty()) {
    double static_w = 0;
    auto got = calibrate_ops(plan, missing, parallel, &static_w);
    simulated = got.size();
    if (store) store->put(pkey, {got, static_w});
    found.static_power_w = static_w;
    for (auto& [k, p] : got) found.profiles.insert_or_assign(k, std::move(p));
  }
  held.reset();
  table->exact = std::move(found.profiles);
  table->static_power_w = found.static_power_w.value_or(0);
  const bool hit = store && simulated == 0 && !all.empty();
  const std::size_t from_store = table->exact.size() - std::min(simulated, table->exact.size());
  if (origin) {
    origin->from_cache = hit;
    origin->ops_simulated = simulated;
    origin->ops_from_cache = from_store;
  }
  table->shapes_simulated = int(table->exact.size());
  for (const auto& [key, pts] : grids) {
    const CalibrationSet::Sizes& s = by_grid.at(key);
    auto& out = table->grids[key];
    for (std::uint64_t n : pts) {
      out.emplace_back(n, table->exact.at(model::op_key(model::with_grid_size(s.op, n, s.dim))));
    }
  }
  // A grid point that is also one of the trace's sizes stays in `exact` and is found there.
  if (hit) {
    logger("run")->info("op-level compute: profiles of {} distinct ops for {} trace ops from the "
                        "op profile store ({}), calibration skipped", table->shapes_simulated,
                        trace_ops, store->path_of(pkey));
  } else {
    logger("run")->info("op-level compute: {} distinct ops for {} trace ops, {} simulated and {} "
                        "from the op profile store, {} of the ops' kinds on a grid of sizes",
                        table->shapes_simulated, trace_ops, simulated, from_store, grids.size());
  }
  return table;
}

}  // namespace trnsim::run
