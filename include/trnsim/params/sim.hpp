// SPDX-License-Identifier: MIT
// Simulation settings (/sim): the fidelity, fast-forward, budgets, the seed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

// How finely the parts whose model the config does not name are simulated (docs/models/fidelity.md).
enum class Fidelity { fast, detailed };
constexpr auto enum_names(Fidelity) {
  return std::array{std::pair{Fidelity::fast, std::string_view("fast")},
                    std::pair{Fidelity::detailed, std::string_view("detailed")}};
}

struct SimParams {
  std::uint64_t seed = 1;
  // Unset: fast for `trnsim run`, detailed for the microbenchmarks (which measure the detailed
  // models). /rack/fabric/model and /chip/compute/model, when set, win over it.
  std::optional<Fidelity> fidelity;
  // Fast-forward of repeated micro-batches (replay::FastForward); unset: on at the fast
  // fidelity, off at the detailed one.
  std::optional<bool> fast_forward;
  double fast_forward_tolerance = 0.02;
  double fast_forward_size_tolerance = 0.10;
  // With fast-forward on and tile compute: the share of each op's repeated work that is simulated
  // (model::op_head()); the rest is timed from the op's calibrated profile. 1: every tile.
  double fast_forward_op_head = 0.0625;
  // Collectives timed from an earlier one of the same shape (replay::WorkSource::
  // collectives_by_shape); unset: as the work source asks (inference iterations: on).
  std::optional<bool> fast_forward_collectives_by_shape;
  int compute_granularity = 1;
  // Threads that run NeuronCore programs in the whole simulation (model::CoreWorkerBudget): each
  // core of the tile compute model may have one, the rest go to cores that run several programs.
  std::uint64_t core_workers = 16384;
  Bytes memory_budget{};  // 0: default_memory_budget() (io.hpp)
  std::uint64_t work_budget = 0;  // simulation events; 0: run::kDefaultWorkBudget
  // The span report.json's peak power is the largest average over (run::PeakWindow): fixed, so
  // that the figure means the same at every fidelity tier and run length.
  Duration peak_power_window = Duration(1e-3);
  template <class V>
  void visit(V& v) {
    v.field("seed", seed, "seed of every random choice of a run");
    v.field("fidelity", fidelity,
            "fast (flow network, op-level compute) or detailed (packet network, tile compute), "
            "for the parts whose model is not set; default: fast for run, detailed for bench");
    v.field("fast_forward", fast_forward,
            "time the compute and communication of repeated micro-batches from earlier ones "
            "once steady (docs/models/fidelity.md); default: on at fast fidelity, off at detailed");
    v.field("fast_forward_tolerance", fast_forward_tolerance,
            "steady: two repetitions in a row within this fraction of each other", InRange{0, 1});
    v.field("fast_forward_size_tolerance", fast_forward_size_tolerance,
            "a micro-batch repeats the previous one when every op's sizes are within this "
            "fraction",
            InRange{0, 1});
    v.field("fast_forward_op_head", fast_forward_op_head,
            "with fast-forward on, the tile compute model simulates this share of each op's "
            "repeated work (batch instances, heads, rows or elements; a minimum each) and times "
            "the rest from the op's calibrated profile; 1 = every tile (docs/models/fidelity.md)",
            Positive{}, InRange{0, 1});
    v.field("fast_forward_collectives_by_shape", fast_forward_collectives_by_shape,
            "with fast-forward on, time a collective from an earlier one of its group and kind "
            "whose bytes are within fast_forward_size_tolerance once two of that shape were "
            "steady; default: as the workload asks (on for inference iterations, off for traces)");
    v.field("compute_granularity", compute_granularity,
            "chip model event granularity: matmuls per instruction and DMA windows per wake-up "
            "(1 = fine; see docs/models/chip.md)",
            AtLeast{1});
    v.field("core_workers", core_workers,
            "most threads that run NeuronCore programs in the whole simulation (each a stack "
            "and two of the kernel's memory mappings): each core of the tile compute model may "
            "have one, and more while they last; a program that finds its core's busy and none "
            "left waits in order for one. At least the cores of a chip, and of all a rack's tile "
            "chips (docs/configuration.md section 6)",
            AtLeast{1});
    v.field("memory_budget", memory_budget,
            "most memory that work estimated from the inputs may take (route tables, per-op "
            "state, collective schedules, statistics); a larger estimate is refused before the "
            "run (0: a quarter of the machine's memory)",
            AtLeast{0});
    v.field("work_budget", work_budget,
            "most simulation events a run's inputs may be estimated to need; a larger estimate is "
            "refused before the run (0: 10^12, about a day of simulation)");
    v.field("peak_power_window", peak_power_window,
            "report.json's peak_power_w is the largest average power of the used chips and the "
            "fabric over any window of this length (the whole step when it is shorter); a "
            "reporting choice, the same at every fidelity tier (docs/report.md)",
            Positive{});
  }
};

}  // namespace trnsim::config
