// SPDX-License-Identifier: MIT
// Topology generators, validation, routes and summary figures against hand-computed values.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "trnsim/config/config.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::topo {
namespace {

using namespace trnsim::literals;

LinkClass link_class(Bandwidth bw, int count = 1, int lanes = 0) {
  LinkClass lc;
  lc.bandwidth = bw;
  lc.latency = 10_ns;
  lc.lanes = lanes;
  lc.count = count;
  return lc;
}

SwitchClass switch_class(int ports) {
  SwitchClass sc;
  sc.ports = ports;
  sc.latency = 150_ns;
  return sc;
}

TopologySpec torus_spec(std::vector<int> dims, std::vector<Bandwidth> bws, bool wrap = true) {
  TopologySpec spec;
  TorusGen g;
  g.dims = std::move(dims);
  for (Bandwidth bw : bws) g.dim_links.push_back(link_class(bw));
  g.wrap = wrap;
  g.forward_latency = 50_ns;
  spec.torus = g;
  return spec;
}

// The Trn3 Gen2 UltraServer shape: 2 racks x 18 servers x 4 chips, one L1 per server, two L2
// per rack, chips of server s and s + 18 paired by inter-rack links.
TopologySpec two_level_spec(bool inter_rack = true) {
  TopologySpec spec;
  TwoLevelGen g;
  g.racks = 2;
  g.servers = 36;
  g.chips_per_server = 4;
  g.l1_per_server = 1;
  g.l2_per_rack = 2;
  g.chip_to_l1 = link_class(256_GBps);
  g.up_link = link_class(640_GBps);
  if (inter_rack) g.inter_rack = link_class(128_GBps);
  g.l1 = switch_class(20);
  g.l2 = switch_class(18);
  spec.two_level = g;
  return spec;
}

TopologySpec clos_spec() {
  TopologySpec spec;
  FoldedClosGen g;
  g.leaves = 4;
  g.chips_per_leaf = 4;
  g.spines = 2;
  g.chip_to_leaf = link_class(100_GBps);
  g.leaf_to_spine = link_class(200_GBps);
  g.leaf = switch_class(8);
  g.spine = switch_class(8);
  spec.folded_clos = g;
  return spec;
}

NodeSpec node(std::string id, NodeKind kind = NodeKind::chip, int ports = 0) {
  NodeSpec n;
  n.id = std::move(id);
  n.kind = kind;
  n.ports = ports;
  if (kind != NodeKind::chip) n.latency = 100_ns;
  return n;
}

LinkSpec link(std::string a, std::string b, Bandwidth bw = 100_GBps) {
  LinkSpec l;
  l.a = std::move(a);
  l.b = std::move(b);
  l.bandwidth = bw;
  l.latency = 10_ns;
  return l;
}

// Two chips behind one switch.
TopologySpec star_spec() {
  TopologySpec spec;
  spec.nodes = {node("c0"), node("c1"), node("sw", NodeKind::switch_, 4)};
  spec.links = {link("c0", "sw"), link("c1", "sw")};
  return spec;
}

const SpecOrigin no_file{};

Topology build(const TopologySpec& spec) { return build_topology(spec, nullptr, no_file); }

// The message of the TopologyError that building `spec` throws (fails the test if none).
std::string error_of(const TopologySpec& spec, const config::ChipParams* chip = nullptr,
                     const SpecOrigin& origin = no_file) {
  try {
    build_topology(spec, chip, origin);
  } catch (const TopologyError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a TopologyError";
  return "";
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
  << "message: " << (haystack)

int hop_distance_bfs(const Topology& t, NodeId from, NodeId to) {
  // Plain BFS over all nodes that forward, as an independent check of the route table.
  std::vector<int> dist(t.nodes().size(), -1);
  std::vector<NodeId> queue{from};
  dist[from.v] = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const NodeId u = queue[i];
    if (u == to) return dist[u.v];
    if (u != from && !t.node(u).forwards) continue;
    for (LinkId l : t.incident(u)) {
      const NodeId w = t.other_end(l, u);
      if (dist[w.v] < 0) {
        dist[w.v] = dist[u.v] + 1;
        queue.push_back(w);
      }
    }
  }
  return -1;
}

// ---- generators ---------------------------------------------------------------------------------

// The first tier each generator builds (hierarchical collectives' local size), from the presets:
// a 4x4 torus plane, a 4x4x4 torus's XY plane, 16 and 4 chips per server.
TEST(Topology, FirstTierChipsOfEachPresetFamily) {
  const auto tier = [](const std::string& rack) {
    const auto l = config::load_config(std::string(TRNSIM_SOURCE_DIR) + "/configs/racks/" + rack);
    return build_topology(l.config.rack->topology, &*l.config.chip, {&l.provenance, "/rack/topology"})
        .first_tier_chips();
  };
  EXPECT_EQ(tier("trn2-instance.json"), 16);
  EXPECT_EQ(tier("trn2-ultraserver.json"), 16);
  EXPECT_EQ(tier("trn3-gen1-ultraserver.json"), 16);
  EXPECT_EQ(tier("trn3-gen2-ultraserver.json"), 4);
}

TEST(Torus, Naming4x4AndLinks) {
  const Topology t = build(torus_spec({4, 4}, {100_GBps, 100_GBps}));
  EXPECT_EQ(t.chip_count(), 16u);
  EXPECT_EQ(t.links().size(), 32u);  // 2 links per chip
  EXPECT_EQ(t.node(t.chip_node(ChipId{5})).name, "chip5");
  // chip5 is (1,1): neighbours (0,1)=4, (2,1)=6, (1,0)=1, (1,2)=9.
  std::set<std::string> nb;
  for (LinkId l : t.incident(t.chip_node(ChipId{5}))) {
    nb.insert(t.node(t.other_end(l, t.chip_node(ChipId{5}))).name);
  }
  EXPECT_EQ(nb, (std::set<std::string>{"chip4", "chip6", "chip1", "chip9"}));
  EXPECT_TRUE(t.node(t.chip_node(ChipId{0})).forwards);
  EXPECT_EQ(t.node(t.chip_node(ChipId{0})).latency, 50_ns);
  EXPECT_EQ(t.torus_dims(), (std::vector<int>{4, 4}));
}

TEST(Torus, SizeTwoGivesOneLinkSizeOneNone) {
  const Topology t = build(torus_spec({2, 1, 3}, {10_GBps, 10_GBps, 10_GBps}));
  EXPECT_EQ(t.chip_count(), 6u);
  // dim 0 (size 2): 1 link per pair x 3 pairs; dim 1: none; dim 2 (ring of 3): 3 links x 2.
  EXPECT_EQ(t.links().size(), 3u + 6u);
}

TEST(Torus, MeshWithoutWrap) {
  const Topology t = build(torus_spec({4, 4}, {100_GBps, 100_GBps}, false));
  EXPECT_EQ(t.links().size(), 24u);
  const auto s = summarize(t);
  EXPECT_EQ(s.diameter_hops, 6);
  EXPECT_EQ(s.bisection, 400_GBps);  // 4 links across the middle
}

TEST(Torus, ParallelLinksCount) {
  TopologySpec spec = torus_spec({4}, {100_GBps});
  spec.torus->dim_links[0].count = 2;
  const Topology t = build(spec);
  EXPECT_EQ(t.links().size(), 8u);
  EXPECT_EQ(t.routes().next_hops(t.chip_node(ChipId{0}), ChipId{1}).size(), 2u);
}

TEST(TwoLevel, Counts144Chips) {
  const Topology t = build(two_level_spec());
  EXPECT_EQ(t.chip_count(), 144u);
  const auto s = summarize(t);
  EXPECT_EQ(s.chips, 144u);
  EXPECT_EQ(s.switches, 36u + 4u);
  EXPECT_EQ(s.links, 144u + 72u + 72u);  // chip-L1, L1-L2, inter-rack
  ASSERT_TRUE(t.find("l1.s3.0"));
  ASSERT_TRUE(t.find("l2.r1.1"));
  EXPECT_EQ(t.node(t.chip_node(ChipId{143})).name, "chip143");
  // chip 1 of server 0 pairs with chip 1 of server 18 (chip 73).
  bool paired = false;
  for (LinkId l : t.incident(*t.find("chip1"))) {
    paired = paired || t.node(t.other_end(l, *t.find("chip1"))).name == "chip73";
  }
  EXPECT_TRUE(paired);
}

TEST(TwoLevel, DirectUpLinks) {
  TopologySpec spec = two_level_spec(false);
  spec.two_level->racks = 1;
  spec.two_level->servers = 4;
  spec.two_level->inter_server = InterServerPath::direct;
  spec.two_level->l2 = switch_class(16);
  const Topology t = build(spec);
  EXPECT_EQ(t.links().size(), 16u + 16u * 2u);
  const auto s = summarize(t);
  EXPECT_EQ(s.diameter_hops, 2);  // chip -> L1 or L2 -> chip
  EXPECT_EQ(s.diameter_switch_hops, 1);
}

TEST(TwoLevel, InterRackRingOverThreeRacks) {
  TopologySpec spec = two_level_spec();
  spec.two_level->racks = 3;
  spec.two_level->servers = 3;
  spec.two_level->chips_per_server = 2;
  const Topology t = build(spec);
  // 6 chip-L1 + 3 x 2 up links + 3 rings of 2 positions.
  EXPECT_EQ(t.links().size(), 6u + 6u + 6u);
}

TEST(FoldedClos, NamesAndDistances) {
  const Topology t = build(clos_spec());
  EXPECT_TRUE(t.find("leaf3"));
  EXPECT_TRUE(t.find("spine1"));
  const auto s = summarize(t);
  EXPECT_EQ(s.chips, 16u);
  EXPECT_EQ(s.switches, 6u);
  EXPECT_EQ(s.diameter_hops, 4);
  EXPECT_EQ(s.diameter_switch_hops, 3);
  // Half the leaves each way: 2 leaves x 2 spines x 200 GB/s cross, less than 8 chip links.
  EXPECT_EQ(s.bisection, 800_GBps);
}

// ---- hand-computed summaries --------------------------------------------------------------------

TEST(Summary, Torus4x4) {
  const auto s = summarize(build(torus_spec({4, 4}, {100_GBps, 100_GBps})));
  EXPECT_EQ(s.chips, 16u);
  EXPECT_EQ(s.diameter_hops, 4);
  EXPECT_EQ(s.diameter_switch_hops, 0);
  // Ring of 4: distances 1,2,1 -> two dims: mean over 15 others = (sum 2*16 - 0)/15... = 32/15.
  EXPECT_NEAR(s.mean_hops, 32.0 / 15.0, 1e-12);
  EXPECT_EQ(s.bisection, 800_GBps);  // 4 rings x 2 links
  EXPECT_EQ(s.injection_min, 400_GBps);
  EXPECT_EQ(s.injection_max, 400_GBps);
  EXPECT_GT(s.bisection_cuts_tried, 3);
}

TEST(Summary, Torus4x4x4) {
  const auto s = summarize(build(torus_spec({4, 4, 4}, {100_GBps, 100_GBps, 100_GBps})));
  EXPECT_EQ(s.chips, 64u);
  EXPECT_EQ(s.diameter_hops, 6);
  EXPECT_EQ(s.bisection, 3200_GBps);  // 16 rings x 2 links
}

// A fuzz finding (fuzz_topology): links of 1.24e19 B/s, more than an int64 holds in bytes per
// second, overflowed the max-flow capacities (UBSan: signed overflow in summary.cpp). The cut is
// now computed in coarser units when the links add up to more than 2^60 B/s: still the thin
// dimension's 4 rings x 2 links of 628 GB/s, to the unit's rounding.
TEST(Summary, LinksBeyondInt64BytesPerSecondStillCut) {
  const auto s = summarize(build(torus_spec({4, 4}, {Bandwidth(1.2431000088e19), 628_GBps})));
  EXPECT_NEAR(s.bisection.si, 8 * 628e9, 8 * 628e9 * 1e-6);
}

TEST(Summary, Trn2LikeTorusCutsTheThinDimension) {
  const auto s = summarize(build(torus_spec({4, 4, 4}, {128_GBps, 128_GBps, 64_GBps})));
  EXPECT_EQ(s.bisection, 64_GBps * 32);
  EXPECT_EQ(s.injection_max, 128_GBps * 4 + 64_GBps * 2);
}

TEST(Summary, TwoLevelRackCut) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = summarize(build(two_level_spec()));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 1.0);
  // Same server: 2 hops; same rack: chip-L1-L2-L1-chip; other rack: one inter-rack hop more.
  EXPECT_EQ(s.diameter_hops, 5);
  EXPECT_EQ(s.diameter_switch_hops, 3);
  // Racks are joined only by 72 inter-rack links.
  EXPECT_EQ(s.bisection, 128_GBps * 72);
  EXPECT_EQ(s.injection_min, 256_GBps + 128_GBps);
}

