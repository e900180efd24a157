// SPDX-License-Identifier: MIT
// Iteration times of a serving run from the rack models (docs/serving.md): each shape the
// scheduler asks for is an inference iteration (infer::IterationSource) simulated on the rack by
// run::Simulation in a forked child (SystemC elaborates once per process; the calibration and
// `bench iteration` fork the same way), simulated once and cached. `exact`: every distinct shape;
// `grid`: the corners of the shape's cell on a grid of batch, context, prefill tokens and prefill
// context, interpolated multilinearly (the op tier's way with op sizes); the decode context's grid
// is in whole key tiles (context_cell). A shape's cost is kept on disk beside the calibration
// cache (docs/serving.md#shape-cache), so a rerun or another point of a sweep reads it back.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/infer/iteration.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/serve/engine.hpp"
#include "trnsim/serve/shape_cache.hpp"

namespace trnsim::serve {

// The grid's points along one dimension around `v`: {lo, hi} (lo == hi on a point). Points: 0,
// then 1, 2, 3, 4, 6, 8, 12, 16, ... (2^k and 1.5 x 2^k); with `per_octave` 1: 0 to 4, then 2^k.
std::pair<std::uint64_t, std::uint64_t> grid_cell(std::uint64_t v, int per_octave = 2);

// The decode context's cell around `c`, in whole tiles of `tile` keys (the attention GEMMs run keys
// in tiles, /chip/core/tensor/rows, so the time steps up between the last context of a tile count
// and the first of the next; bench iteration --interpolate's context_grid, docs/inference.md). A
// cell covers the tile counts (a, b] of two neighbouring points of grid_cell's grid and ends on
// both sides of such a step: from a x tile + 1 to b x tile. Up to one tile: from 1 to `tile`.
// {c, c} at a cell's end (and for 0 and 1).
std::pair<std::uint64_t, std::uint64_t> context_cell(std::uint64_t c, std::uint64_t tile,
                                                     int per_octave = 2);

// The coarse grid's cell around `v`: points 0, 1, 4, 16, 64, ... (4^k); {v, v} on a point. The
// mixed grid's batch (what a prefill chunk adds to an iteration falls with the decodes beside it,
// slowly) and a chunk's cached context (an iteration's time is close to linear in it).
std::pair<std::uint64_t, std::uint64_t> coarse_cell(std::uint64_t v);

// Grid mode (docs/serving.md#method): the grid shapes whose costs, weighted, time `shape` (weights
// sum to 1). A pure decode: the corners of its cell of batch (grid_cell) and context
// (context_cell at one point per octave, keys in tiles of `tile`); a pure prefill: of its chunk
// in whole row tiles (context_cell) and cached context (coarse_cell). A mixed one (decodes and a
// chunk): its pure decode; plus what a chunk without cached context adds to a decode of its
// batch, on the mixed grid (batch on coarse_cell; group 0's rows, ceil(batch / dp) decodes and
// the chunk, in whole row tiles, each anchor batch's chunk the rows less its own group-0 decodes;
// at the anchor context of one tile: the mixed shape less the pure decode of the same batch
// there, weight -1); plus what the cached context adds to the chunk, on the pure prefill grid
// (the prefill after it less the prefill after none). At most 4 + 6 + 6 shapes.
std::vector<std::pair<Shape, double>> grid_terms(const Shape& shape, std::uint64_t tile,
                                                 int per_octave = 2, std::uint64_t dp = 1);

// Everything a shape's cost is simulated from besides the shape and the build: the rack
// configuration (its fidelity and overrides), the iteration's model, layout, dtypes, runtime
// costs, routing seed and buckets. RackTimer's shape-cache key adds the build; the sweep
// estimate's groups of points that share a grid add the grid's points per octave.
config::Json shape_inputs(const config::LoadedConfig& cfg, const infer::IterationSpec& base);

class RackTimer : public IterationTimer {
 public:
  // `cfg` the rack, `base` the iteration's model, layout, dtypes, runtime costs and seed (its
  // shape fields are replaced per shape). Both must outlive the timer.
  // `cache`: where shape costs are kept on disk, and the op profiles the shapes' calibrations
  // share (disabled: neither kept). `rack`: `cfg`'s rack as the
  // caller resolved it (resolve::plan for a run), copied here rather than resolved again; null:
  // resolved here.
  RackTimer(const config::LoadedConfig& cfg, const infer::IterationSpec& base, TimingMode mode,
            int parallel, int per_octave = 2, const run::CacheSettings& cache = {},
            const resolve::RackPlan* rack = nullptr);
  IterationCost cost(const Shape& shape) override;
  double static_w() const override;
  std::size_t shapes_simulated() const { return simulated_; }
  std::uint64_t lookups() const { return lookups_; }
  double simulation_wall_s() const { return wall_s_; }
  // Every shape simulated, with its cost (for the report).
  const std::map<Shape, IterationCost>& table() const { return cache_; }
  // Of shapes_simulated(), those read from the disk cache instead of simulated in this run.
  std::size_t shapes_from_disk() const { return from_disk_; }
  std::uint64_t key_tile() const { return tile_; }
  // Of the shapes simulated in this run, those a child had simulated ahead of need (grid mode,
  // `parallel` > 1: docs/serving.md#shapes-ahead), and the shapes simulated ahead that the run
  // never used (kept in the disk cache).
  std::size_t shapes_ahead_used() const { return ahead_used_; }
  std::size_t shapes_ahead_unused() const { return ahead_.size(); }
  // Children simulating a shape now (between cost() calls: shapes ahead of need).
  std::size_t shapes_in_flight() const { return children_.size(); }

