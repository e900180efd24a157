// SPDX-License-Identifier: MIT
// `trnsim run`: one whole-rack simulation of a workload. This layer resolves and builds the rack,
// runs the replay and hands what it measured to the report layer (trnsim/report/report.hpp).
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/block.hpp"
#include "common/network.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/resolve/peaks.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

// Messages sent together as the report needs them: latency by tier. `pieces` messages (a send,
// or the pieces one collective step sends to one peer at once): the flow network carries them
// as one transfer, the packet network as one per piece; their latency is from their issue to
// the arrival of the last of them at either (Rack::record), each piece one sample of it.
struct TransferSample {
  int src = 0, dst = 0;
  std::uint64_t bytes = 0, packets = 0;
  std::uint32_t pieces = 1;
  double latency_s = 0;  // issue to completion at the destination
};

// One packet delivered by the packet-level fabric: the time it spent on links, in switches and
// relaying chips (its unloaded latency, without serialisation, which the fabric does not stamp
// per packet) and waiting for busy outputs and credits.
struct PacketSample {
  int src = 0, dst = 0;
  float hops_s = 0, queueing_s = 0;
};

// Cumulative figures at one instant of the step, for power and bandwidth over time.
struct Sample {
  double t_s = 0;
  double used_chips_dynamic_j = 0;     // the chips of rank_to_chip
  double fabric_dynamic_j = 0;
  double hbm_bytes = 0;                // all chips
  double fabric_wire_bytes = 0;        // over all link directions
  std::vector<float> link_busy_s;      // per RunData::link_names entry: busy time so far
};

// At most this many samples are kept: when the budget is reached every other one is dropped and
// the interval doubles (the figures are cumulative, so nothing is lost but resolution).
inline constexpr std::size_t kMaxSamples = 256;
// Between those samples, the peak power's window (/sim/peak_power_window) is sampled at op and
// transfer ends at least this fraction of it apart: energy taken as linear between samples
// misplaces at most the work of one such spacing at each end of the window.
inline constexpr double kPeakSamplesPerWindow = 16;

// What one run measured, before any of it is formatted.
struct RunData {
  const config::Config* config = nullptr;  // as loaded (names)
  resolve::ChipPeaks peaks;                 // of the plan's chip: what fractions of peak divide by
  const trace::Workload* workload = nullptr;  // as replayed (a cluster's: its levels split)
  // A cluster (/cluster): the workload it replayed (held here), its UltraServers, how many of
  // them were simulated (1 when folded: each simulated rank stands for all its replicas), and
  // the tiers of its scale-out network.
  std::shared_ptr<const void> cluster;
  int cluster_ultraservers = 0, cluster_simulated_ultraservers = 0, cluster_tiers = 0;
  std::size_t chips = 0;                    // of the rack
  std::size_t chip_models_built = 0;        // of them, elaborated as models (Rack's `hosted`)
  std::string memory_model, network_model, compute_model;  // registry names
  bool compute_calibrated = false;  // the compute model replays profiles calibrated before the run
  std::string fidelity;  // /sim/fidelity as it applied: "fast" | "detailed"
  // The network model has packets (the registry gives it a packet probe: the packet fabric of
  // the detailed tier): packet latency and credit stalls exist only then.
  bool network_has_packets = false;
  bool fast_forward = false;                  // /sim/fast_forward as it applied
  replay::FastForwardStats fast_forward_stats;
  bool fast_forward_charges_links = false;    // the network charged the skipped transfers
  sc_core::sc_time end;                     // the step's makespan
  std::vector<replay::OpRecord> records;
  std::vector<replay::CollectiveRecord> collectives;
  std::vector<model::BlockStats> stats;     // every block's statistics, by hierarchical name
  model::EnergyReport energy;
  model::NetworkTotals network;
  std::vector<double> transfer_latencies, packet_latencies;  // seconds, one per transfer
  double hbm_bytes = 0;
  std::vector<std::string> notes;           // substitutions the rack made (dtypes)
  // A calibrated compute model (the op tier): distinct ops simulated on the tile model before
  // the run, and the ops the chips replayed from them.
  int compute_shapes_simulated = 0;
  std::uint64_t compute_ops = 0;
  // Fast-forward inside ops (tile compute): the share simulated (1: every tile) and the ops of
  // which only the head was simulated.
  double op_head = 1;
  std::uint64_t compute_ops_extrapolated = 0;
  std::vector<TransferSample> transfers;    // in completion order
  // Messages (pieces) between distinct chips that fast-forward charged to the links instead of
  // simulating (replay::FastForward): counted as messages, with no latency.
  std::uint64_t messages_fast_forwarded = 0;
  std::vector<PacketSample> packets;        // in delivery order (packet-level fabric only)
  std::vector<int> rank_to_chip;            // chip of each rank
  // Processes with a stack of their own alive at once: op processes of the replay (at most
  // 4,096) and helper threads of the machine (0: the rack starts transfers and reductions
  // without one).
  std::size_t peak_op_processes = 0, peak_helper_processes = 0;
  // The tile chips' threads that run core programs (model::Chip::workers; 0 with op-level
  // compute): over the rack, the most on one core, and the programs that waited for one
  // (/sim/core_workers).
  std::size_t core_workers = 0, most_core_workers = 0;
  std::uint64_t programs_waited_for_workers = 0;
  int first_tier_chips = 0;                 // chips of a server (0: no such tier)
  std::vector<model::EnergyReport> chip_energy;  // per chip, over the step
  model::EnergyReport fabric_energy;        // links and switches
  std::vector<Sample> samples;              // at 0, at op or transfer ends >= sample_interval_s apart, at the end
  std::vector<std::string> link_names;      // link directions sampled (block names)
  double sample_interval_s = 0;             // the spacing reached (it doubles as samples are merged)
  // The peak power's window (/sim/peak_power_window), the length it was over (the window, or
  // the samples' span when shorter) and the most dynamic power of the used chips and the fabric
  // over that length (run::PeakWindow).
  double peak_power_window_s = 0, peak_power_length_s = 0, peak_dynamic_w = 0;
  double fabric_capacity_bytes_per_s = 0;   // all link directions together
  // What bounds the peak power: a chip's TDP, and the fabric's most dynamic power (every link
  // direction at its bandwidth, priced by the link and the node it enters).
  double chip_tdp_w = 0;
  double fabric_max_dynamic_w = 0;
  // Host figures: not part of any report file (they would break byte-identical reports).
  double wall_seconds = 0;        // calibration + elaboration + simulation
  double calibration_seconds = 0;  // the op-level model's calibration (child processes)
  // The flow network's calibration from the packet fabric (rack.fabric.flow_calibration
  // packet; run/flow_calibration.hpp): what was calibrated, from what, the efficiencies; null
  // when the run has none. Where it came from and what it cost, for host.json.
  nlohmann::json flow_calibration;
  std::string flow_calibration_from, flow_calibration_file;
  double flow_calibration_seconds = 0;
  // Where the calibration's profiles came from: "simulated" (some or all by tile-model children)
  // or "cache" (all from the op profile store, docs/performance.md); "" without a calibration. The key is the
  // entry's (identical whether it was found or written), "" with the cache off.
  std::string calibration_from;
  std::string calibration_cache_key, calibration_cache_file;
  // Of its distinct ops: how many were simulated, how many came from the op profile store.
  std::size_t calibration_ops_simulated = 0, calibration_ops_from_cache = 0;
  double simulation_seconds = 0;  // sc_start() alone
  std::uint64_t delta_cycles = 0;
  std::uint64_t activations = 0;  // model process activations (common/activity.hpp)
  std::map<std::string, std::uint64_t> activations_by_kind;
};