// ---- routes -------------------------------------------------------------------------------------

TEST(Routes, LengthIsBfsDistanceAndDeterministic) {
  for (const TopologySpec& spec :
       {torus_spec({4, 4, 4}, {1_GBps, 1_GBps, 1_GBps}), two_level_spec(), clos_spec()}) {
    const Topology t = build(spec);
    for (std::uint32_t a = 0; a < t.chip_count(); a += 3) {
      for (std::uint32_t b = 0; b < t.chip_count(); b += 5) {
        const int d = hop_distance_bfs(t, t.chip_node(ChipId{a}), t.chip_node(ChipId{b}));
        for (std::uint64_t flow : {0ULL, 7ULL, 123456789ULL}) {
          const auto p = t.path(ChipId{a}, ChipId{b}, flow);
          EXPECT_EQ(int(p.size()), d);
          EXPECT_EQ(t.routes().hops(t.chip_node(ChipId{a}), ChipId{b}), d);
          EXPECT_EQ(p, t.path(ChipId{a}, ChipId{b}, flow));
        }
      }
    }
  }
}

TEST(Routes, FlowsSpreadOverEqualCostHops) {
  const Topology t = build(torus_spec({4, 4}, {1_GBps, 1_GBps}));
  // chip0 -> chip10 (2,2): 4 hops, 4 equal first hops.
  const auto alts = t.routes().next_hops(t.chip_node(ChipId{0}), ChipId{10});
  EXPECT_EQ(alts.size(), 4u);
  EXPECT_TRUE(std::is_sorted(alts.begin(), alts.end()));
  std::set<std::uint32_t> used;
  for (std::uint64_t f = 0; f < 64; ++f) used.insert(t.routes().next_hop(t.chip_node(ChipId{0}), ChipId{10}, f).v);
  EXPECT_EQ(used.size(), 4u);
}

