// SPDX-License-Identifier: MIT
// What models are built from: the plans resolve::plan() derives from a loaded config
// (resolve.hpp). Parameters and derived values only, no JSON and no config loading, so that model
// headers can take a plan without seeing how it was read.
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/params/chip.hpp"
#include "trnsim/params/fabric.hpp"
#include "trnsim/params/replay.hpp"
#include "trnsim/params/sim.hpp"
#include "trnsim/resolve/hbm_geometry.hpp"
#include "trnsim/topology/cluster.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::resolve {

// Limits of the models' fixed-size structures, checked here so that the models need not.
inline constexpr int kMaxHbmStacks = 16;       // per chip (per-stack byte split of a request)
inline constexpr int kMaxDmaQueues = 64;       // per DMA engine (a 64-bit ready mask)

// What a loaded config is resolved for. Each command names its purpose; the purpose decides which
// parts the plan holds, whether the /replay overrides apply, and the fidelity that fills the model
// names the config leaves unset (default_fidelity).
enum class Purpose {
  config,            // `trnsim config`, sweep points, claims: every part every other purpose checks
  run,               // `trnsim run`: the rack with the /replay overrides; fast by default
  bench_chip,        // bench gemm, dma, hbm: the chip as configured; detailed by default
  bench_fabric,      // bench ping, traffic: the rack's topology and fabric as configured
  bench_collective,  // bench collective: the rack as a run builds it; detailed by default
};

// The chip as the models are built from it.
struct ChipPlan {
  config::ChipParams params;         // with the replay overrides applied when `replay` was asked
  HbmGeometry hbm;                   // derived from params.hbm (checked even for "bandwidth")
  std::string memory_model;          // registry name: "hbm" | "bandwidth"
  std::string compute_model;         // registry name: "tile" | "op"
  int granularity = 1;               // /sim/compute_granularity
  std::vector<std::string> overrides;  // "/replay/dma_engines -> /chip/core/dma/engines", for logs
  // Share of an op a tile chip simulates before it times the rest (model::op_head): the rack sets
  // /sim/fast_forward_op_head when fast-forward is on; 1 otherwise.
  double op_head = 1;
  std::string power_model{};         // registry name of the power role: "table"
  // Threads that run NeuronCore programs in the whole simulation, shared by its tile chips
  // (/sim/core_workers, model::CoreWorkerBudget); 0: no bound (plan_chip, for tests).
  std::uint64_t core_workers = 0;
};

// The fabric as the network model is built from it.
struct FabricPlan {
  config::FabricParams params;       // with /replay/fabric_packet_bytes applied
  std::string model;                 // registry name: "packet" | "flow"
  std::uint64_t packet_bytes = 0;
  std::uint32_t flit_bytes = 0, header_bytes = 0;
  std::uint32_t packet_flits = 0;    // flits of a full packet with its header
  std::uint32_t fixed_buffer_flits = 0;  // per VC; 0: sized per link from its credit loop
  int vcs = 1;                       // hop-indexed VCs (>= the longest route)
  int diameter = 0;                  // links on the longest chip-to-chip route
  double link_idle_fraction = 0;     // SerDes idle power as a fraction of active
  std::uint64_t seed = 1;            // sim.seed: perturbs route hashing and tie-breaks
  // Flow network: the efficiency of the links for the transfers of each traffic pattern
  // (model::TransferRequest::pattern, indexed by it), from the packet fabric
  // (params.flow_calibration packet; run/flow_calibration.cpp); 1 means nominal bandwidth. A
  // flow of pattern p drains wire bytes / flow_efficiency[p] at its max-min rate.
  std::array<double, 16> flow_efficiency{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
};

// Where ranks run (/replay/placement), checked against the chips it places ranks on.
struct PlacementPlan {
  config::RankPlacement how = config::RankPlacement::chip;
  int per_chip = 1;             // ranks per chip (chip, logical_core, block)
  std::string description;      // "placement block (4 ranks per chip)", for errors
  std::string file;             // placement file: its chips, each below `chips`
  std::vector<int> file_chips;
  std::size_t chips = 0;        // chips ranks are placed on (a replica's, in a cluster)
};

struct RackPlan {
  ChipPlan chip;
  topo::Topology topology;
  FabricPlan fabric;
  int local_size = 0;  // chips of the first tier (server, leaf, torus plane): hierarchical collectives
  config::Fidelity fidelity = config::Fidelity::fast;  // what filled the unset model names
  bool fast_forward = false;  // /sim/fast_forward, or the fidelity's default
  // The cluster (/cluster), when there is one: its scale-out network by rule and, when folded,
  // the network one replica sees; unfolded, the whole scale-out network (every chip's NIC and
  // every switch). `topology` stays one UltraServer's: each UltraServer has its own fabric.
  std::shared_ptr<const topo::ScaleOut> scale_out;
  std::shared_ptr<const topo::FoldedScaleOut> folded;
  std::shared_ptr<const topo::Topology> scale_out_topology;
  // The folded scale-out network's plan: the fabric's packet sizing, its model from
  // /cluster/scale_out/model (registry role scale_out).
  FabricPlan scale_out_fabric;
  // What-if /cluster/straggler: the chip (of the chips simulated) whose compute ops take
  // `straggler_slowdown` times as long; -1 for none.
  // UltraServers simulated, each with its own fabric on `topology`: 1 per replica folded (more
  // when a replica spans several, /cluster/ultraservers_per_replica), all of them unfolded.
  int simulated_ultraservers = 1;
  int straggler_chip = -1;
  double straggler_slowdown = 1;
  PlacementPlan placement;  // /replay/placement on the chips of a replica (or the rack)
};

// What models are built from, for one purpose: the parts that purpose needs.
struct Plan {
  Purpose purpose = Purpose::config;
  std::optional<ChipPlan> chip;        // bench_chip; config when there is a chip
  std::optional<RackPlan> rack;        // run, bench_collective; config with a chip and a rack
  // bench_fabric; config when there is a rack: the rack's own topology and its fabric as
  // configured (no /replay overrides), as the fabric benchmarks build them.
  std::optional<topo::Topology> topology;
  std::optional<FabricPlan> fabric;
};

}  // namespace trnsim::resolve
