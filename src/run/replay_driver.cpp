// SPDX-License-Identifier: MIT
#include "trnsim/run/replay_driver.hpp"

#include <algorithm>

namespace trnsim::run {

ReplayDriver::~ReplayDriver() = default;

void ReplayDriver::place(std::vector<int> rank_chip, const trace::Workload& w) {
  rank_chip_ = std::move(rank_chip);
  ops_total_ = 0;
  for (const auto& r : w.ranks) ops_total_ += r.ops.size();
}

void ReplayDriver::start_replay(const Setup& s, replay::Machine& machine,
                                replay::WorkSource& source,
                                const replay::ScaleOutGroups& scale_out) {
  const config::Config& cfg = s.loaded.config;
  replay::FastForward ff{s.plan.fast_forward, cfg.sim.fast_forward_tolerance,
                         cfg.sim.fast_forward_size_tolerance,
                         cfg.sim.fast_forward_collectives_by_shape};
  replay_ = std::make_unique<replay::Replay>("replay", source, machine, cfg.replay, rank_chip_, ff,
                                             scale_out);
}

std::vector<int> ReplayDriver::used_chips() const {
  std::vector<int> used = rank_chip_;  // several ranks may share one chip
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

std::size_t ReplayDriver::ops_done() const { return replay_->records().size(); }

sc_core::sc_time ReplayDriver::finish() {
  replay_->check_finished();
  return replay_->makespan();
}

void ReplayDriver::collect_replay(RunData& d) const {
  d.records = replay_->records();
  d.fast_forward_stats = replay_->fast_forward_stats();
  d.collectives = replay_->collectives();
  d.rank_to_chip = rank_chip_;
  d.peak_op_processes = replay_->peak_live_ops();
}

}  // namespace trnsim::run