// The same graph as an explicit one (chips with a latency forward), which is routed by the
// breadth-first search's table: nodes and links in the torus's order, so link ids agree.
TopologySpec as_explicit(const Topology& t) {
  TopologySpec spec;
  for (const Node& n : t.nodes()) {
    NodeSpec ns = node(n.name);
    ns.latency = n.latency;
    spec.nodes.push_back(ns);
  }
  for (const Link& l : t.links()) spec.links.push_back(link(t.node(l.a).name, t.node(l.b).name));
  return spec;
}

// A torus is routed on demand; its hops and every next-hop list equal the table a breadth-first
// search builds for the same graph: rings of 5 and 3, a size-2 dimension (one link), a mesh and
// parallel links.
TEST(Routes, TorusOnDemandEqualsTheTable) {
  TopologySpec twice = torus_spec({4, 3}, {1_GBps, 1_GBps});
  twice.torus->dim_links[0].count = 2;
  for (const TopologySpec& spec : {torus_spec({5, 3, 2}, {1_GBps, 1_GBps, 1_GBps}),
                                   torus_spec({4, 3}, {1_GBps, 1_GBps}, false), twice}) {
    const Topology t = build(spec);
    const Topology table = build(as_explicit(t));
    ASSERT_TRUE(t.routes().on_demand());
    ASSERT_FALSE(table.routes().on_demand());
    ASSERT_EQ(t.links().size(), table.links().size());
    EXPECT_EQ(t.routes().diameter(), table.routes().diameter());
    for (std::uint32_t v = 0; v < t.nodes().size(); ++v) {
      for (std::uint32_t d = 0; d < t.chip_count(); ++d) {
        EXPECT_EQ(t.routes().hops(NodeId{v}, ChipId{d}), table.routes().hops(NodeId{v}, ChipId{d}));
        const auto a = t.routes().next_hops(NodeId{v}, ChipId{d});
        const auto b = table.routes().next_hops(NodeId{v}, ChipId{d});
        EXPECT_EQ(std::vector<LinkId>(a.begin(), a.end()), std::vector<LinkId>(b.begin(), b.end()))
            << "node " << v << " to chip " << d;
        if (v != d) {
          for (std::uint64_t flow : {0ULL, 5ULL, 99ULL}) {
            EXPECT_EQ(t.routes().next_hop(NodeId{v}, ChipId{d}, flow).v,
                      table.routes().next_hop(NodeId{v}, ChipId{d}, flow).v);
          }
        }
      }
    }
    const auto s = summarize(t), e = summarize(table);
    EXPECT_EQ(s.diameter_hops, e.diameter_hops);
    EXPECT_EQ(s.mean_hops, e.mean_hops);
    EXPECT_EQ(s.diameter_switch_hops, 0);
  }
}

