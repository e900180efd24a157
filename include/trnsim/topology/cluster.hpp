// SPDX-License-Identifier: MIT
// The scale-out network of a cluster of UltraServers (docs/scaling.md): one EFA NIC per chip
// into a multi-tier Clos (a fat tree, with oversubscription per tier), routed by rule: up to the
// lowest tier whose subtree holds both ends, then down. Nothing here holds a table per (node,
// destination), so a million-chip cluster costs a few numbers; small clusters can also be
// built as one explicit topology (every UltraServer and switch), routed breadth-first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/params/cluster.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::topo {

class ScaleOut {
 public:
  // Checks `p` for `ultraservers` UltraServers of `chips` chips each: every tier below the top
  // has up and down ports, and the top tier reaches every NIC. Throws TopologyError naming
  // `origin`'s file and /cluster/scale_out/tiers/<k> otherwise.
  // `failed`: one up link out of service (a what-if), checked against the tiers.
  ScaleOut(const config::ScaleOutParams& p, int ultraservers, int chips,
           const SpecOrigin& origin,
           const std::optional<config::FailedLinkParams>& failed = std::nullopt);

  // Tiers built: the lowest tier that reaches every NIC is the top one (all its ports down).
  int tiers() const { return int(tiers_.size()); }
  int ultraservers() const { return n_; }
  int chips_per_ultraserver() const { return c_; }
  std::uint64_t nics() const { return std::uint64_t(n_) * std::uint64_t(c_); }
  const config::ScaleOutParams& params() const { return p_; }

  // The leaf port index of chip `c` of UltraServer `u`: rail-major when rail optimised (chip c of
  // every UltraServer side by side), UltraServer-major otherwise.
  std::uint64_t port(int u, int c) const;
  // The lowest tier (1 = the leaf) whose switch group holds both NICs; 0 for one NIC.
  int meet_tier(int u, int c, int v, int d) const;
  // Links from (u, c) to (v, d) on the rule's path: NIC, up links, down links, NIC (0 for one chip).
  int hops(int u, int c, int v, int d) const;

  // Per tier k = 1..tiers(): down and up ports of one switch, NICs under one tier-k group, the
  // group's switches, all tier-k switches, and the up-link bandwidth per NIC of the group when
  // every NIC sends up at once (k < tiers()).
  struct Tier {
    int down = 0, up = 0;
    std::uint64_t span = 0;       // NICs under one group
    std::uint64_t group_switches = 0;
    std::uint64_t switches = 0;
    double up_bandwidth = 0;      // each up link, bytes/s per direction
    double share_per_nic = 0;     // bytes/s per direction
  };
  const Tier& tier(int k) const { return tiers_.at(std::size_t(k - 1)); }
  const std::optional<config::FailedLinkParams>& failed_link() const { return failed_; }
  // Whether up link `up` of switch `sw` of group `group` of tier k is the failed one.
  bool is_failed(int k, std::uint64_t group, std::uint64_t sw, int up) const;

 private:
  config::ScaleOutParams p_;
  int n_ = 0, c_ = 0;
  std::vector<Tier> tiers_;
  std::optional<config::FailedLinkParams> failed_;
};

// Every chip of the cluster (named "us<u>.chip<c>", numbered UltraServer by UltraServer), its NIC
// link and every switch of `so`, checked (radix of every switch) and routed breadth-first as one
// topology: the scale-out network alone (traffic inside an UltraServer stays on its own fabric,
// so chips do not forward here). For small clusters: its route tables grow with nodes x chips.
Topology build_scale_out_topology(const ScaleOut& so, const SpecOrigin& origin);

// A path given link direction by link direction (2 * link + 0 for a -> b, + 1 for b -> a) with
// the nodes passed through, for networks that take explicit paths.
struct DirectedPath {
  std::vector<std::uint32_t> dirs;
  std::vector<NodeId> via;
};

// The scale-out network as one data-parallel replica sees it when all replicas are alike
// (symmetry folding, docs/scaling.md): the replica's chips (chip ids as in the UltraServer),
// their NIC links, and one node per switch group of each tier that the replica's NICs reach,
// joined by one link per group whose capacity is the replica's share of that group's up links
// (its NICs in the group x the share per NIC). With every replica doing the same, each real up
// link carries the same load, so the replica's flows on these links see what they would see
// among all replicas' flows (exact for even spreading over equal-cost links).
class FoldedScaleOut {
 public:
  // The replica is UltraServers 0 .. `per_replica` - 1; its chips are numbered UltraServer by
  // UltraServer (chip c of UltraServer u is u * chips + c).
  explicit FoldedScaleOut(const ScaleOut& so, int per_replica = 1);
  const Topology& topology() const { return topology_; }
  const ScaleOut& scale_out() const { return so_; }
  int per_replica() const { return per_replica_; }
  // A transfer from chip `c` of this replica to chip `d` of the UltraServer `distance`
  // UltraServers after d's (a whole number of replicas away, or 0 between two UltraServers of
  // this replica): up from c's NIC to the meeting tier, then down the links of d's NIC, which by
  // symmetry carry what d's counterpart that far away receives. The path may end where it began.
  DirectedPath path(int c, int distance, int d) const;

 private:
  ScaleOut so_;
  int per_replica_ = 1;
  Topology topology_;
  // Per tier k (index k-1) and chip: the node of the chip's tier-k group, and the link from that
  // group up to tier k+1 (k < tiers); nic_link_[c] is chip c's NIC link.
  std::vector<std::vector<NodeId>> group_node_;
  std::vector<std::vector<LinkId>> up_link_;
  std::vector<LinkId> nic_link_;
};

}  // namespace trnsim::topo
