// SPDX-License-Identifier: MIT
// One whole-rack simulation: resolve, build from the registry, replay, collect.
#include "trnsim/run/run.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "common/activity.hpp"
#include "calibrate.hpp"
#include "fabric/fabric.hpp"
#include "rack.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/cluster.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::run {

namespace {

// The SystemC object of a network (each implementation is a module).
const sc_core::sc_object* as_object(const model::Network* n) {
  const auto* o = dynamic_cast<const sc_core::sc_object*>(n);
  if (!o) throw InternalError("a network that is not a SystemC object");
  return o;
}

void add_totals(model::NetworkTotals& a, const model::NetworkTotals& b) {
  a.transfers_started += b.transfers_started;
  a.transfers_completed += b.transfers_completed;
  a.bytes_requested += b.bytes_requested;
  a.bytes_injected += b.bytes_injected;
  a.bytes_delivered += b.bytes_delivered;
  a.packets_injected += b.packets_injected;
  a.packets_delivered += b.packets_delivered;
  a.wire_bytes += b.wire_bytes;
  a.credit_stall_ns += b.credit_stall_ns;
  a.packets_in_flight += b.packets_in_flight;
  a.events += b.events;
}

}  // namespace

RunData run_workload(const config::LoadedConfig& loaded, const trace::Workload& given,
                     const ProgressFn& progress, resolve::Purpose purpose) {
  const config::Config& cfg = loaded.config;
  const resolve::RackPlan plan = *resolve::plan(loaded, purpose).rack;
  // A cluster replays the trace as one data-parallel replica per UltraServer (docs/scaling.md).
  std::shared_ptr<const ClusterWorkload> cluster;
  if (cfg.cluster) {
    cluster = std::make_shared<const ClusterWorkload>(make_cluster_workload(given, *cfg.cluster));
  }
  const trace::Workload& w = cluster ? cluster->workload : given;
  registry::Registry registry;
  registry::register_builtin_models(registry);
  auto log = logger("run");
  log->info("{}: {} chips, workload {} ({} ranks)", cfg.rack->name, plan.topology.chip_count(),
            w.name, w.num_ranks());

  // A replica's chips: its UltraServers' (/cluster/ultraservers_per_replica).
  const int replica_chips = cluster ? plan.scale_out->chips_per_ultraserver() *
                                          cfg.cluster->ultraservers_per_replica
                                    : 0;
  const std::vector<int> rank_chip =
      cluster ? cluster_placement(*cluster,
                                  resolve::place_ranks(plan.placement, cluster->ranks_per_replica,
                                                       std::size_t(replica_chips)),
                                  replica_chips)
              : resolve::place_ranks(plan.placement, w.num_ranks(), plan.topology.chip_count());
  // Before anything is built or calibrated: refuse what would not fit.
  check_estimate(estimate_work(w, plan, cfg.replay), cfg.sim,
                 fmt::format("workload {}", w.name.empty() ? "(unnamed)" : w.name));

  const auto t0 = std::chrono::steady_clock::now();
  // The op-level model's calibration elaborates tile chips in child processes: before the rack.
  // Fast-forward counts the energy and traffic of the compute ops it skips from the same
  // profiles, so a tile-model run with it calibrates too.
  std::shared_ptr<const model::OpTable> calibration;
  if (plan.chip.compute_model == "op" || plan.fast_forward) {
    registry.get(registry::Role::compute, plan.chip.compute_model, "/chip/compute/model",
                 &loaded.provenance);
    calibration = calibrate_workload(plan.chip, w, kCalibrationJobs);
  }
  const auto tc = std::chrono::steady_clock::now();
  model::Simulation sim;
  Rack rack("rack", plan, cfg.replay, registry, &loaded.provenance, calibration);
  const std::vector<model::Network*> nets = rack.networks();
  replay::FastForward ff{plan.fast_forward, cfg.sim.fast_forward_tolerance,
                         cfg.sim.fast_forward_size_tolerance};
  replay::Replay replay("replay", w, rack, cfg.replay, rank_chip, ff,
                        cluster ? cluster->scale_out : replay::ScaleOutGroups{});
  // Samples of cumulative energy and traffic, taken when an op or transfer completes at least
  // `interval` after the last one (a sampling process of its own would add timed events, and
  // their order among simultaneous events moves results).
  std::vector<Sample> samples;
  // The chips the workload runs on (several ranks may share one).
  std::vector<int> used = rank_chip;
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
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
  // The blocks whose energy each sample adds up, per used chip and per network.
  std::vector<std::vector<const model::Block*>> chip_blocks, net_blocks;
  for (int c : used) chip_blocks.push_back(model::blocks_under(&rack.chip(c)));
  for (const model::Network* net : nets) net_blocks.push_back(model::blocks_under(as_object(net)));
  sc_core::sc_time interval(1, sc_core::SC_US);
  sc_core::sc_time last_sample = sc_core::SC_ZERO_TIME;
  auto take_sample = [&] {
    last_sample = sc_core::sc_time_stamp();
    Sample s;
    s.t_s = sc_core::sc_time_stamp().to_seconds();
    for (const auto& blocks : chip_blocks) s.used_chips_dynamic_j += model::dynamic_energy(blocks).si;
    for (std::size_t i = 0; i < nets.size(); ++i) {
      s.fabric_dynamic_j += model::dynamic_energy(net_blocks[i]).si;
      s.fabric_wire_bytes += nets[i]->totals().wire_bytes;
    }
    s.hbm_bytes = rack.hbm_bytes();
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
  for (model::Network* net : nets) {
    auto* fabric = dynamic_cast<model::Fabric*>(net);
    if (!fabric) continue;
    fabric->set_delivery_observer([&](const model::Packet& p, const sc_core::sc_time&) {
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
  if (cluster) {
    d.cluster = cluster;
    d.cluster_ultraservers = cfg.cluster->ultraservers;
    d.cluster_simulated_ultraservers = plan.simulated_ultraservers;
    d.cluster_tiers = plan.scale_out->tiers();
  }
  d.chips = std::size_t(rack.chip_count());
  d.memory_model = plan.chip.memory_model;
  d.network_model = plan.fabric.model;
  d.compute_model = plan.chip.compute_model;
  d.fidelity = std::string(config::enum_name(plan.fidelity));
  d.end = replay.makespan();
  for (model::Network* net : nets) net->finish(d.end);
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
  d.fast_forward = plan.fast_forward;
  d.fast_forward_stats = replay.fast_forward_stats();
  d.op_head = calibration && plan.chip.compute_model == "tile" ? plan.chip.op_head : 1.0;
  d.fast_forward_charges_links = rack.network().charges_accounted();
  d.collectives = replay.collectives();
  d.stats = model::collect_stats(Duration(d.end.to_seconds()));
  d.energy = model::collect_energy(Duration(d.end.to_seconds()));
  for (const model::Network* net : nets) add_totals(d.network, net->totals());
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
        if (st.name == "ops_extrapolated") d.compute_ops_extrapolated += std::uint64_t(st.value);
      }
    }
    d.calibration_seconds = std::chrono::duration<double>(tc - t0).count();
  }
  d.transfers = rack.transfer_samples();
  d.samples = std::move(samples);
  d.link_names = std::move(link_names);
  d.packets = std::move(packets);
  d.sample_interval_s = interval.to_seconds();
  // Every simulated UltraServer's fabric, and the scale-out network as simulated.
  auto capacity = [](const topo::Topology& t) {
    double c = 0;
    for (const auto& l : t.links()) c += 2 * l.bandwidth.si;
    return c;
  };
  d.fabric_capacity_bytes_per_s = capacity(plan.topology) * double(plan.simulated_ultraservers);
  if (plan.folded) d.fabric_capacity_bytes_per_s += capacity(plan.folded->topology());
  if (plan.scale_out_topology) d.fabric_capacity_bytes_per_s += capacity(*plan.scale_out_topology);
  d.rank_to_chip = rank_chip;
  d.peak_op_processes = replay.peak_live_ops();
  d.peak_helper_processes = rack.peak_helper_processes();
  d.first_tier_chips = plan.topology.first_tier_chips();
  for (int c = 0; c < rack.chip_count(); ++c) {
    d.chip_energy.push_back(model::collect_energy(Duration(d.end.to_seconds()), &rack.chip(c)));
  }
  for (const model::Network* net : nets) {
    const auto e = model::collect_energy(Duration(d.end.to_seconds()), as_object(net));
    d.fabric_energy.dynamic = d.fabric_energy.dynamic + e.dynamic;
    d.fabric_energy.static_ = d.fabric_energy.static_ + e.static_;
    for (const auto& [k, j] : e.by_category_joules) d.fabric_energy.by_category_joules[k] += j;
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
