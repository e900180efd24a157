// SPDX-License-Identifier: MIT
#include "trnsim/registry/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chip/memory.hpp"
#include "chip/op_chip.hpp"
#include "fabric/fabric.hpp"
#include "flow/flow_network.hpp"
#include "hbm/hbm_system.hpp"
#include "trnsim/error.hpp"
#include "trnsim/log.hpp"

namespace trnsim::registry {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::memory: return "memory";
    case Role::network: return "network";
    case Role::compute: return "compute";
    case Role::scale_out: return "scale_out";
    case Role::power: return "power";
  }
  throw InternalError("role without a name");
}

void Registry::add(Implementation impl) {
  for (const auto& i : impls_) {
    if (i.role == impl.role && i.name == impl.name) {
      throw InternalError(fmt::format("{} implementation \"{}\" registered twice",
                                      role_name(impl.role), impl.name));
    }
  }
  const bool has = (impl.role == Role::memory && impl.memory) ||
                   (impl.role == Role::network && impl.network) ||
                   (impl.role == Role::compute && impl.compute) ||
                   (impl.role == Role::scale_out && impl.scale_out) ||
                   (impl.role == Role::power && impl.power);
  if (!has) {
    throw InternalError(fmt::format("{} implementation \"{}\" has no factory",
                                    role_name(impl.role), impl.name));
  }
  impls_.push_back(std::move(impl));
}

const Implementation& Registry::get(Role role, const std::string& name, const std::string& pointer,
                                    const config::Provenance* prov) const {
  std::vector<std::string> names;
  for (const auto& i : impls_) {
    if (i.role != role) continue;
    if (i.name == name) return i;
    names.push_back(fmt::format("\"{}\"", i.name));
  }
  const std::string msg = fmt::format("no {} model named \"{}\"; expected one of {}",
                                      role_name(role), name, fmt::join(names, ", "));
  if (prov) throw ConfigError(config::located(*prov, pointer, msg));
  throw ConfigError(fmt::format("{}: {}", pointer, msg));
}

const Implementation& Registry::calibration_reference() const {
  for (const auto& i : impls_) {
    if (i.role == Role::compute && i.capabilities.calibration_reference) return i;
  }
  throw InternalError("no compute implementation is the calibration reference");
}

namespace {

// An implementation's statistics as its block declares them (the keys in the block's header).
template <std::size_t N>
std::vector<StatDoc> documented(const std::array<model::StatKey, N>& keys) {
  std::vector<StatDoc> out;
  for (const auto& k : keys) {
    out.push_back({std::string(k.name), k.unit, std::string(k.description)});
  }
  return out;
}

}  // namespace

