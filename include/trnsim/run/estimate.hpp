// SPDX-License-Identifier: MIT
// What a run will cost, estimated from its inputs before anything is built: the memory of the
// replay's per-op state, collective schedules and statistics, the simulation events, and a lower
// bound of the step's end. Cheap (one pass over the ops, no planning) and conservative: each
// figure is an upper bound of what the run takes (the end time a lower bound), so a run that
// would exhaust memory, run for days or overflow the kernel's clock is refused before it starts.
// docs/configuration.md §6.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::registry {
struct Implementation;
}

namespace trnsim::run {

// Bytes counted per unit: what each costs in peak RSS, measured as the difference of two runs
// that differ in that unit only (tools/estimate_terms.py; figures in docs/configuration.md §6),
// rounded up.
// The binary, its configuration, the kernel and the report writer, without the rack: measured
// 17,012 kB (fast) and 21,572 kB (detailed) for one delay op on the 16-chip trn2 instance, less
// the rack's term below (0.93 MB, 6.65 MB): 16.49 MB and 15.44 MB.
inline constexpr double kFixedBytes = 16 * 1024 * 1024;
// An op with its replay state, record and report row (with one dependency): measured 2,566 B
// (delays) and 2,748 B (named GEMMs) on one rank, 616 B on 16 ranks alike, 2,780 B added to the
// one rank of 16 that ends last, 787 B to one that ends first: an op costs about 480 B (delays;
// 662 B named GEMMs), and each op of the report's critical path (the slowest rank's chain of
// dependent ops) 2,300 B more, at most the longest chain of any rank (docs/configuration.md §6).
inline constexpr double kBytesPerOp = 768;
inline constexpr double kBytesPerCriticalPathOp = 2560;
inline constexpr double kBytesPerDependency = 8;  // measured 7.0 B
// A collective piece or send: measured 5.6 B and 12.3 B (the same pair of runs twice, flow
// network); the pieces are not kept, what grows is the collectives' statistics.
inline constexpr double kBytesPerMessage = 16;
// A packet on the packet network: measured 24 B (sends) and less than RSS's noise of 0.25 MB
// (7,168 packets) when measured again.
inline constexpr double kBytesPerPacket = 32;
// The built rack's models, per chip and per link of its graph, by the network that runs it
// (measured: peak RSS of one trace on tori of two sizes, docs/configuration.md §6).
// A chip on the flow network: measured 16,812 B between 1,024 and 4,096 chips, 20,216 B between
// 4,096 and 10,000 (64 x 64 -> 100 x 100 torus: 258,680 -> 608,496 kB, less 2 links a chip).
inline constexpr double kRackBytesPerChipFlow = 20 * 1024;
inline constexpr double kRackBytesPerLinkFlow = 20 * 1024;  // measured 20,228 B
inline constexpr double kRackBytesPerChipPacket = 368 * 1024;  // measured 376,539 B
inline constexpr double kRackBytesPerLinkPacket = 19 * 1024;  // measured 18,872 B
// Each live op process: SystemC maps its 256 KiB stack lazily, so only the pages its calls touch
// count, with the process's own objects: measured 3,348 B (delays, fast), 3,634 B (delays,
// detailed), 3,314 B (GEMMs, fast).
inline constexpr double kBytesPerOpProcess = 4 * 1024;
// A compute op running on the tile model, beyond its op process and its program: the chip's
// state of a running op (measured 12,973 B: 1,024 elementwise ops of 3 instructions at once).
inline constexpr double kBytesPerRunningTileOp = 16 * 1024;
// A tile-model program, per instruction (model::lowered_instructions()): measured 203 B, one
// GEMM of 8,848 and one of 35,100 instructions.
inline constexpr double kProgramBytesPerInstruction = 256;
// The microbenchmarks' allowances (bench hbm, bench traffic), not measured as the run's are: 64
// KiB of each requester thread's stack, 256 B per message.
inline constexpr double kStackBytesTouched = 64 * 1024;
inline constexpr double kBenchBytesPerMessage = 256;
// Simulation events (process activations) counted per unit.
inline constexpr double kEventsPerOp = 16;
// Flow network: start, rate changes, end of each data message and handshake; a step's pieces
// go as one flow (measured 0.015 activations per piece added), so pieces are not counted.
inline constexpr double kEventsPerMessage = 16;
inline constexpr double kEventsPerPacketHop = 4;     // packet network: arrival, wake-ups (bound)
inline constexpr double kEventsPerInstruction = 4;   // tile compute model
inline constexpr double kEventsPerDmaPacket = 2;
// A tile-model op's program (model::lowered_instructions()) is built whole when the op starts
// and kept to its end; the replay runs at most this many ops of a rank at once (its live op
// processes), and a rank is taken to hold the programs of its largest compute ops, as many as
// the most compute ops at one depth of its dependency graph (not more than this).
inline constexpr std::size_t kLiveOpsPerRank = 16;
// /sim/work_budget when it is 0: about a day of simulation at the kernel's usual rate.
inline constexpr double kDefaultWorkBudget = 1e12;
// The event rate that makes it a day.
inline constexpr double kEventsPerWallSecond = kDefaultWorkBudget / 86400;
// Estimated events per second of a run's CPU time, measured (docs/configuration.md section 6,
// at 9b2f34b on the 2-core machine): 1.6e6 on the default step at the fast fidelity, whose flow
// network wakes far less often than its messages' bound, to 8.7e6 on the shared Mixtral-like
// trace at the detailed one. `run --estimate` gives the run's time as the range between them.
inline constexpr double kEstimatedEventsPerSecondSlow = 1.6e6;
inline constexpr double kEstimatedEventsPerSecondFast = 8.7e6;

struct WorkEstimate {
  std::uint64_t ops = 0, dependencies = 0;
  std::uint64_t longest_chain = 0;  // the most ops of one rank that depend on one another
  std::uint64_t messages = 0;  // collective pieces and sends, upper bound
  double packets = 0;          // on the packet fabric (0 on the flow network)
  // Op processes alive at once: per rank its ops less its longest chain's but one, within the
  // replay's bound (4,096 to 24,576).
  std::uint64_t live_processes = 0;
  double instructions = 0;          // tile-model instructions the run's ops lower to
  std::uint64_t calibration_shapes = 0;  // distinct compute ops calibrated on the tile model
  double calibration_instructions = 0;   // what they lower to, all together
  std::string largest_op;                // the op with the most instructions (its rank and name)
  double largest_op_instructions = 0;
  // Every tile of every op is simulated where fast-forward would simulate each op's head only
  // (a tile chip that times op heads, /sim/fast_forward off): the refusal says so.
  bool whole_ops = false;
  double fixed_bytes = 0;  // the binary, its configuration and report writer (kFixedBytes)
  double op_bytes = 0, message_bytes = 0, packet_bytes = 0, process_bytes = 0;
  std::uint64_t running_tile_ops = 0;  // compute ops held on the tile model at once (bound)
  double program_bytes = 0;  // tile-model programs alive at once (run or calibration)
  double rack_bytes = 0;     // the rack's models: per chip and per link of its graph
  std::uint64_t chips = 0, links = 0;  // of the rack's graph
  double events = 0;
  double end_s = 0;    // lower bound of the step's end: the longest chain of one rank
  int end_rank = 0;    // whose chain that is
  double memory_bytes() const {
    return fixed_bytes + op_bytes + message_bytes + packet_bytes + process_bytes + program_bytes +
           rack_bytes;
  }
};

// What the models of a plan cost in events, from their registry entries' capabilities.
struct EventUnits {
  bool per_packet = false;       // the network: one event per packet and hop (else per message)
  bool per_instruction = false;  // compute: per engine instruction (else per op)
  bool calibrates = false;       // each distinct compute op is first run on the tile model
  bool op_heads = false;         // ... and its head (the compute model times op heads)
};

// The units of a plan whose network and compute are `network` and `compute`.
EventUnits event_units(const registry::Implementation& network,
                       const registry::Implementation& compute, const resolve::RackPlan& plan);

// The estimate of replaying `w` on `plan` with `replay`, its models costing `units`.
WorkEstimate estimate_work(const trace::Workload& w, const resolve::RackPlan& plan,
                           const config::ReplayParams& replay, const EventUnits& units);
// The same with the units of the built-in registry's implementations the plan names.
WorkEstimate estimate_work(const trace::Workload& w, const resolve::RackPlan& plan,
                           const config::ReplayParams& replay);

// Throws TraceError naming the workload `what`, the figure exceeded and the setting that bounds
// it (/sim/memory_budget, /sim/work_budget, or the kernel's time range) when `e` does not fit.
// Where the tile model's programs or instructions are most of it, the message names the largest
// op and, where `e.whole_ops`, /sim/fast_forward, which simulates each op's head only.
void check_estimate(const WorkEstimate& e, const config::SimParams& sim, const std::string& what);

// The check of a command that is not a trace replay (a microbenchmark, a topology): throws
// InputError "`what`: needs about ... (`detail`), more than the ... budget ...; `change`, or
// raise it with --set sim....=" when `events` or `bytes` exceed /sim/work_budget or
// /sim/memory_budget.
void check_budgets(double events, double bytes, const config::SimParams& sim,
                   const std::string& what, const std::string& detail, const std::string& change);

// /sim/work_budget in events, kDefaultWorkBudget when it is 0.
double work_budget(const config::SimParams& sim);

}  // namespace trnsim::run
