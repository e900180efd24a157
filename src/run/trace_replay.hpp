// SPDX-License-Identifier: MIT
// The trace replay as a simulation's driver (trnsim/run/simulation.hpp): a workload trace read
// before the run, a cluster's levels split from it, its ranks placed on chips, and the replay
// engine's per-rank dependency scheduling on the rack.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trnsim/replay/engine.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/run/cluster.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/run/replay_driver.hpp"

namespace trnsim::run {

class TraceReplay : public ReplayDriver {
 public:
  // `workload` must outlive the driver and the RunData it fills. With `check` false, plan()
  // keeps the estimate without refusing a run beyond the budgets (run --estimate).
  explicit TraceReplay(const trace::Workload& workload, bool check = true);
  ~TraceReplay() override;

  void plan(const Setup& s) override;
  const replay::WorkSource& source() const override { return *source_; }
  void elaborate(const Setup& s, replay::Machine& machine) override;
  std::string name() const override;
  void collect(RunData& d) const override;
  // What plan() estimated (run/estimate.hpp).
  const WorkEstimate& estimate() const { return estimate_; }

 private:
  // The workload replayed: a cluster's (its levels split), or the one given.
  const trace::Workload& workload() const { return cluster_ ? cluster_->workload : given_; }

  const trace::Workload& given_;
  std::shared_ptr<const ClusterWorkload> cluster_;
  std::unique_ptr<replay::TraceSource> source_;  // of workload()
  int cluster_ultraservers_ = 0, cluster_simulated_ = 0, cluster_tiers_ = 0;
  bool check_ = true;
  WorkEstimate estimate_;
};

}  // namespace trnsim::run
