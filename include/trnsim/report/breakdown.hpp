// SPDX-License-Identifier: MIT
// The step breakdown: where each rank's step time went. Every instant of [0, step end] of a rank
// is exactly one of
//   compute          a compute or memory op runs and no communication does;
//   overlapped       compute and communication at once (communication hidden behind compute);
//   exposed          communication alone (collectives after their last member arrived, sends,
//                    receives);
//   waiting          neither: waiting in a collective for its last member, or idle (a dependency
//                    on another rank, the end of the step after the rank's last op).
// so the four add up to the step time, exactly (integer picoseconds). Phases and layers take a
// share of each instant: an instant of compute is split evenly among the compute ops running.
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/replay/engine.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::report {

struct Parts {
  std::uint64_t compute_ps = 0, overlapped_ps = 0, exposed_ps = 0, waiting_ps = 0;
  std::uint64_t waiting_for_peers_ps = 0;  // of waiting: inside collectives before the last arrival, in recvs before the send
  std::uint64_t total_ps() const { return compute_ps + overlapped_ps + exposed_ps + waiting_ps; }
};

// The same split in nanoseconds for one phase or layer (shares of instants: not integers).
struct Share {
  double compute_ns = 0, overlapped_ns = 0, exposed_ns = 0, waiting_for_peers_ns = 0;
  std::size_t ops = 0;
};

struct RankBreakdown {
  int rank = 0;
  std::uint64_t end_ps = 0;  // end of the rank's last op
  Parts parts;
  std::map<std::string, Share> by_phase;  // "forward" .. "gradient_sync", "unattributed"
  std::map<int, Share> by_layer;          // ops with a layer only
};

struct PathStep {
  std::size_t index = 0;       // into the rank's ops
  std::uint64_t start_ps = 0, end_ps = 0;
  std::uint64_t gap_ps = 0;    // from the end of the dependency on the path to this op's start
  std::uint64_t peers_ps = 0;  // collectives: waiting for the last member; recvs: for the send to start
};

struct Breakdown {
  std::uint64_t step_ps = 0;
  std::vector<RankBreakdown> ranks;
  int slowest_rank = 0;
  std::vector<PathStep> critical_path;  // of the slowest rank, in time order
};

// `step` is the makespan; every op of `w` has one record in `records`.
Breakdown compute_breakdown(const trace::Workload& w, const std::vector<replay::OpRecord>& records,
                            const std::vector<replay::CollectiveRecord>& collectives,
                            const sc_core::sc_time& step);

// "compute" for compute and memory ops and delays, "communication" for collectives and
// point-to-point ops.
bool is_communication(trace::OpKind k);

}  // namespace trnsim::report
