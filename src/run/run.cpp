// SPDX-License-Identifier: MIT
// One whole-rack simulation: resolve, build from the registry, replay, collect.
#include "trnsim/run/run.hpp"

#include <fmt/format.h>

#include <chrono>

#include "common/activity.hpp"
#include "calibrate.hpp"
#include "rack.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"
#include "trnsim/log.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::run {

RunData run_workload(const config::LoadedConfig& loaded, const trace::Workload& w) {
  const config::Config& cfg = loaded.config;
  const resolve::RackPlan plan = resolve::resolve_rack(loaded);
  registry::Registry registry;
  registry::register_builtin_models(registry);
  auto log = logger("run");
  log->info("{}: {} chips, workload {} ({} ranks)", cfg.rack->name, plan.topology.chip_count(),
            w.name, w.num_ranks());

  const auto t0 = std::chrono::steady_clock::now();
  // The op-level model's calibration elaborates tile chips in child processes: before the rack.
  std::shared_ptr<const model::OpTable> calibration;
  if (plan.chip.compute_model == "op") {
    registry.get(registry::Role::compute, plan.chip.compute_model, "/chip/compute/model",
                 &loaded.provenance);
    calibration = calibrate_workload(plan.chip, w, kCalibrationJobs);
  }
  const auto tc = std::chrono::steady_clock::now();
  model::Simulation sim;
  Rack rack("rack", plan, cfg.replay, registry, &loaded.provenance, calibration);
  replay::Replay replay("replay", w, rack, cfg.replay);
  const auto t1 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const auto t2 = std::chrono::steady_clock::now();
  replay.check_finished();

  RunData d;
  d.config = &cfg;
  d.workload = &w;
  d.chips = plan.topology.chip_count();
  d.memory_model = plan.chip.memory_model;
  d.network_model = plan.fabric.model;
  d.compute_model = plan.chip.compute_model;
  d.end = replay.makespan();
  rack.network().finish(d.end);
  for (int c = 0; c < rack.chip_count(); ++c) rack.chip(c).account_until(d.end);
  d.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  d.simulation_seconds = std::chrono::duration<double>(t2 - t1).count();
  d.delta_cycles = sc_core::sc_delta_count();
  for (int k = 0; k < model::kActivityKinds; ++k) {
    const std::uint64_t n = sim.activations()[std::size_t(k)];
    d.activations_by_kind[model::kActivityNames[k]] = n;
    d.activations += n;
  }
  d.records = replay.records();
  d.collectives = replay.collectives();
  d.stats = model::collect_stats(Duration(d.end.to_seconds()));
  d.energy = model::collect_energy(Duration(d.end.to_seconds()));
  d.network = rack.network().totals();
  d.transfer_latencies = rack.transfer_latencies();
  d.packet_latencies = rack.packet_latencies();
  d.hbm_bytes = rack.hbm_bytes();
  d.notes = rack.notes();
  if (calibration) {
    d.compute_shapes_simulated = calibration->shapes_simulated;
    for (const auto& b : d.stats) {
      if (b.name.rfind("rack.chip", 0) != 0 || b.name.find('.', 5) != std::string::npos) continue;
      for (const auto& st : b.stats) {
        if (st.name == "ops") d.compute_ops += std::uint64_t(st.value);
      }
    }
    d.calibration_seconds = std::chrono::duration<double>(tc - t0).count();
  }
  log->info("step {:.3f} ms simulated in {:.2f} s", d.end.to_seconds() * 1e3, d.wall_seconds);
  return d;
}

std::size_t rack_chip_count(const config::LoadedConfig& loaded) {
  if (!loaded.config.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: expected a rack preset", loaded.path));
  }
  return topo::build_topology(loaded.config.rack->topology,
                              loaded.config.chip ? &*loaded.config.chip : nullptr,
                              {&loaded.provenance, "/rack/topology",
                               config::memory_budget(loaded.config.sim)})
      .chip_count();
}

}  // namespace trnsim::run
