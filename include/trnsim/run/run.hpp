// SPDX-License-Identifier: MIT
// `trnsim run`: one whole-rack simulation of a workload. This layer resolves and builds the rack,
// runs the replay and hands what it measured to the report layer (trnsim/report/report.hpp).
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/block.hpp"
#include "common/network.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {


// What one run measured, before any of it is formatted.
struct RunData {
  const config::Config* config = nullptr;  // as loaded (the chip's peaks, names)
  const trace::Workload* workload = nullptr;
  std::size_t chips = 0;                    // of the rack
  std::string memory_model, network_model, compute_model;  // registry names
  std::string fidelity;  // /sim/fidelity as it applied: "fast" | "detailed"
  sc_core::sc_time end;                     // the step's makespan
  std::vector<replay::OpRecord> records;
  std::vector<replay::CollectiveRecord> collectives;
  std::vector<model::BlockStats> stats;     // every block's statistics, by hierarchical name
  model::EnergyReport energy;
  model::NetworkTotals network;
  std::vector<double> transfer_latencies, packet_latencies;  // seconds, one per transfer
  double hbm_bytes = 0;
  std::vector<std::string> notes;           // substitutions the rack made (dtypes)
  // The op-level compute model (compute_model "op"): distinct ops simulated on the tile model
  // before the run, and the ops the chips replayed from them.
  int compute_shapes_simulated = 0;
  std::uint64_t compute_ops = 0;
  // Host figures: not part of any report file (they would break byte-identical reports).
  double wall_seconds = 0;        // calibration + elaboration + simulation
  double calibration_seconds = 0;  // the op-level model's calibration (child processes)
  double simulation_seconds = 0;  // sc_start() alone
  std::uint64_t delta_cycles = 0;
  std::uint64_t activations = 0;  // model process activations (common/activity.hpp)
  std::map<std::string, std::uint64_t> activations_by_kind;
};

// Resolves the rack of `cfg`, builds its chips and network from the registry, replays `workload`
// on it and collects what it measured. SystemC allows one elaboration per process: call this
// once per process. `workload` and `cfg` must outlive the result.
// Throws InputError for configs, topologies and traces that cannot run (and for a replay that
// deadlocks), InternalError for broken invariants.
RunData run_workload(const config::LoadedConfig& cfg, const trace::Workload& workload);

// The chip of each of `ranks` ranks under /replay/placement on a rack of `chips` chips.
// Throws ConfigError for a bad placement file or LNC, TraceError when the ranks do not fit.
std::vector<int> place_ranks(const config::LoadedConfig& cfg, int ranks, std::size_t chips);
// A placement file {"chips": [chip of rank 0, ...]} (errors name the file and pointer).
std::vector<int> read_placement(const std::string& file, const std::string& config_path,
                                int ranks, std::size_t chips);

// Chips of the rack of `cfg` (builds and validates its topology; no simulation).
std::size_t rack_chip_count(const config::LoadedConfig& cfg);

}  // namespace trnsim::run
