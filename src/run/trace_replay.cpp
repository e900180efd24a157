// SPDX-License-Identifier: MIT
#include "trace_replay.hpp"

#include <fmt/format.h>

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
  place(cluster_ ? cluster_placement(*cluster_,
                                     resolve::place_ranks(plan.placement,
                                                          cluster_->ranks_per_replica,
                                                          std::size_t(replica_chips)),
                                     replica_chips)
                 : resolve::place_ranks(plan.placement, w.num_ranks(), plan.topology.chip_count()),
        w);
  // Before anything is built or calibrated: refuse what would not fit.
  const EventUnits units = event_units(*s.models.network, *s.models.compute, plan);
  estimate_ = estimate_work(w, plan, cfg.replay, units);
  if (check_) check_estimate(estimate_, cfg.sim, fmt::format("workload {}", name()));
}

void TraceReplay::elaborate(const Setup& s, replay::Machine& machine) {
  start_replay(s, machine, *source_, cluster_ ? cluster_->scale_out : replay::ScaleOutGroups{});
}

void TraceReplay::collect(RunData& d) const {
  d.workload = &workload();
  if (cluster_) {
    d.cluster = cluster_;
    d.cluster_ultraservers = cluster_ultraservers_;
    d.cluster_simulated_ultraservers = cluster_simulated_;
    d.cluster_tiers = cluster_tiers_;
  }
  collect_replay(d);
}

}  // namespace trnsim::run