// By hand: in a 5x3x2 torus chip 0 (0,0,0) to chip 29 (4,2,1) is 1 + 1 + 1 hops (both rings
// close backwards), diameter 2 + 1 + 1; a 4x3 mesh's corner to corner is 3 + 2.
TEST(Routes, TorusHopsByHand) {
  const Topology t = build(torus_spec({5, 3, 2}, {1_GBps, 1_GBps, 1_GBps}));
  EXPECT_EQ(t.routes().hops(NodeId{0}, ChipId{29}), 3);
  EXPECT_EQ(t.routes().hops(NodeId{0}, ChipId{2}), 2);  // (2,0,0): two hops forward
  EXPECT_EQ(t.routes().diameter(), 4);
  const Topology m = build(torus_spec({4, 3}, {1_GBps, 1_GBps}, false));
  EXPECT_EQ(m.routes().hops(NodeId{0}, ChipId{11}), 5);
  EXPECT_EQ(m.routes().diameter(), 5);
  // chip0 -> chip11 (3,2): the +x and +y links, two alternatives.
  EXPECT_EQ(m.routes().next_hops(NodeId{0}, ChipId{11}).size(), 2u);
}

// A torus's memory is its graph, checked from the dims before anything is expanded.
TEST(Routes, TorusBeyondTheBudgetIsRefusedFromItsDims) {
  SpecOrigin small;
  small.memory_budget = 1000000;  // 1 MB: 64 x 64 is 4096 nodes and 8192 links
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of(torus_spec({64, 64}, {1_GBps, 1_GBps}), nullptr, small);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  EXPECT_HAS(msg, "/rack/topology/torus/dims: 4096 nodes and 8192 links need about");
  EXPECT_HAS(msg, "more than the memory budget of 0.001 GB (/sim/memory_budget); use smaller dims");
}

