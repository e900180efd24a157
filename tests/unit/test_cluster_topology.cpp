// SPDX-License-Identifier: MIT
// The scale-out Clos by rule (trnsim/topology/cluster.hpp): tiers, spans and shares computed by
// hand, rule routes against breadth-first routes of the same network built explicitly, the
// folded view's paths and capacities, and the errors for a tier that cannot reach every NIC.
#include <gtest/gtest.h>

#include "trnsim/error.hpp"
#include "trnsim/topology/cluster.hpp"

namespace {

using trnsim::topo::ChipId;
using trnsim::topo::FoldedScaleOut;
using trnsim::topo::ScaleOut;

trnsim::config::ScaleOutTier tier(const char* name, int ports, double over) {
  trnsim::config::ScaleOutTier t;
  t.name = name;
  t.ports = ports;
  t.oversubscription = over;
  t.latency = trnsim::Duration(500e-9);
  t.up_latency = trnsim::Duration(50e-9);
  return t;
}

// 8-port switches: a leaf has 4 NICs below and 4 links up; a spine (top) takes 8 leaves.
trnsim::config::ScaleOutParams two_tiers(bool rail = true, double over = 1) {
  trnsim::config::ScaleOutParams p;
  p.nic_bandwidth = trnsim::Bandwidth(25e9);
  p.nic_latency = trnsim::Duration(6.5e-6);
  p.rail_optimized = rail;
  p.tiers = {tier("leaf", 8, over), tier("spine", 8, 1), tier("core", 8, 1)};
  return p;
}

TEST(ScaleOut, TiersSpansAndSharesByHand) {
  // 4 UltraServers of 4 chips: 16 NICs. Leaf: 4 down, 4 up; the spine reaches 4 x 8 = 32 >= 16,
  // so it is the top tier and the core is not built.
  const ScaleOut so(two_tiers(), 4, 4, {});
  ASSERT_EQ(so.tiers(), 2);
  EXPECT_EQ(so.tier(1).down, 4);
  EXPECT_EQ(so.tier(1).up, 4);
  EXPECT_EQ(so.tier(1).span, 4u);
  EXPECT_EQ(so.tier(1).switches, 4u);  // 16 NICs / 4
  EXPECT_EQ(so.tier(2).down, 8);
  EXPECT_EQ(so.tier(2).span, 32u);
  EXPECT_EQ(so.tier(2).switches, 4u);  // one group of 4 spines (one per leaf up link)
  EXPECT_DOUBLE_EQ(so.tier(1).share_per_nic, 25e9);  // 4 up links of 25 GB/s over 4 NICs
}

TEST(ScaleOut, OversubscriptionShrinksTheShare) {
  // 8 ports at 3:1 -> 6 down, 2 up: each NIC's share of the up links is 2 x 25 / 6 GB/s.
  const ScaleOut so(two_tiers(true, 3), 4, 4, {});
  EXPECT_EQ(so.tier(1).down, 6);
  EXPECT_EQ(so.tier(1).up, 2);
  EXPECT_DOUBLE_EQ(so.tier(1).share_per_nic, 2 * 25e9 / 6);
}

TEST(ScaleOut, RailOptimisedPortsAndMeetingTiers) {
  const ScaleOut so(two_tiers(), 4, 4, {});
  // Rail-major: chip c of UltraServer u on port 4c + u, so one leaf holds rail c of all four.
  EXPECT_EQ(so.port(1, 0), 1u);
  EXPECT_EQ(so.port(0, 1), 4u);
  EXPECT_EQ(so.meet_tier(0, 2, 3, 2), 1);  // same rail: the leaf
  EXPECT_EQ(so.meet_tier(0, 0, 0, 1), 2);  // other rail: the spine
  EXPECT_EQ(so.hops(0, 2, 3, 2), 2);
  EXPECT_EQ(so.hops(0, 0, 1, 3), 4);
  EXPECT_EQ(so.hops(1, 1, 1, 1), 0);
  const ScaleOut flat(two_tiers(false), 4, 4, {});
  // UltraServer-major: the four chips of one UltraServer share a leaf.
  EXPECT_EQ(flat.meet_tier(0, 0, 0, 3), 1);
  EXPECT_EQ(flat.meet_tier(0, 0, 1, 0), 2);
}

// Every pair of chips: the rule's links equal the breadth-first route's on the network built
// explicitly, for rail-optimised, UltraServer-major and oversubscribed networks of 2 and 3 tiers.
TEST(ScaleOut, RuleRoutesEqualBreadthFirstRoutes) {
  struct Case {
    bool rail;
    double over;
    int n, c;
  };
  for (const Case k : {Case{true, 1, 4, 4}, Case{false, 1, 4, 4}, Case{true, 3, 3, 5},
                       Case{true, 1, 9, 4}, Case{false, 1, 6, 8}}) {
    const ScaleOut so(two_tiers(k.rail, k.over), k.n, k.c, {});
    const trnsim::topo::Topology t = trnsim::topo::build_scale_out_topology(so, {});
    ASSERT_EQ(t.chip_count(), std::size_t(k.n * k.c));
    for (int a = 0; a < k.n * k.c; ++a) {
      for (int b = 0; b < k.n * k.c; ++b) {
        const int bfs = t.routes().hops(t.chip_node(ChipId{std::uint32_t(a)}), ChipId{std::uint32_t(b)});
        EXPECT_EQ(bfs, so.hops(a / k.c, a % k.c, b / k.c, b % k.c))
            << "rail " << k.rail << " over " << k.over << " tiers " << so.tiers() << ": chip " << a
            << " -> " << b;
      }
    }
  }
}

TEST(ScaleOut, ThreeTiersWhenTwoDoNotReach) {
  // 9 UltraServers of 4 chips = 36 NICs > 32: the core is built.
  const ScaleOut so(two_tiers(), 9, 4, {});
  ASSERT_EQ(so.tiers(), 3);
  EXPECT_EQ(so.tier(2).down, 4);
  EXPECT_EQ(so.tier(2).span, 16u);
  EXPECT_EQ(so.tier(3).span, 128u);
  // Rail 0 holds ports 0..8, under one spine group (ports 0..15); rail 1 holds ports 9..17,
  // across two.
  EXPECT_EQ(so.meet_tier(0, 0, 8, 0), 2);
  EXPECT_EQ(so.meet_tier(0, 1, 8, 1), 3);
}

TEST(ScaleOut, ATopTierThatCannotReachEveryNicNamesTheTier) {
  auto p = two_tiers();
  p.tiers.pop_back();  // leaf and spine: 4 x 8 = 32 NICs at most
  try {
    ScaleOut so(p, 16, 4, {});
    FAIL() << "64 NICs were accepted";
  } catch (const trnsim::TopologyError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("/cluster/scale_out/tiers/1/ports"), std::string::npos) << m;
    EXPECT_NE(m.find("\"spine\" reaches 32 NICs"), std::string::npos) << m;
    EXPECT_NE(m.find("has 64 (16 UltraServers x 4 chips)"), std::string::npos) << m;
  }
}

