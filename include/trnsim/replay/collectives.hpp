// SPDX-License-Identifier: MIT
// Collective algorithms as schedules of point-to-point transfers and local reductions.
// Planning is pure arithmetic (no SystemC): the replay engine executes the schedule over the
// fabric model, so the time of a collective emerges from the links and switches it uses.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trnsim/config/replay_params.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::replay {

using config::CollectiveAlgorithm;

struct Transfer {
  int peer = 0;  // member index within the group
  std::uint64_t bytes = 0;
};

// One step of one member: issue the sends, wait for the receives, then reduce. Sends of a step
// depend on everything before the step (the data they carry was received or reduced earlier).
struct Step {
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  std::uint64_t reduce_bytes = 0;  // bytes combined on the chip after the receives
};

struct Schedule {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  std::vector<std::vector<Step>> members;  // members[i] = steps of group member i
};

std::string_view algorithm_name(CollectiveAlgorithm a);

// The algorithm used for `op` on a group of `n` members: the configured one, or by size when it
// is auto. Algorithms that do not apply (rdh on a group that is not a power of two, hierarchical
// when local_size does not divide n) fall back to ring; all-to-all is always direct (mesh).
CollectiveAlgorithm choose_algorithm(const trace::Op& op, int n,
                                     const config::CollectiveParams& params, int local_size);

// Plans the collective whose members' ops are `ops` (ops[i] is member i's op; they agree on kind
// and size, except all_to_all_v whose send_bytes differ per member). `root_member` is the member
// index of a broadcast root. local_size: ranks per first level of the hierarchical algorithm.
Schedule plan_collective(const std::vector<const trace::Op*>& ops, int root_member,
                         const config::CollectiveParams& params, int local_size);

// Bytes each member sends in total (for bus-bandwidth accounting and tests).
std::vector<std::uint64_t> bytes_sent(const Schedule& s);

}  // namespace trnsim::replay