// Intermediate nodes of every route (all alternatives) between chips in a switched topology.
void expect_no_chip_transit(const Topology& t) {
  for (std::uint32_t d = 0; d < t.chip_count(); ++d) {
    for (std::uint32_t v = 0; v < t.nodes().size(); ++v) {
      if (t.routes().hops(NodeId{v}, ChipId{d}) <= 0) continue;
      for (LinkId l : t.routes().next_hops(NodeId{v}, ChipId{d})) {
        const NodeId w = t.other_end(l, NodeId{v});
        if (w == t.chip_node(ChipId{d})) continue;
        EXPECT_NE(t.node(w).kind, NodeKind::chip) << t.node(w).name << " transited";
      }
    }
  }
}

TEST(Routes, SwitchedTopologiesNeverTransitChips) {
  expect_no_chip_transit(build(clos_spec()));
  TopologySpec one_rack = two_level_spec(false);
  one_rack.two_level->racks = 1;
  one_rack.two_level->l2 = switch_class(36);
  expect_no_chip_transit(build(one_rack));
}

TEST(Validate, RacksWithoutInterRackOrSharedSwitchAreDisconnected) {
  EXPECT_HAS(error_of(two_level_spec(false)),
             "<topology>:/rack/topology/two_level: node \"chip72\" is not connected to node "
             "\"chip0\"");
}