  // Held-back shapes (grid mode): cost() remembers the distinct shapes it interpolated once
  // this is on; held_back(k) simulates k of them exactly (evenly spread over their order) and
  // gives each one's interpolated and exact time. The held-back shapes stay out of table().
  void remember_lookups(bool on) { remember_ = on; }
  struct HeldBack {
    Shape shape;
    double interpolated_s = 0, exact_s = 0;
  };
  std::vector<HeldBack> held_back(std::size_t k);

 private:
  void simulate(const std::vector<Shape>& shapes);
  // Starts a child simulating `shape` (`wanted`: the run is waiting for it) once the shape is
  // claimed (ShapeClaims); `unclaimed`: without a claim (waited for too long).
  enum class Begun { started, on_disk, busy };
  Begun start(const Shape& shape, bool wanted, bool unclaimed = false);
  // The children that ended: their costs into ahead_ (and the disk cache). A wanted shape's
  // failure is thrown; an unwanted one's dropped.
  void collect(bool block);
  // With children idle, starts grid shapes that iterations near `shape` would need (the next
  // cells of its context, batch and chunk), so that they are ready when the run gets there.
  void look_ahead(const Shape& shape);
  bool known(const Shape& s) const;
  // Costs of `shapes`: from the disk cache where it has them, the rest simulated (and stored).
  std::vector<std::string> cost_lines(const std::vector<Shape>& shapes);
  void load_disk();
  IterationCost interpolate(const Shape& shape);
  const config::LoadedConfig& cfg_;
  // The rack resolved once, for every child (resolving it again in each was its route tables).
  resolve::RackPlan rack_;
  infer::IterationSpec base_;
  TimingMode mode_;
  int parallel_, per_octave_;
  std::uint64_t tile_ = 128;
  std::map<Shape, IterationCost> cache_;
  run::CacheSettings store_;  // also the shape children's op profile store (run/profile_cache.hpp)
  std::string disk_file_;  // the shape costs of this rack, model, layout and build; empty: off
  std::map<Shape, std::string> disk_;
  std::uintmax_t disk_read_ = 0;  // bytes of disk_file_ read into disk_
  std::size_t from_disk_ = 0;
  ShapeClaims claims_;  // the shapes this run is simulating, claimed in the disk cache
  bool remember_ = false;
  std::set<Shape> interpolated_;
  std::map<Shape, double> static_w_;
  // Children: by their ForkPool id, the shape and whether the run waits for it; the shapes in
  // flight; finished costs not yet used (cost lines, as the disk cache's).
  ForkPool pool_;
  std::map<std::uint64_t, std::pair<Shape, bool>> children_;
  std::map<Shape, std::uint64_t> in_flight_;
  std::map<Shape, std::string> ahead_;
  std::size_t ahead_used_ = 0;
  std::vector<Shape> ahead_queue_;  // look_ahead's candidates, next first
  std::array<std::uint64_t, 6> ahead_cell_{};  // the cell they were taken around
  bool missed_ = false;  // a shape the run needed was not in the disk cache: look_ahead() is on
  std::size_t simulated_ = 0;
  std::uint64_t lookups_ = 0;
  double wall_s_ = 0;
};

}  // namespace trnsim::serve
