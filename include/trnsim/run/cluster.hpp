// SPDX-License-Identifier: MIT
// A cluster's workload (docs/scaling.md): the trace is one data-parallel replica, one per
// UltraServer. Each collective of a group that spans the UltraServers (/cluster/replica_groups)
// runs hierarchically: a reduce-scatter among the replica's members of the group, the
// collective across the replicas (one group per member position), an all-gather among the
// replica's members. Folded, only one replica is simulated and the groups across replicas are
// folded; unfolded, every replica is.
#pragma once

#include <string>
#include <vector>

#include "trnsim/params/cluster.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

struct ClusterWorkload {
  trace::Workload workload;
  replay::ScaleOutGroups scale_out;
  int replicas = 1;             // data-parallel replicas the workload stands for
  int simulated_replicas = 1;   // replicas in `workload`
  int ranks_per_replica = 0;
  int collectives_split = 0;    // collectives of the replica that span the UltraServers
};

// Whether `group` is one of `prefixes` followed by one or more digits.
bool is_replica_group(const std::string& group, const std::vector<std::string>& prefixes);

// The workload of `replica` on `cluster`. Throws WorkloadError naming the op for a collective
// across the UltraServers the hierarchy cannot split (all_to_all, broadcast, barrier).
ClusterWorkload make_cluster_workload(const trace::Workload& replica,
                                      const config::ClusterParams& cluster);

// Chips of the ranks of `cw`: `replica_chips[r]` is the chip of rank r within its replica of
// `chips` chips (its UltraServers'); rank u * ranks_per_replica + r of the unfolded workload is
// on chip u * chips + replica_chips[r].
std::vector<int> cluster_placement(const ClusterWorkload& cw, const std::vector<int>& replica_chips,
                                   int chips);

}  // namespace trnsim::run