void register_builtin_models(Registry& r) {
  r.add({Role::memory,
         "hbm",
         "HBM stacks with channels, pseudo-channels, banks, row buffers, DRAM timing, refresh "
         "and the address map (docs/models/hbm.md)",
         "model::HbmSystem (one model::HbmStack per stack)",
         {"/chip/hbm"},
         {{"access", "model::MemoryPort", "requests of the chip's DMA engines, by address"}},
         documented(model::HbmSystemStats::all),
         [](const char* name, const resolve::ChipPlan& plan) {
           auto m = std::make_unique<model::HbmSystem>(name, plan.hbm);
           model::MemoryPort* port = m.get();
           return model::MemoryBlock{std::move(m), port, "HbmSystem"};
         },
         {},
         {}});
  r.add({Role::memory,
         "bandwidth",
         "each stack a queue at bandwidth / stacks with a fixed access latency "
         "(controller_latency + tRCD + tCL or tCWL); no banks, rows or refresh "
         "(models/chip/memory.hpp); the default of rack replays (/replay/chip_memory)",
         "model::BandwidthMemory",
         {"/chip/hbm/stacks", "/chip/hbm/bandwidth", "/chip/hbm/interleave_bytes",
          "/chip/hbm/controller_latency", "/chip/hbm/timing/tRCD", "/chip/hbm/timing/tCL",
          "/chip/hbm/timing/tCWL", "/chip/hbm/energy"},
         {{"access", "model::MemoryPort", "requests of the chip's DMA engines, by address"}},
         documented(model::BandwidthMemoryStats::all),
         [](const char* name, const resolve::ChipPlan& plan) {
           auto m = std::make_unique<model::BandwidthMemory>(name, plan.params.hbm);
           model::MemoryPort* port = m.get();
           return model::MemoryBlock{
               std::move(m), port,
               "fallback: per-stack bandwidth + fixed latency (models/chip/memory.hpp)"};
         },
         {},
         {}});
  r.add({Role::network,
         "packet",
         "links with credit-based flow control and hop-indexed virtual channels, input-queued "
         "switches with output arbitration, chip network interfaces; one event per packet per "
         "hop (docs/models/fabric.md)",
         "model::Fabric (model::Link, model::Router, model::NetworkInterface)",
         {"/rack/fabric", "/rack/topology", "/chip/link/idle_fraction"},
         {{"transfers", "model::Network", "HBM-to-HBM transfers between chips"},
          {"memories", "model::MemoryPort", "each chip's HBM, read at the source and written at "
                                            "the destination"}},
         documented(model::FabricStats::all),
         {},
         [](const char* name, const topo::Topology& t, const resolve::FabricPlan& plan,
            std::vector<model::MemoryPort*> memories) -> std::unique_ptr<model::Network> {
           return std::make_unique<model::Fabric>(name, t, plan, std::move(memories));
         },
         {},
         {},
         {.events_per_packet = true},
         [](model::Network& net, PacketProbe probe) {
           auto* fabric = dynamic_cast<model::Fabric*>(&net);
           if (!fabric) throw InternalError("a packet network that is not a model::Fabric");
           fabric->set_delivery_observer(
               [probe = std::move(probe)](const model::Packet& p, const sc_core::sc_time& t) {
                 const auto& req = p.transfer->record.request;
                 probe({int(req.src.v), int(req.dst.v),
                        (p.t_link + p.t_switch + p.t_forward).to_seconds(),
                        p.t_queue.to_seconds(), p.payload, t});
               });
         }});
  r.add({Role::network,
         "flow",
         "each transfer a flow on its route; flows share link directions max-min fairly, rates "
         "recomputed when a flow starts or ends for the flows sharing a link with it; per-hop "
         "latency as fixed terms; a transfer of one packet goes hop by hop, each link sending "
         "such packets in order of arrival (flow_packets lane); no credits, head-of-line "
         "blocking or packet interleaving (docs/models/fidelity.md)",
         "model::FlowNetwork (model::FlowLinkDirection, model::FlowNode)",
         {"/rack/fabric/packet_bytes", "/rack/fabric/flit_bytes", "/rack/fabric/header_bytes",
          "/rack/fabric/endpoint_overhead", "/rack/fabric/flow_calibration", "/rack/fabric/flow_contention",
          "/rack/fabric/flow_packets", "/rack/fabric/chip_relay", "/rack/topology",
          "/chip/link/idle_fraction"},
         {{"transfers", "model::Network", "HBM-to-HBM transfers between chips"},
          {"memories", "model::MemoryPort", "each chip's HBM, read at the source and written at "
                                            "the destination"}},
         documented(model::FlowNetworkStats::all),
         {},
         [](const char* name, const topo::Topology& t, const resolve::FabricPlan& plan,
            std::vector<model::MemoryPort*> memories) -> std::unique_ptr<model::Network> {
           return std::make_unique<model::FlowNetwork>(name, t, plan, std::move(memories));
         },
         {},
         {},
         {},
         {}});
  r.add({Role::compute,
         "tile",
         "NeuronCores whose Tensor, Vector, Scalar and GpSimd engines run the engine program of "
         "every tile of an op, with SBUF/PSUM capacity, DMA engines and queues, and the die "
         "crossing (docs/models/chip.md)",
         "model::Chip (model::NeuronCore, model::DmaEngine, model::DieCrossing)",
         {"/chip/cores", "/chip/dies", "/chip/core", "/chip/static_power",
          "/chip/die_to_die_bandwidth", "/chip/die_to_die_latency", "/chip/die_to_die_energy",
          "/sim/compute_granularity"},
         {{"memory", "model::MemoryPort", "the chip's memory implementation"},
          {"ops", "model::Chip::execute", "trace ops lowered to engine programs"}},
         documented(model::ChipStats::all),
         {},
         {},
         [](const char* name, const resolve::ChipPlan& plan,
            model::ChipOptions opt) -> std::unique_ptr<model::ChipModel> {
           return std::make_unique<model::Chip>(name, plan.params, std::move(opt));
         },
         {},
         {.calibration_reference = true, .times_op_heads = true, .events_per_instruction = true},
         {}});
  r.add({Role::compute,
         "op",
         "each distinct op (kind, shape, dtype) of a run simulated once on the tile model before "
         "the run; every occurrence replayed as 2 pieces that reserve its cores' engines, SBUF and "
         "PSUM and issue its HBM traffic to the chip's memory port, so that it contends with "
         "transfers and concurrent ops; alone it takes exactly its tile-model time "
         "(docs/models/fidelity.md)",
         "model::OpChip (model::OpCore)",
         {"/chip/cores", "/chip/core/sbuf/bytes_per_partition", "/chip/core/psum/banks",
          "/chip/hbm/interleave_bytes", "/chip/hbm/stacks", "/chip/hbm/capacity_per_stack"},
         {{"memory", "model::MemoryPort", "the chip's memory implementation"},
          {"ops", "model::ChipModel::execute", "trace ops replayed from their calibrated profile"}},
         documented(model::OpChipStats::all),
         {},
         {},
         [](const char* name, const resolve::ChipPlan& plan,
            model::ChipOptions opt) -> std::unique_ptr<model::ChipModel> {
           return std::make_unique<model::OpChip>(name, plan.params, std::move(opt));
         },
         {},
         {.needs_calibration = true},
         {}});
  r.add({Role::scale_out,
         "flow",
         "the scale-out network between the UltraServers of a folded cluster as one replica sees "
         "it (topo::FoldedScaleOut): flows on explicit paths that may end where they began, "
         "sharing link directions max-min fairly (docs/scaling.md)",
         "model::FlowNetwork",
         {"/cluster/scale_out", "/rack/fabric/packet_bytes", "/rack/fabric/flit_bytes",
          "/rack/fabric/header_bytes", "/rack/fabric/endpoint_overhead"},
         {{"transfers", "model::PathNetwork", "transfers between replicas on explicit paths"},
          {"memories", "model::MemoryPort", "each chip's HBM, read at the source and written at "
                                            "the destination"}},
         documented(model::FlowNetworkStats::all),
         {},
         {},
         {},
         [](const char* name, const topo::Topology& t, const resolve::FabricPlan& plan,
            std::vector<model::MemoryPort*> memories) -> std::unique_ptr<model::PathNetwork> {
           return std::make_unique<model::FlowNetwork>(name, t, plan, std::move(memories));
         },
         {},
         {}});
  Implementation table{Role::power,
                       "table",
                       "each action a block counted (bytes, MACs, elements, activations, "
                       "refreshes) at the rated energy per unit of the block's parameters; each "
                       "block's rated static power (chip leakage and uncore, HBM background, "
                       "link idle_fraction, switch idle_power) for the whole run "
                       "(models/common/power.hpp)",
                       "model::TablePower (prices every model::Block's action meters)",
                       {"/chip/power/model", "/chip/static_power", "/chip/die_to_die_energy",
                        "/chip/hbm/energy", "/chip/core", "/chip/link/energy",
                        "/chip/link/idle_fraction", "/rack/topology"},
                       {},
                       {},
                       {},
                       {},
                       {}};
  table.power = [](const resolve::ChipPlan&) -> std::unique_ptr<model::PowerModel> {
    return std::make_unique<model::TablePower>();
  };
  r.add(std::move(table));
}

