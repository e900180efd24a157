// SPDX-License-Identifier: MIT
#include "trnsim/resolve/resolve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "internal.hpp"
#include "trnsim/error.hpp"
#include "trnsim/log.hpp"

namespace trnsim::resolve {

namespace {

std::uint64_t whole(Bytes b, const std::string& pointer, const Where& at, double min = 1) {
  if (!(b.si >= min) || b.si != std::floor(b.si) || b.si > 1e15) {
    at.fail(pointer, fmt::format("expected a whole number of bytes >= {}, got {}", min, format(b)));
  }
  return std::uint64_t(b.si);
}

// The /replay granularity knobs of a whole-rack run replace chip fields; errors name them.
void apply_replay_overrides(const config::ReplayParams& r, ChipPlan& plan, Where& at) {
  auto& dma = plan.params.core.dma;
  auto note = [&](const char* from, const char* to) {
    at.alias(to, from);
    plan.overrides.push_back(fmt::format("{} -> {}", from, to));
  };
  // Fewer, faster engines move the same bytes per second: the bandwidth scales by the ratio.
  dma.engine_bandwidth = dma.engine_bandwidth * (double(dma.engines) / r.dma_engines);
  dma.engines = r.dma_engines;
  note("/replay/dma_engines", "/chip/core/dma/engines");
  dma.packet_bytes = r.dma_packet_bytes;
  note("/replay/dma_packet_bytes", "/chip/core/dma/packet_bytes");
  dma.outstanding_packets = r.dma_outstanding_packets;
  note("/replay/dma_outstanding_packets", "/chip/core/dma/outstanding_packets");
  plan.params.memory.model = r.chip_memory;
  note("/replay/chip_memory", "/chip/memory/model");
}

void check_chip(const config::ChipParams& p, const Where& at) {
  if (p.hbm.stacks > kMaxHbmStacks) {
    at.fail("/chip/hbm/stacks", fmt::format("expected at most {}, got {}", kMaxHbmStacks,
                                            p.hbm.stacks));
  }
  if (p.dies > kMaxHbmStacks) {
    at.fail("/chip/dies", fmt::format("expected at most {}, got {}", kMaxHbmStacks, p.dies));
  }
  if (p.core.dma.queues_per_engine > kMaxDmaQueues) {
    at.fail("/chip/core/dma/queues_per_engine",
            fmt::format("expected at most {}, got {}", kMaxDmaQueues, p.core.dma.queues_per_engine));
  }
  const auto& psum = p.core.psum;
  if (psum.bytes_per_partition.si / double(psum.banks) < 4) {
    at.fail("/chip/core/psum/bytes_per_partition",
            fmt::format("a PSUM bank ({} / {} banks) must hold at least one FP32 element",
                        format(psum.bytes_per_partition), psum.banks));
  }
}

}  // namespace

config::Fidelity default_fidelity(Purpose purpose) {
  return purpose == Purpose::run ? config::Fidelity::fast : config::Fidelity::detailed;
}

FidelityModels models_for(config::Fidelity f) {
  return f == config::Fidelity::fast ? FidelityModels{"flow", "op"}
                                     : FidelityModels{"packet", "tile"};
}

ChipPlan plan_chip(const config::ChipParams& params, int granularity, const Where& at) {
  ChipPlan plan{params, HbmGeometry(params.hbm, at), params.memory.model,
                params.compute.model.empty()
                    ? models_for(default_fidelity(Purpose::bench_chip)).compute
                    : params.compute.model,
                granularity, {}};
  plan.power_model = params.power.model;
  check_chip(plan.params, at);
  return plan;
}

namespace {

// Whether the chip is built as a whole-rack replay builds it (the /replay overrides) or as
// configured (single-chip and fabric benchmarks).
enum class ChipUse { as_configured, replay };

ChipPlan resolve_chip(const config::LoadedConfig& loaded, ChipUse use, config::Fidelity fid) {
  const config::Config& cfg = loaded.config;
  if (!cfg.chip) {
    throw ConfigError(fmt::format("{}:/chip: missing: expected a chip preset, or a rack preset "
                                  "with a chip",
                                  loaded.path));
  }
  Where at(&loaded.provenance);
  ChipPlan plan{*cfg.chip, HbmGeometry(cfg.chip->hbm, at), {}, {}, cfg.sim.compute_granularity, {}};
  if (use == ChipUse::replay) apply_replay_overrides(cfg.replay, plan, at);
  check_chip(plan.params, at);
  plan.memory_model = plan.params.memory.model;
  plan.power_model = plan.params.power.model;
  plan.compute_model =
      plan.params.compute.model.empty() ? models_for(fid).compute : plan.params.compute.model;
  plan.core_workers = cfg.sim.core_workers;
  // Each core of a tile chip needs a worker (model::CoreWorkerBudget); the rack checks its chips
  // together when it builds them (registry::check_core_workers).
  if (plan.core_workers < std::uint64_t(plan.params.cores)) {
    at.fail("/sim/core_workers",
            fmt::format("{} threads for core programs cannot give each of the {} NeuronCores of "
                        "a chip one; expected at least {}",
                        plan.core_workers, plan.params.cores, plan.params.cores));
  }
  auto log = logger("resolve");
  log->debug("chip {}: memory model {}, compute model {}, granularity {}", plan.params.name,
             plan.memory_model, plan.compute_model, plan.granularity);
  for (const auto& o : plan.overrides) log->debug("chip {}: override {}", plan.params.name, o);
  return plan;
}

FabricPlan resolve_fabric(const config::LoadedConfig& loaded, const topo::Topology& topology,
                          bool replay, config::Fidelity fid, Purpose purpose) {
  const config::Config& cfg = loaded.config;
  if (!cfg.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: expected a rack preset", loaded.path));
  }
  Where at(&loaded.provenance);
  config::FabricParams params = cfg.rack->fabric;
  if (params.model.empty()) params.model = models_for(fid).network;
  // A run's flow network is calibrated on the workload's own collectives on one rack; a
  // cluster splits them across UltraServers (rules.cpp refuses workload there), and a
  // benchmark's collective is the calibration's own case.
  if (params.flow_calibration == config::FlowCalibration::auto_) {
    params.flow_calibration = purpose == Purpose::run && !cfg.cluster
                                  ? config::FlowCalibration::workload
                                  : config::FlowCalibration::none;
  }
  if (replay) {
    params.packet_bytes = cfg.replay.fabric_packet_bytes;
    at.alias("/rack/fabric/packet_bytes", "/replay/fabric_packet_bytes");
  }
  FabricPlan f = plan_fabric(params, topology, cfg.chip ? &*cfg.chip : nullptr, at);
  f.seed = cfg.sim.seed;
  return f;
}

}  // namespace

FabricPlan plan_fabric(const config::FabricParams& params, const topo::Topology& topology,
                       const config::ChipParams* chip, const Where& at) {
  FabricPlan f;
  f.params = params;
  const config::FabricParams& p = f.params;
  f.model = p.model.empty() ? models_for(default_fidelity(Purpose::bench_fabric)).network : p.model;
  f.packet_bytes = whole(p.packet_bytes, "/rack/fabric/packet_bytes", at);
  f.flit_bytes = std::uint32_t(whole(p.flit_bytes, "/rack/fabric/flit_bytes", at));
  f.header_bytes = std::uint32_t(whole(p.header_bytes, "/rack/fabric/header_bytes", at, 0));

  // The longest route sets the number of hop-indexed VCs that keeps the fabric deadlock-free.
  f.diameter = topology.routes().diameter();
  if (p.vcs > 0 && p.vcs < f.diameter) {
    at.fail("/rack/fabric/vcs",
            fmt::format("expected 0 (automatic) or at least {} (the longest route has {} links "
                        "and packets use VC k on their k-th link, which keeps the fabric "
                        "deadlock-free), got {}",
                        f.diameter, f.diameter, p.vcs));
  }
  f.vcs = p.vcs > 0 ? p.vcs : std::max(1, f.diameter);
  f.packet_flits = std::uint32_t((f.packet_bytes + f.header_bytes + f.flit_bytes - 1) / f.flit_bytes);
  if (p.vc_buffer.si > 0) {
    const std::uint64_t b = whole(p.vc_buffer, "/rack/fabric/vc_buffer", at);
    if (b / f.flit_bytes < f.packet_flits) {
      at.fail("/rack/fabric/vc_buffer",
              fmt::format("expected 0 (automatic) or at least one whole packet of {} B ({} "
                          "flits of {} B: packet_bytes plus header_bytes), got {}",
                          std::uint64_t(f.packet_flits) * f.flit_bytes, f.packet_flits,
                          f.flit_bytes, format(p.vc_buffer)));
    }
    f.fixed_buffer_flits = std::uint32_t(b / f.flit_bytes);
  }
  f.link_idle_fraction = p.link_idle_fraction ? *p.link_idle_fraction
                                              : (chip ? chip->link.idle_fraction : 0.0);
  logger("resolve")->debug("fabric: model {}, packets of {} B, {} VCs (diameter {})", f.model,
                           f.packet_bytes, f.vcs, f.diameter);
  return f;
}

namespace {

topo::Topology rack_topology(const config::LoadedConfig& loaded) {
  const config::Config& cfg = loaded.config;
  return topo::build_topology(
      cfg.rack->topology, cfg.chip ? &*cfg.chip : nullptr,
      {&loaded.provenance, "/rack/topology", config::memory_budget(cfg.sim)});
}

RackPlan resolve_rack(const config::LoadedConfig& loaded, config::Fidelity fid, Purpose purpose) {
  const config::Config& cfg = loaded.config;
  if (!cfg.chip || !cfg.rack) {
    throw ConfigError(fmt::format("{}:{}: missing: a run needs a rack preset (with chip and rack)",
                                  loaded.path, cfg.chip ? "/rack" : "/chip"));
  }
  ChipPlan chip = resolve_chip(loaded, ChipUse::replay, fid);
  const topo::SpecOrigin origin{&loaded.provenance, "/rack/topology",
                                config::memory_budget(cfg.sim)};
  topo::Topology topology = topo::build_topology(cfg.rack->topology, &*cfg.chip, origin);
  std::shared_ptr<const topo::ScaleOut> scale_out;
  std::shared_ptr<const topo::FoldedScaleOut> folded;
  std::shared_ptr<const topo::Topology> scale_out_topology;
  int simulated = 1;
  if (cfg.cluster) {
    const int per = cfg.cluster->ultraservers_per_replica;
    if (cfg.cluster->ultraservers % per != 0) {
      Where(&loaded.provenance)
          .fail({"/cluster/ultraservers_per_replica", "/cluster/ultraservers"},
                fmt::format("{} UltraServers per replica do not divide the {} UltraServers", per,
                            cfg.cluster->ultraservers));
    }
    scale_out = std::make_shared<const topo::ScaleOut>(
        cfg.cluster->scale_out, cfg.cluster->ultraservers, int(topology.chip_count()), origin,
        cfg.cluster->failed_link);
    if (cfg.cluster->fold || cfg.cluster->ultraservers == per) {
      folded = std::make_shared<const topo::FoldedScaleOut>(*scale_out, per);
      simulated = per;
    } else {
      simulated = cfg.cluster->ultraservers;
      // Every UltraServer simulated: refuse before anything is built what the route tables of
      // the whole scale-out network would take (nodes x chips entries of 12 B).
      double nodes = double(scale_out->nics());
      for (int k = 1; k <= scale_out->tiers(); ++k) nodes += double(scale_out->tier(k).switches);
      const double bytes = nodes * double(scale_out->nics()) * 12;
      const double budget = double(config::memory_budget(cfg.sim));
      if (bytes > budget) {
        Where(&loaded.provenance)
            .fail("/cluster/fold",
                  fmt::format("false: the unfolded scale-out network of {} chips needs about "
                              "{:.3g} GB of route tables, more than the memory budget of {:.3g} "
                              "GB (/sim/memory_budget); fold the cluster, or simulate fewer "
                              "UltraServers",
                              scale_out->nics(), bytes / 1e9, budget / 1e9));
      }
      topo::SpecOrigin whole = origin;
      whole.pointer = "";
      scale_out_topology =
          std::make_shared<const topo::Topology>(topo::build_scale_out_topology(*scale_out, whole));
    }
  }
  int straggler = -1;
  if (cfg.cluster && cfg.cluster->straggler) {
    const auto& st = *cfg.cluster->straggler;
    const Where at(&loaded.provenance);
    if (st.ultraserver >= cfg.cluster->ultraservers) {
      at.fail("/cluster/straggler/ultraserver",
              fmt::format("expected an UltraServer below {}, got {}", cfg.cluster->ultraservers,
                          st.ultraserver));
    }
    if (st.chip >= int(topology.chip_count())) {
      at.fail("/cluster/straggler/chip", fmt::format("expected a chip below {}, got {}",
                                                      topology.chip_count(), st.chip));
    }
    // Folded, the simulated UltraServer is the straggler's (it sets the step).
    straggler = (folded ? st.ultraserver % simulated : st.ultraserver) *
                    int(topology.chip_count()) + st.chip;
  }
  // A rack chip runs a trace dtype it lacks as the first of mxfp8, fp8 and bf16 it has
  // (run::to_compute_op): it must have one.
  const auto& rates = chip.params.core.tensor.macs_per_pe_cycle;
  if (!(rates.mxfp8 > 0 || rates.fp8 > 0 || rates.bf16 > 0)) {
    Where(&loaded.provenance)
        .fail("/chip/core/tensor/macs_per_pe_cycle",
              fmt::format("{} supports none of mxfp8, fp8 and bf16 (all 0), the types a rack "
                          "replay runs the dtypes a chip lacks as; expected a rate > 0 for one",
                          chip.params.name));
  }
  // Ranks are placed on one replica's chips in a cluster (its UltraServers), else the rack's.
  PlacementPlan placement = plan_placement(
      loaded, cfg.cluster ? std::size_t(scale_out->chips_per_ultraserver()) *
                                std::size_t(cfg.cluster->ultraservers_per_replica)
                          : topology.chip_count());
  FabricPlan fabric = resolve_fabric(loaded, topology, true, fid, purpose);
  const int local = topology.first_tier_chips();
  const bool fast_forward = cfg.sim.fast_forward.value_or(fid == config::Fidelity::fast);
  if (fast_forward) chip.op_head = cfg.sim.fast_forward_op_head;
  FabricPlan scale_out_fabric = fabric;
  if (cfg.cluster) scale_out_fabric.model = cfg.cluster->scale_out.model;
  return RackPlan{std::move(chip),
                  std::move(topology),
                  std::move(fabric),
                  local,
                  fid,
                  fast_forward,
                  std::move(scale_out),
                  std::move(folded),
                  std::move(scale_out_topology),
                  std::move(scale_out_fabric),
                  simulated,
                  straggler,
                  cfg.cluster && cfg.cluster->straggler ? cfg.cluster->straggler->slowdown : 1.0,
                  std::move(placement)};
}

}  // namespace

Plan plan(const config::LoadedConfig& loaded, Purpose purpose) {
  const config::Config& cfg = loaded.config;
  // The fidelity the purpose gives unset model names; /sim/fidelity wins over it.
  auto fidelity = [&](Purpose p) { return cfg.sim.fidelity.value_or(default_fidelity(p)); };
  check_config(loaded);  // the rules over the raw config, first, for every purpose
  Plan out;
  out.purpose = purpose;
  switch (purpose) {
    case Purpose::run:
    case Purpose::bench_collective:
      out.rack = resolve_rack(loaded, fidelity(purpose), purpose);
      break;
    case Purpose::bench_chip:
      out.chip = resolve_chip(loaded, ChipUse::as_configured, fidelity(purpose));
      break;
    case Purpose::bench_fabric:
      if (!cfg.rack) {
        throw ConfigError(fmt::format("{}:/rack: missing: expected a rack preset", loaded.path));
      }
      out.topology = rack_topology(loaded);
      out.fabric = resolve_fabric(loaded, *out.topology, false, fidelity(purpose), purpose);
      break;
    case Purpose::config:
      // Every part every command builds: the chip as the benchmarks build it, the rack as a run
      // does, the fabric as the fabric benchmarks do.
      if (cfg.chip) {
        out.chip = resolve_chip(loaded, ChipUse::as_configured, fidelity(Purpose::bench_chip));
      }
      if (cfg.rack) {
        if (cfg.chip) out.rack = resolve_rack(loaded, fidelity(Purpose::run), Purpose::run);
        out.topology = out.rack ? out.rack->topology : rack_topology(loaded);
        out.fabric = resolve_fabric(loaded, *out.topology, false, fidelity(Purpose::bench_fabric),
                                    Purpose::bench_fabric);
      }
      break;
  }
  return out;
}

}  // namespace trnsim::resolve
