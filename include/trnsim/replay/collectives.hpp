// SPDX-License-Identifier: MIT
// Collective algorithms as schedules of point-to-point transfers and local reductions.
// Planning is pure arithmetic (no SystemC): the replay engine executes the schedule over the
// machine's network, so the time of a collective emerges from the links and switches it uses.
// The planner sees where the members run (GroupLayout): rings follow the physical one-hop
// cycles of a torus, several edge-disjoint cycles run at once, hierarchical levels follow the
// servers of a switched rack. docs/models/collectives.md.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trnsim/params/replay.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::replay {

using config::CollectiveAlgorithm;

struct Transfer {
  int peer = 0;  // member index within the group; < 0: the replica -peer away (plan_folded)
  std::uint64_t bytes = 0;
  bool reduce = false;  // a receive combined with local data as soon as it has arrived
};

// What a step is for, for the time breakdown of a collective (launch, sync, wire, reduction).
enum class StepKind { data, sync };

// One step of one member: wait `fixed_s` (launch, descriptor generation), issue the sends, then
// wait for the receives in order, reducing each one marked `reduce` as soon as it has arrived
// (so the reduction of one chunk overlaps the arrival of the next). Sends of a step depend on
// everything before the step (the data they carry was received or reduced earlier).
struct Step {
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  std::uint64_t reduce_bytes = 0;  // sum of the reduced receives
  StepKind kind = StepKind::data;
  double launch_s = 0;      // collective launch, on a member's first step
  double descriptor_s = 0;  // descriptor generation before the step's DMAs
};

struct Schedule {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  std::vector<std::vector<Step>> members;  // members[i] = steps of group member i
  int rings = 0;  // rings run at once (ring family), 0 otherwise
  // Why the planner did not run what was asked (a fallback) or how it built the rings; the
  // engine logs each distinct one once as a warning.
  std::vector<std::string> notes;
};

// Cycles found for a set of member chips, kept by whoever owns the layout (the machine): the
// search costs milliseconds, and a trace plans thousands of collectives on the same groups.
struct CycleCache {
  // (chips of the members, cycles wanted; 0 = one ring) -> rings as member orders
  std::map<std::pair<std::vector<int>, int>, std::vector<std::vector<int>>> found;
};

// Where the members of a group run, and the shape of the rack between their chips.
struct GroupLayout {
  std::vector<int> chip;  // chip of each member; empty: member i on chip i
  // One-hop neighbours of every chip of the rack (chips joined by a direct link), sorted.
  std::vector<std::vector<int>> neighbours;
  std::vector<int> torus_dims;  // chip = x + X*(y + Y*z); empty when the rack is not a torus
  int tier_chips = 0;           // chips per server (switched rack), 0 when none
  bool switched = false;        // chips reach each other through switches
  std::shared_ptr<CycleCache> cache;  // optional
};

std::string_view algorithm_name(CollectiveAlgorithm a);

// The algorithm used for `op` on the group: the configured one, or by size and group shape when
// it is auto (docs/models/collectives.md#selection-auto). An algorithm that cannot run on this
// group falls back to the ring, with the reason appended to `notes`.
CollectiveAlgorithm choose_algorithm(const trace::Op& op, int n,
                                     const config::CollectiveParams& params,
                                     const GroupLayout& layout, std::vector<std::string>* notes);

// Plans the collective whose members' ops are `ops` (ops[i] is member i's op; they agree on kind
// and size, except all_to_all_v whose send_bytes differ per member). `root_member` is the member
// index of a broadcast root.
Schedule plan_collective(const std::vector<const trace::Op*>& ops, int root_member,
                         const config::CollectiveParams& params, const GroupLayout& layout = {});

// The steps of one member of a collective whose group has one member in each of `replicas`
// alike data-parallel replicas (symmetry folding, docs/scaling.md): recursive halving-doubling
// as plan_collective plans it for `replicas` members (the same launch, descriptor and handshake
// costs), seen from member 0. A transfer's `peer` is minus the replica distance. When `replicas`
// is not a power of two, the member is one that also takes the data of an extra replica before
// and returns its result after (the slowest member). Only all_reduce, reduce_scatter and
// all_gather.
Schedule plan_folded(const trace::Op& op, int replicas, const config::CollectiveParams& params);

// A one-hop cycle through the member chips of `layout` (member indices; members sharing a chip
// are consecutive), or empty when none was found within the search bound.
std::vector<int> physical_ring(const GroupLayout& layout, int n);
// Up to `max_cycles` edge-disjoint one-hop Hamiltonian cycles through the distinct chips of the
// members (as member orders); fewer when the search finds fewer.
std::vector<std::vector<int>> disjoint_rings(const GroupLayout& layout, int n, int max_cycles);

// Bytes each member sends in total (for bus-bandwidth accounting and tests), data steps only.
std::vector<std::uint64_t> bytes_sent(const Schedule& s);

}  // namespace trnsim::replay