std::unique_ptr<model::ChipModel> make_chip(const Registry& r, const char* name,
                                            const resolve::ChipPlan& plan,
                                            const config::Provenance* prov,
                                            model::MemoryPort* external,
                                            std::shared_ptr<const model::OpTable> calibration,
                                            std::shared_ptr<model::CoreWorkerBudget> workers) {
  const Implementation& compute =
      r.get(Role::compute, plan.compute_model, "/chip/compute/model", prov);
  model::ChipOptions opt;
  opt.granularity = plan.granularity;
  const bool own_budget = !workers && plan.core_workers > 0;
  if (own_budget) {
    workers = std::make_shared<model::CoreWorkerBudget>();
    workers->limit = plan.core_workers;
  }
  opt.workers = workers;
  opt.memory = external;
  if (calibration) opt.op_head = plan.op_head;  // heads are timed from the calibration
  opt.calibration = std::move(calibration);
  if (!external) {
    const Implementation& memory =
        r.get(Role::memory, plan.memory_model, "/chip/memory/model", prov);
    opt.make_memory = [&memory, &plan](const char* n) { return memory.memory(n, plan); };
  }
  logger("build")->debug("{}: compute {}, memory {}, granularity {}", name, compute.name,
                         external ? "external" : plan.memory_model, plan.granularity);
  auto chip = compute.compute(name, plan, std::move(opt));
  if (own_budget) check_core_workers(*workers, prov);
  return chip;
}

