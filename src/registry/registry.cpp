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
                   (impl.role == Role::compute && impl.compute);
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

void register_builtin_models(Registry& r) {
  r.add({Role::memory,
         "hbm",
         "HBM stacks with channels, pseudo-channels, banks, row buffers, DRAM timing, refresh "
         "and the address map (docs/models/hbm.md)",
         "model::HbmSystem (one model::HbmStack per stack)",
         {"/chip/hbm"},
         {{"access", "model::MemoryPort", "requests of the chip's DMA engines, by address"}},
         {{"requests", model::StatUnit::count, "requests served"},
          {"bytes_read", model::StatUnit::bytes, "bytes requested by reads"},
          {"bytes_written", model::StatUnit::bytes, "bytes requested by writes"},
          {"achieved_bandwidth", model::StatUnit::bytes_per_second, "bytes moved over the time the system was busy"}},
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
         {{"bytes_read", model::StatUnit::bytes, "bytes read"}, {"bytes_written", model::StatUnit::bytes, "bytes written"}},
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
         {{"transfers", model::StatUnit::count, "transfers completed"},
          {"bytes_delivered", model::StatUnit::bytes, "payload bytes delivered"},
          {"vcs", model::StatUnit::count, "virtual channels per link direction"}},
         {},
         [](const char* name, const topo::Topology& t, const resolve::FabricPlan& plan,
            std::vector<model::MemoryPort*> memories) -> std::unique_ptr<model::Network> {
           return std::make_unique<model::Fabric>(name, t, plan, std::move(memories));
         },
         {}});
  r.add({Role::network,
         "flow",
         "each transfer a flow on its route; flows share link directions max-min fairly, rates "
         "recomputed when a flow starts or ends for the flows sharing a link with it; per-hop "
         "latency as fixed terms; no credits, head-of-line blocking or packet interleaving "
         "(docs/models/fidelity.md)",
         "model::FlowNetwork (model::FlowLinkDirection, model::FlowNode)",
         {"/rack/fabric/packet_bytes", "/rack/fabric/flit_bytes", "/rack/fabric/header_bytes",
          "/rack/fabric/endpoint_overhead", "/rack/topology", "/chip/link/idle_fraction"},
         {{"transfers", "model::Network", "HBM-to-HBM transfers between chips"},
          {"memories", "model::MemoryPort", "each chip's HBM, read at the source and written at "
                                            "the destination"}},
         {{"transfers", model::StatUnit::count, "transfers completed"},
          {"bytes_delivered", model::StatUnit::bytes, "payload bytes delivered"},
          {"rate_recomputations", model::StatUnit::count, "batched max-min rate recomputations"},
          {"max_flows", model::StatUnit::count, "most flows active at once"}},
         {},
         [](const char* name, const topo::Topology& t, const resolve::FabricPlan& plan,
            std::vector<model::MemoryPort*> memories) -> std::unique_ptr<model::Network> {
           return std::make_unique<model::FlowNetwork>(name, t, plan, std::move(memories));
         },
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
         {{"ops", model::StatUnit::count, "ops executed"},
          {"flops", model::StatUnit::count, "useful floating-point operations"},
          {"hbm_bytes", model::StatUnit::bytes, "bytes the ops moved to or from HBM"}},
         {},
         {},
         [](const char* name, const resolve::ChipPlan& plan,
            model::ChipOptions opt) -> std::unique_ptr<model::ChipModel> {
           return std::make_unique<model::Chip>(name, plan.params, std::move(opt));
         }});
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
         {{"ops", model::StatUnit::count, "ops executed"},
          {"interpolated_ops", model::StatUnit::count,
           "ops whose profile was interpolated on a grid of sizes"},
          {"flops", model::StatUnit::count, "useful floating-point operations"},
          {"hbm_bytes", model::StatUnit::bytes, "bytes the ops moved to or from HBM"},
          {"memory_wait", model::StatUnit::seconds,
           "time op pieces ran beyond their isolated time, waiting for HBM"}},
         {},
         {},
         [](const char* name, const resolve::ChipPlan& plan,
            model::ChipOptions opt) -> std::unique_ptr<model::ChipModel> {
           return std::make_unique<model::OpChip>(name, plan.params, std::move(opt));
         }});
}

std::unique_ptr<model::ChipModel> make_chip(const Registry& r, const char* name,
                                            const resolve::ChipPlan& plan,
                                            const config::Provenance* prov,
                                            model::MemoryPort* external,
                                            std::shared_ptr<const model::OpTable> calibration) {
  const Implementation& compute =
      r.get(Role::compute, plan.compute_model, "/chip/compute/model", prov);
  model::ChipOptions opt;
  opt.granularity = plan.granularity;
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
  return compute.compute(name, plan, std::move(opt));
}

std::unique_ptr<model::Chip> make_tile_chip(const Registry& r, const char* name,
                                            const resolve::ChipPlan& plan,
                                            const config::Provenance* prov,
                                            model::MemoryPort* external) {
  if (plan.compute_model != "tile") {
    const std::string msg = fmt::format(
        "this command measures the tile compute model; got \"{}\" (expected \"tile\")",
        plan.compute_model);
    if (prov) throw ConfigError(config::located(*prov, "/chip/compute/model", msg));
    throw ConfigError(fmt::format("/chip/compute/model: {}", msg));
  }
  std::unique_ptr<model::ChipModel> chip = make_chip(r, name, plan, prov, external);
  auto* tile = dynamic_cast<model::Chip*>(chip.get());
  if (!tile) throw InternalError("the tile compute model did not build a model::Chip");
  chip.release();
  return std::unique_ptr<model::Chip>(tile);
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

void check(const Registry& r, const config::LoadedConfig& loaded) {
  resolve::plan(loaded, resolve::Purpose::config);
  const auto* prov = &loaded.provenance;
  if (loaded.config.chip) {
    const auto& c = *loaded.config.chip;
    r.get(Role::memory, c.memory.model, "/chip/memory/model", prov);
    if (!c.compute.model.empty()) r.get(Role::compute, c.compute.model, "/chip/compute/model", prov);
  }
  if (loaded.config.rack && !loaded.config.rack->fabric.model.empty()) {
    r.get(Role::network, loaded.config.rack->fabric.model, "/rack/fabric/model", prov);
  }
}

}  // namespace trnsim::registry
