// SPDX-License-Identifier: MIT
// The part of a simulation's driver (run/simulation.hpp) that every workload replayed by the
// replay engine shares: the chip of each rank, the replay::Replay that schedules the source's
// ops on the rack with /sim's fast-forward, and what the probes and the collection read from it.
// The trace replay (run/trace_replay.hpp) and the inference iteration (infer/iteration.hpp)
// derive from it; they keep what is their own (where the work comes from, its estimate).
#pragma once

#include <systemc>

#include <cstddef>
#include <memory>
#include <vector>

#include "trnsim/replay/engine.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/run/simulation.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

class ReplayDriver : public Driver {
 public:
  ~ReplayDriver() override;
  std::vector<int> used_chips() const override;
  std::size_t ops_done() const override;
  std::size_t ops_total() const override { return ops_total_; }
  sc_core::sc_time finish() override;

 protected:
  // In plan(): the chip of each rank of `w`, and its ops in all (for the progress line).
  void place(std::vector<int> rank_chip, const trace::Workload& w);
  // In elaborate(): the replay of `source` on `machine`, fast-forward as /sim and the plan set it.
  void start_replay(const Setup& s, replay::Machine& machine, replay::WorkSource& source,
                    const replay::ScaleOutGroups& scale_out = {});
  // In collect(): the replay's records, collectives, fast-forward figures, the rank placement
  // and the peak of live op processes.
  void collect_replay(RunData& d) const;
  const std::vector<int>& rank_chip() const { return rank_chip_; }

 private:
  std::vector<int> rank_chip_;
  std::size_t ops_total_ = 0;
  std::unique_ptr<replay::Replay> replay_;
};

}  // namespace trnsim::run