void check_core_workers(const model::CoreWorkerBudget& budget, const config::Provenance* prov) {
  if (budget.limit == 0 || budget.cores <= budget.limit) return;
  const std::string msg = fmt::format(
      "{} threads for core programs cannot give each of the simulation's {} NeuronCores (of "
      "the tile compute model) one; expected at least {}",
      budget.limit, budget.cores, budget.cores);
  if (prov) throw ConfigError(config::located(*prov, "/sim/core_workers", msg));
  throw ConfigError(fmt::format("/sim/core_workers: {}", msg));
}

std::unique_ptr<model::Chip> make_tile_chip(const Registry& r, const char* name,
                                            const resolve::ChipPlan& plan,
                                            const config::Provenance* prov,
                                            model::MemoryPort* external) {
  const Implementation& reference = r.calibration_reference();
  if (plan.compute_model != reference.name) {
    const std::string msg = fmt::format(
        "this command measures the {} compute model; got \"{}\" (expected \"{}\")",
        reference.name, plan.compute_model, reference.name);
    if (prov) throw ConfigError(config::located(*prov, "/chip/compute/model", msg));
    throw ConfigError(fmt::format("/chip/compute/model: {}", msg));
  }
  std::unique_ptr<model::ChipModel> chip = make_chip(r, name, plan, prov, external);
  auto* tile = dynamic_cast<model::Chip*>(chip.get());
  if (!tile) throw InternalError("the tile compute model did not build a model::Chip");
  chip.release();
  return std::unique_ptr<model::Chip>(tile);
}

std::unique_ptr<model::PathNetwork> make_scale_out(const Registry& r, const char* name,
                                                   const topo::Topology& topology,
                                                   const resolve::FabricPlan& plan,
                                                   std::vector<model::MemoryPort*> memories,
                                                   const config::Provenance* prov) {
  const Implementation& net = r.get(Role::scale_out, plan.model, "/cluster/scale_out/model", prov);
  logger("build")->debug("{}: scale-out network {} over {} chips", name, net.name,
                         topology.chip_count());
  return net.scale_out(name, topology, plan, std::move(memories));
}

std::unique_ptr<model::Network> make_network(const Registry& r, const char* name,
                                             const topo::Topology& topology,
                                             const resolve::FabricPlan& plan,
                                             std::vector<model::MemoryPort*> memories,
                                             const config::Provenance* prov) {
  const Implementation& net = r.get(Role::network, plan.model, "/rack/fabric/model", prov);
  logger("build")->debug("{}: network {} over {} chips", name, net.name, topology.chip_count());
  return net.network(name, topology, plan, std::move(memories));
}

std::unique_ptr<model::PowerModel> make_power(const Registry& r, const resolve::ChipPlan& plan,
                                              const config::Provenance* prov) {
  const Implementation& power = r.get(Role::power, plan.power_model, "/chip/power/model", prov);
  logger("build")->debug("power model {}", power.name);
  return power.power(plan);
}

resolve::Plan check(const Registry& r, const config::LoadedConfig& loaded) {
  resolve::Plan plan = resolve::plan(loaded, resolve::Purpose::config);
  const auto* prov = &loaded.provenance;
  if (loaded.config.chip) {
    const auto& c = *loaded.config.chip;
    r.get(Role::memory, c.memory.model, "/chip/memory/model", prov);
    if (!c.compute.model.empty()) r.get(Role::compute, c.compute.model, "/chip/compute/model", prov);
    r.get(Role::power, c.power.model, "/chip/power/model", prov);
  }
  if (loaded.config.rack) {
    r.get(Role::memory, loaded.config.replay.chip_memory, "/replay/chip_memory", prov);
  }
  if (loaded.config.rack && !loaded.config.rack->fabric.model.empty()) {
    r.get(Role::network, loaded.config.rack->fabric.model, "/rack/fabric/model", prov);
  }
  if (loaded.config.cluster) {
    r.get(Role::scale_out, loaded.config.cluster->scale_out.model, "/cluster/scale_out/model", prov);
  }
  return plan;
}

}  // namespace trnsim::registry
