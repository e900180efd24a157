// SPDX-License-Identifier: MIT
// The block registry: every implementation of a role (memory, network, compute) under its name,
// with its description, the config fields it reads, its ports and its statistics, and the
// factory that builds it from resolved parameters. Racks and benchmarks are built through it; the
// config chooses the implementation of each role (/chip/memory/model, /rack/fabric/model,
// /chip/compute/model, /chip/power/model); `trnsim list-types` prints it. Registration is an explicit call,
// register_builtin_models(), not a static initialiser the linker could drop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chip/chip.hpp"
#include "common/memory.hpp"
#include "common/network.hpp"
#include "common/power.hpp"
#include "trnsim/resolve/resolve.hpp"

namespace trnsim::registry {

// memory, network and compute are chosen per chip and rack; scale_out is the network between
// UltraServers of a folded cluster, on which transfers follow explicit paths; power prices what
// the blocks count.
enum class Role { memory, network, compute, scale_out, power };
std::string_view role_name(Role r);

struct PortDoc {
  std::string name, interface, description;
};
struct StatDoc {
  std::string name;
  model::StatUnit unit;
  std::string description;
};

using MemoryFactory = std::function<model::MemoryBlock(const char* name, const resolve::ChipPlan&)>;
using NetworkFactory = std::function<std::unique_ptr<model::Network>(
    const char* name, const topo::Topology&, const resolve::FabricPlan&,
    std::vector<model::MemoryPort*> memories)>;
using ComputeFactory = std::function<std::unique_ptr<model::ChipModel>(
    const char* name, const resolve::ChipPlan&, model::ChipOptions)>;
using ScaleOutFactory = std::function<std::unique_ptr<model::PathNetwork>(
    const char* name, const topo::Topology&, const resolve::FabricPlan&,
    std::vector<model::MemoryPort*> memories)>;
using PowerFactory = std::function<std::unique_ptr<model::PowerModel>(const resolve::ChipPlan&)>;

// One packet delivered by a packet-level network, as a probe sees it: its chips, its payload, when
// it was delivered, the time it spent on links, in switches and relaying chips, and the time it
// waited for busy outputs and credits.
struct PacketEvent {
  int src = 0, dst = 0;
  double hops_s = 0, queueing_s = 0;
  std::uint64_t payload = 0;     // payload bytes of the packet
  sc_core::sc_time delivered{};  // simulated time of delivery
};
using PacketProbe = std::function<void(const PacketEvent&)>;

// What the simulation asks of an implementation instead of comparing its name.
struct Capabilities {
  // compute: replays every op from profiles measured on the calibration reference before the
  // rack is elaborated (run/calibrate.hpp), so a run must calibrate first.
  bool needs_calibration = false;
  // compute: the model the calibrations measure (a chip made by make_tile_chip).
  bool calibration_reference = false;
  // compute: can simulate an op's head and time the rest from profiles (fast-forward inside
  // ops, /sim/fast_forward_op_head); its calibration then measures the heads too.
  bool times_op_heads = false;
  // What the work estimate (run/estimate.hpp) counts events by: network, one per packet and
  // hop (else one per message); compute, one per engine instruction (else one per op).
  bool events_per_packet = false;
  bool events_per_instruction = false;
};
struct Implementation {
  Role role = Role::memory;
  std::string name, description;
  std::string block;                    // the sc_module class that it elaborates
  std::vector<std::string> parameters;  // JSON pointers (or subtrees) of the fields it reads
  std::vector<PortDoc> ports;
  // Of `block` itself (children report their own), from the keys its header declares
  // (model::StatKey): the registry spells no statistic itself.
  std::vector<StatDoc> statistics;
  MemoryFactory memory;                 // the factory of its role; the others are empty
  NetworkFactory network;
  ComputeFactory compute;
  ScaleOutFactory scale_out;
  Capabilities capabilities;
  // network: attaches `probe` to every packet the network delivers (empty: it has no packets).
  std::function<void(model::Network&, PacketProbe probe)> packet_probe;
  PowerFactory power{};
};

class Registry {
 public:
  // InternalError when (role, name) is registered twice or the factory of the role is missing.
  void add(Implementation impl);
  // The implementation of `role` named `name`; ConfigError naming `pointer` (in the file of
  // `prov` when given) and the registered names otherwise.
  const Implementation& get(Role role, const std::string& name, const std::string& pointer,
                            const config::Provenance* prov = nullptr) const;
  const std::vector<Implementation>& all() const { return impls_; }
  // The compute implementation whose capabilities say calibration_reference.
  const Implementation& calibration_reference() const;

 private:
  std::vector<Implementation> impls_;
};

// hbm and bandwidth (memory), packet and flow (network), tile and op (compute), flow
// (scale_out), table (power).
void register_builtin_models(Registry& r);

// A chip of `plan` with the memory and compute implementations the plan names. `external` (a
// test's memory) replaces the memory implementation; `calibration` holds the op-level model's
// profiles (unused by the tile model). `workers` bounds the threads that run the core programs
// of a tile chip, shared with the simulation's other chips (the rack's); null: a budget of
// plan.core_workers for this chip alone, checked here (check_core_workers).
std::unique_ptr<model::ChipModel> make_chip(
    const Registry& r, const char* name, const resolve::ChipPlan& plan,
    const config::Provenance* prov = nullptr, model::MemoryPort* external = nullptr,
    std::shared_ptr<const model::OpTable> calibration = nullptr,
    std::shared_ptr<model::CoreWorkerBudget> workers = nullptr);
// A ConfigError naming /sim/core_workers when the chips built on `budget` have more cores than
// it has threads (each core needs one).
void check_core_workers(const model::CoreWorkerBudget& budget, const config::Provenance* prov);
// The tile model of `plan` (what the chip benchmarks and the op-level calibration measure); a
// ConfigError naming /chip/compute/model when the plan names another compute model.
std::unique_ptr<model::Chip> make_tile_chip(const Registry& r, const char* name,
                                            const resolve::ChipPlan& plan,
                                            const config::Provenance* prov = nullptr,
                                            model::MemoryPort* external = nullptr);
// The folded scale-out network of `plan` (plan.model names a scale_out implementation) on
// `topology`, the network one replica sees (topo::FoldedScaleOut).
std::unique_ptr<model::PathNetwork> make_scale_out(const Registry& r, const char* name,
                                                   const topo::Topology& topology,
                                                   const resolve::FabricPlan& plan,
                                                   std::vector<model::MemoryPort*> memories,
                                                   const config::Provenance* prov = nullptr);
// The network of `plan` on `topology`.
std::unique_ptr<model::Network> make_network(const Registry& r, const char* name,
                                             const topo::Topology& topology,
                                             const resolve::FabricPlan& plan,
                                             std::vector<model::MemoryPort*> memories = {},
                                             const config::Provenance* prov = nullptr);

// The power model of `plan` (/chip/power/model): what prices the energy of every block of a run,
// the chips' and the network's.
std::unique_ptr<model::PowerModel> make_power(const Registry& r, const resolve::ChipPlan& plan,
                                              const config::Provenance* prov = nullptr);

// The resolve step plus the check that every chosen implementation is registered (what
// `trnsim config` runs). Returns the plan it resolved (resolve::Purpose::config): its rack is the
// one a run resolves (Purpose::run), which `trnsim run` takes rather than resolving it again.
resolve::Plan check(const Registry& r, const config::LoadedConfig& loaded);

}  // namespace trnsim::registry