TEST(Routes, InterRackChipsOnlyRelayBetweenRacks) {
  const Topology t = build(two_level_spec());
  auto is_inter_rack = [&](LinkId l) {
    return t.node(t.link(l).a).kind == NodeKind::chip && t.node(t.link(l).b).kind == NodeKind::chip;
  };
  auto rack_of = [](std::uint32_t chip) { return chip / 72; };
  for (std::uint32_t d = 0; d < t.chip_count(); ++d) {
    const NodeId dst = t.chip_node(ChipId{d});
    for (std::uint32_t v = 0; v < t.nodes().size(); ++v) {
      if (t.routes().hops(NodeId{v}, ChipId{d}) <= 0) continue;
      for (LinkId in : t.routes().next_hops(NodeId{v}, ChipId{d})) {
        const NodeId w = t.other_end(in, NodeId{v});
        if (w == dst || t.node(w).kind != NodeKind::chip) continue;
        // w relays: exactly one of the link in and the link out crosses racks.
        for (LinkId out : t.routes().next_hops(w, ChipId{d})) {
          EXPECT_NE(is_inter_rack(in), is_inter_rack(out))
              << t.node(w).name << " relays towards chip" << d;
        }
      }
    }
  }
  // Within a rack no chip relays: every route between chips of one rack has only switches inside.
  for (std::uint32_t a = 0; a < 72; a += 7) {
    for (std::uint32_t b = 0; b < 72; b += 5) {
      if (rack_of(a) != rack_of(b)) continue;
      NodeId at = t.chip_node(ChipId{a});
      for (LinkId l : t.path(ChipId{a}, ChipId{b})) {
        at = t.other_end(l, at);
        if (at != t.chip_node(ChipId{b})) {
          EXPECT_NE(t.node(at).kind, NodeKind::chip);
        }
      }
    }
  }
}

TEST(Routes, ExplicitChipForwardsOnlyWithLatency) {
  TopologySpec spec;
  spec.nodes = {node("a"), node("b"), node("c")};
  spec.links = {link("a", "b"), link("b", "c")};
  const std::string msg = error_of(spec);
  EXPECT_HAS(msg, "cannot reach chip");
  spec.nodes[1].latency = 20_ns;
  const Topology t = build(spec);
  EXPECT_EQ(t.path(ChipId{0}, ChipId{2}).size(), 2u);
}

TEST(Routes, PortsDefaultToNextFreeAndIncidentIsPortOrdered) {
  TopologySpec spec = star_spec();
  spec.links[0].b_port = 0;
  spec.links[1].b_port = 3;
  spec.nodes.push_back(node("c2"));
  spec.links.push_back(link("c2", "sw"));
  const Topology t = build(spec);
  const NodeId sw = *t.find("sw");
  EXPECT_EQ(t.link(LinkId{2}).b_port, 1);
  const auto inc = t.incident(sw);
  ASSERT_EQ(inc.size(), 3u);
  EXPECT_EQ(inc[0].v, 0u);
  EXPECT_EQ(inc[1].v, 2u);
  EXPECT_EQ(inc[2].v, 1u);
}

