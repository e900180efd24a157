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

enum class Role { memory, network, compute, power };
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
using PowerFactory = std::function<std::unique_ptr<model::PowerModel>(const resolve::ChipPlan&)>;

struct Implementation {
  Role role = Role::memory;
  std::string name, description;
  std::string block;                    // the sc_module class that it elaborates
  std::vector<std::string> parameters;  // JSON pointers (or subtrees) of the fields it reads
  std::vector<PortDoc> ports;
  std::vector<StatDoc> statistics;      // of `block` itself (children report their own)
  MemoryFactory memory;                 // the factory of its role; the others are empty
  NetworkFactory network;
  ComputeFactory compute;
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

 private:
  std::vector<Implementation> impls_;
};

// hbm and bandwidth (memory), packet and flow (network), tile and op (compute), table (power).
void register_builtin_models(Registry& r);

// A chip of `plan` with the memory and compute implementations the plan names. `external` (a
// test's memory) replaces the memory implementation; `calibration` holds the op-level model's
// profiles (unused by the tile model).
std::unique_ptr<model::ChipModel> make_chip(
    const Registry& r, const char* name, const resolve::ChipPlan& plan,
    const config::Provenance* prov = nullptr, model::MemoryPort* external = nullptr,
    std::shared_ptr<const model::OpTable> calibration = nullptr);
// The tile model of `plan` (what the chip benchmarks and the op-level calibration measure); a
// ConfigError naming /chip/compute/model when the plan names another compute model.
std::unique_ptr<model::Chip> make_tile_chip(const Registry& r, const char* name,
                                            const resolve::ChipPlan& plan,
                                            const config::Provenance* prov = nullptr,
                                            model::MemoryPort* external = nullptr);
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
// `trnsim config` runs).
void check(const Registry& r, const config::LoadedConfig& loaded);

}  // namespace trnsim::registry
