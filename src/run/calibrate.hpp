// SPDX-License-Identifier: MIT
// The op-level compute model's calibration (docs/models/fidelity.md#compute-tiers): every
// distinct compute op of a run simulated once on the tile model, on a chip of the run's resolved
// plan, before the rack is elaborated. SystemC allows one elaboration per process, so the tile
// chips run in forked children, several ops per child one after another.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "chip/op_profile.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

// Children the ops are spread over when more than one runs at a time (a load spread over
// `parallel` children); with one at a time, every op goes to one child, which elaborates its
// tile chip once. A profile does not depend on which ops share its chip
// (OpCalibration.ProfileDoesNotDependOnItsCompany), so no result depends on the chunking.
inline constexpr std::size_t kCalibrationChunks = 8;
// Children of a run's calibration at a time (the 2-core machine).
inline constexpr int kCalibrationJobs = 2;

// The profile of each op (by model::op_key) on the tile model of `plan` (its compute model is
// ignored), `parallel` children at a time (kCalibrationChunks children in all, or one when
// `parallel` is 1). Each op starts on an idle chip with its HBM allocator reset, so a profile
// depends only on the op and the plan.
std::map<std::string, model::OpProfile> calibrate_ops(const resolve::ChipPlan& plan,
                                                      const std::vector<model::ComputeOp>& ops,
                                                      int parallel, double* static_power_w = nullptr);

// Sizes of a calibration grid: 1, 2, 3, then four per octave (4, 5, 6, 7, 8, 10, 12, 14, 16,
// 20, ...: 2^i x 1, 1.25, 1.5, 1.75), up to the first >= `max_elements`.
std::vector<std::uint64_t> grid_sizes(std::uint64_t max_elements);
// The grid a kind of op is calibrated on when its sizes are many: multiples of `unit` on
// grid_sizes(), from the last point at or below `lo` to the first at or above min(hi, cap), at
// least two points; when hi is above the top point, from half the top point at least.
std::vector<std::uint64_t> grid_points(std::uint64_t unit, std::uint64_t lo, std::uint64_t hi,
                                       std::uint64_t cap);

// What calibrate_workload() simulates: `ops` (each distinct op once, grid kinds at their grid
// points), the grids by grid_key(), the sizes of each grid kind, and the trace's compute ops.
struct CalibrationSet {
  struct Sizes {
    model::ComputeOp op;
    int dim = 0;
    std::set<std::uint64_t> sizes;
  };
  std::vector<model::ComputeOp> ops;
  std::map<std::string, std::vector<std::uint64_t>> grids;
  std::map<std::string, Sizes> by_grid;
  std::size_t trace_ops = 0;
};
CalibrationSet calibration_set(const resolve::ChipPlan& plan, const replay::WorkSource& source,
                               bool op_heads);

// Where calibrate_workload() took its profiles from.
struct CalibrationOrigin {
  bool from_cache = false;  // every profile from the op profile store, none simulated
  std::string key, file;  // the op set's hash (calibration_key()) and the store file ("" without)
  std::size_t ops_simulated = 0, ops_from_cache = 0;
};

// The table the op-level chips of a run of `source` on `plan` replay from: the exact profile of
// each distinct compute op the source declares (WorkSource::calibration_ops(); a trace: its
// ops), except for kinds of op with many sizes (grid_key()), which are calibrated on
// grid_points() and interpolated. `op_heads`: the plan's compute model times op heads (registry
// capability times_op_heads), so each op's head (plan.op_head < 1) is measured too. With an
// enabled `cache`, the profiles the op profile store of the same plan and build holds are taken
// from it, only the others are simulated, and those are stored (profile_cache.hpp); `origin`
// says how many of each. The table is the same to the bit either way.
std::shared_ptr<const model::OpTable> calibrate_workload(const resolve::ChipPlan& plan,
                                                         const replay::WorkSource& source,
                                                         int parallel, bool op_heads,
                                                         const CacheSettings* cache = nullptr,
                                                         CalibrationOrigin* origin = nullptr);
// The same for a trace (a replay::TraceSource of `w`).
std::shared_ptr<const model::OpTable> calibrate_workload(const resolve::ChipPlan& plan,
                                                         const trace::Workload& w, int parallel,
                                                         bool op_heads);

}  // namespace trnsim::run