TEST(FoldedScaleOut, PathsGoUpToTheMeetingTierAndDownTheDestinationsNic) {
  const ScaleOut so(two_tiers(), 4, 4, {});
  const FoldedScaleOut f(so);
  const auto& t = f.topology();
  // The replica's 4 chips, one leaf each (rail-optimised), one spine group.
  EXPECT_EQ(t.chip_count(), 4u);
  EXPECT_EQ(t.nodes().size(), 4u + 4u + 1u);
  // Same rail, the replica 1 away: up the NIC, down the same NIC's other direction.
  const auto same = f.path(2, 1, 2);
  ASSERT_EQ(same.dirs.size(), 2u);
  EXPECT_EQ(same.dirs[0] / 2, same.dirs[1] / 2);
  EXPECT_NE(same.dirs[0], same.dirs[1]);
  EXPECT_EQ(same.via.size(), 1u);
  // Another rail: NIC, leaf up link, the other leaf's up link downwards, the other NIC.
  const auto other = f.path(0, 1, 3);
  ASSERT_EQ(other.dirs.size(), 4u);
  EXPECT_EQ(other.via.size(), 3u);
  // A leaf's up link is the replica's share: its one NIC x 25 GB/s.
  const auto& up = t.link(trnsim::topo::LinkId{other.dirs[1] / 2});
  EXPECT_DOUBLE_EQ(up.bandwidth.si, 25e9);
}

TEST(FoldedScaleOut, SharedGroupsCarryTheReplicasShare) {
  // UltraServer-major: the replica's 4 chips share one leaf, whose up links carry 4 x 25 GB/s.
  const ScaleOut so(two_tiers(false), 4, 4, {});
  const FoldedScaleOut f(so);
  const auto p = f.path(0, 1, 0);  // chip 0 of the next UltraServer: another leaf
  ASSERT_EQ(p.dirs.size(), 4u);
  EXPECT_DOUBLE_EQ(f.topology().link(trnsim::topo::LinkId{p.dirs[1] / 2}).bandwidth.si, 4 * 25e9);
}

// What-if: one of a leaf's 4 up links fails. 16 UltraServers of 1 chip: rail 0 over four leaves.
TEST(ScaleOut, AFailedUpLinkIsRemovedOrTakesItsShare) {
  trnsim::config::FailedLinkParams f;
  f.ultraserver = 0;
  f.chip = 0;
  f.tier = 1;
  const ScaleOut whole(two_tiers(), 16, 1, {});
  const ScaleOut failed(two_tiers(), 16, 1, {}, f);
  const auto a = trnsim::topo::build_scale_out_topology(whole, {});
  const auto b = trnsim::topo::build_scale_out_topology(failed, {});
  EXPECT_EQ(a.links().size(), b.links().size() + 1);
  EXPECT_EQ(b.routes().hops(b.chip_node(ChipId{0}), ChipId{4}), 4);  // around it
  // Folded: the replica under that leaf keeps 3 of its 4 links' share.
  const FoldedScaleOut folded(failed);
  const auto p = folded.path(0, 4, 0);
  ASSERT_EQ(p.dirs.size(), 4u);
  EXPECT_DOUBLE_EQ(folded.topology().link(trnsim::topo::LinkId{p.dirs[1] / 2}).bandwidth.si,
                   0.75 * 25e9);
  f.tier = 2;  // the top tier has no up links
  try {
    ScaleOut so(two_tiers(), 16, 1, {}, f);
    FAIL() << "a failed link above the top tier was accepted";
  } catch (const trnsim::TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("/cluster/failed_link/tier: expected a tier with up "
                                         "links, 1 to 1 (the cluster uses 2 tiers), got 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