// ---- validation ---------------------------------------------------------------------------------

TEST(Validate, DanglingLink) {
  TopologySpec spec = star_spec();
  spec.links[1].b = "sww";
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "<topology>:/rack/topology/links/1/b:");
  EXPECT_HAS(msg, "unknown node \"sww\"");
  EXPECT_HAS(msg, "did you mean \"sw\"");
}

TEST(Validate, DuplicateId) {
  TopologySpec spec = star_spec();
  spec.nodes[1].id = "c0";
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/nodes/1/id:");
  EXPECT_HAS(msg, "duplicate node id \"c0\"");
}

TEST(Validate, PortUsedTwice) {
  TopologySpec spec = star_spec();
  spec.links[0].b_port = 2;
  spec.links[1].b_port = 2;
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/links/1/b_port:");
  EXPECT_HAS(msg, "port 2 of node \"sw\" is already used by link 0");
}

TEST(Validate, PortOutOfRange) {
  TopologySpec spec = star_spec();
  spec.links[0].b_port = 4;
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/links/0/b_port:");
  EXPECT_HAS(msg, "\"sw\"");
}

TEST(Validate, ExplicitRadix) {
  TopologySpec spec = star_spec();
  spec.nodes[2].ports = 1;
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/nodes/2/ports:");
  EXPECT_HAS(msg, "switch \"sw\" has 2 links but a radix of 1");
}

TEST(Validate, GeneratedRadixPointsAtSwitchClass) {
  TopologySpec spec = two_level_spec();
  spec.two_level->chip_to_l1.count = 6;  // 24 chip links + 2 up links per L1
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/two_level/l1/ports: switch \"l1.s0.0\" has 26 links but a "
                  "radix of 20");
}

TEST(Validate, SwitchNeedsPortsAndLatency) {
  TopologySpec spec = star_spec();
  spec.nodes[2].ports = 0;
  EXPECT_HAS(error_of(spec), "/rack/topology/nodes/2/ports:");
  spec = star_spec();
  spec.nodes[2].latency = Duration{};
  EXPECT_HAS(error_of(spec), "/rack/topology/nodes/2/latency: switch \"sw\"");
  TopologySpec clos = clos_spec();
  clos.folded_clos->spine.latency = Duration{};
  EXPECT_HAS(error_of(clos), "/rack/topology/folded_clos/spine/latency: switch \"spine0\"");
}

TEST(Validate, LaneBudget) {
  TopologySpec spec = star_spec();
  spec.nodes[2].lanes = 16;
  spec.links[0].lanes = 8;
  spec.links[1].lanes = 16;
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/nodes/2/lanes:");
  EXPECT_HAS(msg, "\"sw\" needs 24 lanes");
}

TEST(Validate, ChipLaneBudgetFromChipParams) {
  TopologySpec spec = torus_spec({4, 4}, {100_GBps, 100_GBps});
  spec.torus->dim_links[0].lanes = 32;
  spec.torus->dim_links[1].lanes = 48;
  config::ChipParams chip;
  chip.link.lanes = 160;
  EXPECT_NO_THROW(build_topology(spec, &chip, no_file));  // 2 x 32 + 2 x 48 = 160
  chip.link.lanes = 159;
  EXPECT_HAS(error_of(spec, &chip), "needs 160 lanes");
}

TEST(Validate, ChipLaneBudgetExceeded) {
  TopologySpec spec = torus_spec({4, 4}, {100_GBps, 100_GBps});
  spec.torus->dim_links[0].lanes = 32;
  spec.torus->dim_links[1].lanes = 64;
  config::ChipParams chip;
  chip.link.lanes = 160;
  const auto msg = error_of(spec, &chip);
  EXPECT_HAS(msg, "chip \"chip0\" needs 192 lanes for its links but has a budget of 160 "
                  "(chip.link.lanes)");
}

