// SPDX-License-Identifier: MIT
#include "trace_replay.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "trnsim/log.hpp"
#include "trnsim/run/estimate.hpp"

namespace trnsim::run {

TraceReplay::TraceReplay(const trace::Workload& workload, bool check)
    : given_(workload), check_(check) {}

TraceReplay::~TraceReplay() = default;

std::string TraceReplay::name() const {
  return workload().name.empty() ? "(unnamed)" : workload().name;
}

void TraceReplay::plan(const Setup& s) {
  const config::Config& cfg = s.loaded.config;
  const resolve::RackPlan& plan = s.plan;
  // A cluster replays the trace as one data-parallel replica per UltraServer (docs/scaling.md).
  if (cfg.cluster) {
    cluster_ = std::make_shared<const ClusterWorkload>(make_cluster_workload(given_, *cfg.cluster));
    cluster_ultraservers_ = cfg.cluster->ultraservers;
    cluster_simulated_ = plan.simulated_ultraservers;
    cluster_tiers_ = plan.scale_out->tiers();
  }
  const trace::Workload& w = workload();
  source_ = std::make_unique<replay::TraceSource>(w);
  logger("run")->info("{}: {} chips, workload {} ({} ranks)", cfg.rack->name,
                      plan.topology.chip_count(), w.name, w.num_ranks());
  // A replica's chips: its UltraServers' (/cluster/ultraservers_per_replica).
  const int replica_chips = cluster_ ? plan.scale_out->chips_per_ultraserver() *
                                           cfg.cluster->ultraservers_per_replica
                                     : 0;
  rank_chip_ = cluster_
                   ? cluster_placement(*cluster_,
                                       resolve::place_ranks(plan.placement,
                                                            cluster_->ranks_per_replica,
                                                            std::size_t(replica_chips)),
                                       replica_chips)
                   : resolve::place_ranks(plan.placement, w.num_ranks(), plan.topology.chip_count());
  for (const auto& r : w.ranks) ops_total_ += r.ops.size();
  // Before anything is built or calibrated: refuse what would not fit.
  const EventUnits units = event_units(*s.models.network, *s.models.compute, plan);
  estimate_ = estimate_work(w, plan, cfg.replay, units);
  if (check_) check_estimate(estimate_, cfg.sim, fmt::format("workload {}", name()));
}

void TraceReplay::elaborate(const Setup& s, replay::Machine& machine) {
  const config::Config& cfg = s.loaded.config;
  replay::FastForward ff{s.plan.fast_forward, cfg.sim.fast_forward_tolerance,
                         cfg.sim.fast_forward_size_tolerance};
  replay_ = std::make_unique<replay::Replay>(
      "replay", *source_, machine, cfg.replay, rank_chip_, ff,
      cluster_ ? cluster_->scale_out : replay::ScaleOutGroups{});
}

std::vector<int> TraceReplay::used_chips() const {
  std::vector<int> used = rank_chip_;  // several ranks may share one chip
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

std::size_t TraceReplay::ops_done() const { return replay_->records().size(); }

sc_core::sc_time TraceReplay::finish() {
  replay_->check_finished();
  return replay_->makespan();
}

void TraceReplay::collect(RunData& d) const {
  d.workload = &workload();
  if (cluster_) {
    d.cluster = cluster_;
    d.cluster_ultraservers = cluster_ultraservers_;
    d.cluster_simulated_ultraservers = cluster_simulated_;
    d.cluster_tiers = cluster_tiers_;
  }
  d.records = replay_->records();
  d.fast_forward_stats = replay_->fast_forward_stats();
  d.collectives = replay_->collectives();
  d.rank_to_chip = rank_chip_;
  d.peak_op_processes = replay_->peak_live_ops();
}

}  // namespace trnsim::run