// How far a run is, for a progress line (called from the simulation, at most every few
// hundred simulated microseconds; it must not wait).
struct Progress {
  double simulated_s = 0;
  std::size_t ops_done = 0, ops_total = 0;
  double wall_s = 0;  // since the simulation started
};
using ProgressFn = std::function<void(const Progress&)>;

// Resolves the rack of `cfg`, builds its chips and network from the registry, replays `workload`
// on it and collects what it measured: a run::Simulation (trnsim/run/simulation.hpp) of the
// trace replay driver. SystemC allows one elaboration per process: call this
// once per process. `workload` and `cfg` must outlive the result.
// Throws InputError for configs, topologies and traces that cannot run (and for a replay that
// deadlocks), InternalError for broken invariants.
// `purpose` is the resolve step's (resolve::plan): a run, or the collective benchmark's rack.
// `run --estimate`: the estimate a run of `workload` would check (run/estimate.hpp), from the
// resolved plan, without calibrating, building or simulating anything; and the lines that
// show it, with the budgets and an expected wall time.
struct EstimateReport {
  double events = 0, memory_bytes = 0, end_s = 0;
  double memory_budget = 0, work_budget = 0;
  // Expected wall time: the events at kEstimatedEventsPerSecondFast and ...Slow (a guide, not a
  // bound: the rate varies with the workload and the machine).
  double wall_s_short = 0, wall_s = 0;
  bool fits = true;  // within both budgets: the run would start
  std::string text;
};
EstimateReport estimate_workload(const config::LoadedConfig& cfg, const trace::Workload& workload,
                                 resolve::Purpose purpose = resolve::Purpose::run);

// `sweep --estimate`: runs in a pool of `jobs` processes (a sweep's points), each with its
// estimate, started in order, each as soon as a worker is free. The expected wall is that
// schedule's end (at each end of the runs' ranges: the sum of their walls at one job), the
// memory peak the `jobs` largest runs at once (an upper bound: any `jobs` may overlap).
struct PoolEstimate {
  int jobs = 1;
  double events = 0;                    // all runs together
  double cpu_s_short = 0, cpu_s = 0;    // the runs' expected walls, summed
  double wall_s_short = 0, wall_s = 0;  // the pool's
  double memory_peak_bytes = 0;
  double memory_budget = 0;             // the largest of the runs' /sim/memory_budget
  std::size_t beyond_budgets = 0;       // runs that would be refused
};
PoolEstimate estimate_pool(const std::vector<EstimateReport>& runs, int jobs);

// The calibration cache (docs/performance.md#calibration-cache): off unless the caller turns it
// on; `trnsim run` does, unless --no-cache or TRNSIM_NO_CACHE.
inline constexpr std::uint64_t kDefaultCacheBytes = std::uint64_t(64) << 20;
struct CacheSettings {
  bool enabled = false;
  std::string dir;  // entries in <dir>/calibration/
  std::uint64_t max_bytes = kDefaultCacheBytes;  // least recently used entries evicted beyond it
};
// On unless `no_cache` or TRNSIM_NO_CACHE is set (non-empty, not "0"); in TRNSIM_CACHE_DIR, else
// $XDG_CACHE_HOME/trnsim, else $HOME/.cache/trnsim (neither: off).
CacheSettings cache_settings_from_env(bool no_cache);

// `rack`: the rack the resolve step already gave for `cfg` (Simulation::set_rack_plan; a run
// only), else it is resolved here.
RunData run_workload(const config::LoadedConfig& cfg, const trace::Workload& workload,
                     const ProgressFn& progress = {},
                     resolve::Purpose purpose = resolve::Purpose::run,
                     const CacheSettings& cache = {},
                     std::optional<resolve::RackPlan> rack = std::nullopt);

}  // namespace trnsim::run