TEST(Validate, Disconnected) {
  TopologySpec spec = star_spec();
  spec.nodes.push_back(node("lonely"));
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/nodes/3:");
  EXPECT_HAS(msg, "node \"lonely\" is not connected");
}

TEST(Validate, SelfLink) {
  TopologySpec spec = star_spec();
  spec.links.push_back(link("sw", "sw"));
  const auto msg = error_of(spec);
  EXPECT_HAS(msg, "/rack/topology/links/2/b:");
  EXPECT_HAS(msg, "connects node \"sw\" to itself");
}

TEST(Validate, GeneratorAndExplicit) {
  TopologySpec spec = star_spec();
  spec.torus = torus_spec({2}, {1_GBps}).torus;
  EXPECT_HAS(error_of(spec), "<topology>:/rack/topology: expected exactly one of");
  EXPECT_HAS(error_of(spec), "got torus and explicit nodes/links");
}

TEST(Validate, Neither) { EXPECT_HAS(error_of(TopologySpec{}), "exactly one of"); }

TEST(Validate, NoChip) {
  TopologySpec spec;
  spec.nodes = {node("s0", NodeKind::switch_, 2), node("s1", NodeKind::switch_, 2)};
  spec.links = {link("s0", "s1")};
  EXPECT_HAS(error_of(spec), "expected at least one chip");
}

TEST(Validate, TorusDimLinksPerDimension) {
  const auto msg = error_of(torus_spec({4, 4}, {1_GBps}));
  EXPECT_HAS(msg, "/rack/topology/torus/dim_links: expected 2 link classes");
}

TEST(Validate, ServersSplitEvenly) {
  TopologySpec spec = two_level_spec();
  spec.two_level->servers = 35;
  EXPECT_HAS(error_of(spec), "/rack/topology/two_level/servers: expected a multiple of racks");
}

TEST(Validate, LinkEnergyDefaultsToChip) {
  config::ChipParams chip;
  chip.link.energy = EnergyPerBit(7e-12);
  TopologySpec spec = two_level_spec();
  spec.two_level->up_link.energy = EnergyPerBit(11e-12);
  const Topology t = build_topology(spec, &chip, no_file);
  EXPECT_EQ(t.link(LinkId{0}).energy, EnergyPerBit(7e-12));     // chip_to_l1: chip default
  EXPECT_EQ(t.link(LinkId{144}).energy, EnergyPerBit(11e-12));  // first up link: given
  EXPECT_EQ(build(spec).link(LinkId{0}).energy, EnergyPerBit{});
}

// ---- JSON through the config reader, with the file named in errors ------------------------------

TEST(Json, ErrorNamesFileAndPointer) {
  const auto j = config::Json::parse(R"({
    "nodes": [ {"id": "c0"}, {"id": "c1"}, {"id": "sw", "kind": "switch", "ports": 4,
               "latency": "100ns"} ],
    "links": [ {"a": "c0", "b": "sw", "bandwidth": "100GB/s", "latency": "10ns"},
               {"a": "c1", "b": "sx", "bandwidth": "100GB/s", "latency": "10ns"} ]
  })");
  config::Provenance prov;
  prov.record_tree(j, "/rack/topology", "configs/x.json");
  TopologySpec spec;
  config::JsonReader::read(j, "/rack/topology", prov, spec);
  const auto msg = error_of(spec, nullptr, SpecOrigin{&prov, "/rack/topology"});
  EXPECT_HAS(msg, "configs/x.json:/rack/topology/links/1/b: link 1 names unknown node \"sx\"");
}

TEST(Dot, LabelsNodesAndLinks) {
  const std::string dot = to_dot(build(star_spec()));
  EXPECT_HAS(dot, "graph G {");
  EXPECT_HAS(dot, "label=\"sw\", shape=diamond");
  EXPECT_HAS(dot, "label=\"c0\", shape=box");
  EXPECT_HAS(dot, "label=\"100GB/s\"");
}

}  // namespace
}  // namespace trnsim::topo
