// SPDX-License-Identifier: MIT
// One whole-rack simulation: resolve, build from the registry, replay, collect.
#include "trnsim/run/run.hpp"

#include <fmt/format.h>

#include <chrono>

#include "common/activity.hpp"
#include "fabric/fabric.hpp"
#include "rack.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"
#include "trnsim/log.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::run {

namespace {

// The chip of each rank: the replay places rank r on chip r (no placement yet).
std::vector<int> used_chips(const trace::Workload& w) {
  std::vector<int> out;
  for (int r = 0; r < w.num_ranks(); ++r) out.push_back(r);
  return out;
}

}  // namespace

RunData run_workload(const config::LoadedConfig& loaded, const trace::Workload& w,
                     const ProgressFn& progress) {
  const config::Config& cfg = loaded.config;
  const resolve::RackPlan plan = resolve::resolve_rack(loaded);
  registry::Registry registry;
  registry::register_builtin_models(registry);
  auto log = logger("run");
  log->info("{}: {} chips, workload {} ({} ranks)", cfg.rack->name, plan.topology.chip_count(),
            w.name, w.num_ranks());

  const auto t0 = std::chrono::steady_clock::now();
  model::Simulation sim;
  Rack rack("rack", plan, cfg.replay, registry, &loaded.provenance);
  replay::Replay replay("replay", w, rack, cfg.replay);
  // Samples of cumulative energy and traffic, taken when an op or transfer completes at least
  // `interval` after the last one (a sampling process of its own would add timed events, and
  // their order among simultaneous events moves results).
  std::vector<Sample> samples;
  const std::vector<int> used = used_chips(w);
  // The busy time of every link direction, read in place at each sample.
  std::vector<std::string> link_names;
  std::vector<const model::Stat*> link_busy;
  for (const auto& b : model::collect_stats(Duration(0.0))) {
    if (b.name.find(".link") == std::string::npos) continue;
    const auto* block = dynamic_cast<const model::Block*>(sc_core::sc_find_object(b.name.c_str()));
    if (!block) continue;
    for (const auto& st : block->stats().all()) {
      if (st.name == "busy") {
        link_names.push_back(b.name);
        link_busy.push_back(&st);
      }
    }
  }
  sc_core::sc_time interval(1, sc_core::SC_US);
  sc_core::sc_time last_sample = sc_core::SC_ZERO_TIME;
  auto take_sample = [&] {
    last_sample = sc_core::sc_time_stamp();
    Sample s;
    s.t_s = sc_core::sc_time_stamp().to_seconds();
    const Duration now(s.t_s);
    for (int c : used) s.used_chips_dynamic_j += model::collect_energy(now, &rack.chip(c)).dynamic.si;
    if (const sc_core::sc_object* fabric = sc_core::sc_find_object("rack.fabric")) {
      s.fabric_dynamic_j = model::collect_energy(now, fabric).dynamic.si;
    }
    s.hbm_bytes = rack.hbm_bytes();
    s.fabric_wire_bytes = rack.network().totals().wire_bytes;
    for (const model::Stat* st : link_busy) s.link_busy_s.push_back(float(st->value));
    samples.push_back(std::move(s));
    if (progress) {
      std::size_t total = 0;
      for (const auto& r : w.ranks) total += r.ops.size();
      progress({sc_core::sc_time_stamp().to_seconds(), replay.records().size(), total,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
    }
  };
  std::vector<PacketSample> packets;
  if (auto* fabric = dynamic_cast<model::Fabric*>(&rack.network())) {
    fabric->set_delivery_observer([&](const model::Packet& p) {
      const auto& req = p.transfer->record.request;
      packets.push_back({int(req.src.v), int(req.dst.v),
                         float((p.t_link + p.t_switch + p.t_forward).to_seconds()),
                         float(p.t_queue.to_seconds())});
    });
  }
  take_sample();
  rack.set_observer([&] {
    if (sc_core::sc_time_stamp() < last_sample + interval) return;
    take_sample();
    if (samples.size() == 2 * kMaxSamples + 1) {
      for (std::size_t i = 1; i <= kMaxSamples; ++i) samples[i] = std::move(samples[2 * i]);
      samples.resize(kMaxSamples + 1);
      interval = interval * 2;
    }
  });
  const auto t1 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const auto t2 = std::chrono::steady_clock::now();
  replay.check_finished();
  take_sample();

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
  d.transfers = rack.transfer_samples();
  d.samples = std::move(samples);
  d.link_names = std::move(link_names);
  d.packets = std::move(packets);
  d.sample_interval_s = interval.to_seconds();
  for (const auto& l : plan.topology.links()) d.fabric_capacity_bytes_per_s += 2 * l.bandwidth.si;
  d.rank_to_chip = used;
  d.first_tier_chips = plan.topology.first_tier_chips();
  for (int c = 0; c < rack.chip_count(); ++c) {
    d.chip_energy.push_back(model::collect_energy(Duration(d.end.to_seconds()), &rack.chip(c)));
  }
  if (const sc_core::sc_object* fabric = sc_core::sc_find_object("rack.fabric")) {
    d.fabric_energy = model::collect_energy(Duration(d.end.to_seconds()), fabric);
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
