// SPDX-License-Identifier: MIT
// The /cluster section: many UltraServers (copies of /rack) joined by a scale-out network of EFA
// NICs and a multi-tier Clos of switches (docs/scaling.md). The workload is one data-parallel
// replica per UltraServer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

// One tier of the scale-out Clos. Tier 1 is the leaf, whose down ports take the chips' NICs;
// a tier-k switch's down ports take tier-(k-1) switches. `ports` splits into down and up ports
// by the oversubscription (down : up); the top tier has no up ports.
struct ScaleOutTier {
  std::string name;
  int ports = 64;
  double oversubscription = 1;  // down : up bandwidth below this tier's switches
  Duration latency{};           // switch traversal
  Bandwidth up_bandwidth{};     // each link to the next tier, per direction (not for the top tier)
  Duration up_latency{};        // that link's latency
  template <class V>
  void visit(V& v) {
    v.field("name", name, "tier name (leaf, spine, core)", Required{});
    v.field("ports", ports, "switch radix", InRange{2, 1 << 16});
    v.field("oversubscription", oversubscription,
            "down : up ratio of each switch's ports (1: non-blocking; ignored at the top tier)",
            InRange{1, 64});
    v.field("latency", latency, "switch traversal latency", Required{}, AtLeast{0});
    v.field("up_bandwidth", up_bandwidth,
            "bandwidth per direction of each link to the next tier (default: the NIC's)",
            AtLeast{0});
    v.field("up_latency", up_latency, "latency of each link to the next tier", AtLeast{0});
  }
};

struct ScaleOutParams {
  Bandwidth nic_bandwidth = Bandwidth(25e9);  // EFA: 200 Gb/s per chip, per direction
  Duration nic_latency = Duration(0);         // NIC, host path and cable to the leaf, one way
  bool rail_optimized = true;
  std::vector<ScaleOutTier> tiers;
  std::string model = "flow";  // registry role scale_out
  template <class V>
  void visit(V& v) {
    v.field("model", model,
            "model of the folded scale-out network (registry role scale_out; `trnsim list-types`)");
    v.field("nic_bandwidth", nic_bandwidth, "EFA bandwidth per chip, per direction", Positive{});
    v.field("nic_latency", nic_latency,
            "one-way latency from a chip's HBM through its NIC to the leaf switch", AtLeast{0});
    v.field("rail_optimized", rail_optimized,
            "chip c of every UltraServer on the leaves of rail c (else consecutive chips share "
            "a leaf)");
    v.field("tiers", tiers, "switch tiers from the leaf up", Required{});
  }
};

// What-ifs (docs/scaling.md#what-ifs). Folded, the simulated UltraServer is the one they hit:
// the others wait for it at every collective across UltraServers, so it sets the step.
struct StragglerParams {
  int ultraserver = 0;
  int chip = 0;          // within its UltraServer
  double slowdown = 1;   // its compute ops take this many times as long
  template <class V>
  void visit(V& v) {
    v.field("ultraserver", ultraserver, "UltraServer of the slow chip", AtLeast{0});
    v.field("chip", chip, "the slow chip, within its UltraServer", AtLeast{0});
    v.field("slowdown", slowdown, "its compute ops take this many times as long",
            InRange{1, 1000});
  }
};

struct FailedLinkParams {
  int ultraserver = 0;
  int chip = 0;  // within its UltraServer
  int tier = 1;  // the failed link goes up from this tier's switch above the chip's NIC
  template <class V>
  void visit(V& v) {
    v.field("ultraserver", ultraserver, "UltraServer of the chip below the failed link",
            AtLeast{0});
    v.field("chip", chip, "the chip whose NIC's path up crosses the failed link", AtLeast{0});
    v.field("tier", tier, "tier of the switch the failed up link leaves (1: the leaf)",
            AtLeast{1});
  }
};

struct ClusterParams {
  int ultraservers = 1;
  // UltraServers one replica of the trace spans (its expert or pipeline groups may cross them,
  // over the scale-out network); the cluster holds ultraservers / this many replicas.
  int ultraservers_per_replica = 1;
  // Simulate one UltraServer for all (their trace and placement are alike) when true; every
  // UltraServer otherwise.
  bool fold = true;
  ScaleOutParams scale_out{};
  // Groups of the trace that span the UltraServers (data-parallel gradient groups): a group
  // whose name is one of these prefixes followed by digits. The trace is one replica.
  std::vector<std::string> replica_groups{"dp", "edp"};
  std::optional<StragglerParams> straggler;
  std::optional<FailedLinkParams> failed_link;
  template <class V>
  void visit(V& v) {
    v.field("ultraservers", ultraservers, "UltraServers in the cluster, one data-parallel "
            "replica each", InRange{1, 1 << 24});
    v.field("ultraservers_per_replica", ultraservers_per_replica,
            "UltraServers one replica of the trace spans (its groups may cross them)",
            InRange{1, 1 << 20});
    v.field("fold", fold,
            "simulate one UltraServer for all alike ones (symmetry folding, docs/scaling.md)");
    v.field("scale_out", scale_out, "the EFA network between UltraServers", Required{});
    v.field("replica_groups", replica_groups,
            "trace group-name prefixes whose collectives span the UltraServers");
    v.field("straggler", straggler, "what-if: one chip whose compute is slower");
    v.field("failed_link", failed_link, "what-if: one failed up link of the scale-out network");
  }
};

}  // namespace trnsim::config
