// SPDX-License-Identifier: MIT
// Collective planning: bytes on the wire per algorithm (hand-computed) and that every send has a
// matching receive.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "trnsim/replay/collectives.hpp"
#include "trnsim/replay/pattern.hpp"

using namespace trnsim;
using namespace trnsim::replay;
using trace::OpKind;

namespace {

struct Group {
  std::vector<trace::Op> ops;
  std::vector<const trace::Op*> ptrs;
  Group(OpKind kind, int n, std::uint64_t bytes) {
    trace::Op proto;
    proto.kind = kind;
    proto.bytes = bytes;
    ops.assign(std::size_t(n), proto);
    for (auto& o : ops) ptrs.push_back(&o);
  }
};

// No runtime costs and no handshake: the schedules as the algorithms alone make them.
config::CollectiveParams forced(CollectiveAlgorithm a) {
  config::CollectiveParams p;
  p.algorithm = a;
  p.sync_bytes = Bytes(0);
  p.launch_latency = Duration(0);
  p.descriptor_time = Duration(0);
  return p;
}
config::CollectiveParams local(int L) {
  auto p = forced(CollectiveAlgorithm::hierarchical);
  p.hierarchical_local_size = L;
  return p;
}
config::CollectiveParams plain() { return forced(CollectiveAlgorithm::auto_); }

// Every (src -> dst) send total equals dst's receive total from src.
void expect_balanced(const Schedule& s) {
  std::map<std::pair<int, int>, std::uint64_t> sent, got;
  std::map<std::pair<int, int>, int> nsent, ngot;
  for (int i = 0; i < int(s.members.size()); ++i) {
    for (const auto& st : s.members[std::size_t(i)]) {
      for (const auto& t : st.sends) {
        sent[{i, t.peer}] += t.bytes;
        nsent[{i, t.peer}]++;
      }
      for (const auto& t : st.recvs) {
        got[{t.peer, i}] += t.bytes;
        ngot[{t.peer, i}]++;
      }
    }
  }
  EXPECT_EQ(sent, got);
  EXPECT_EQ(nsent, ngot);
}

// A wrapped torus of `dims` (chip = x + X*(y + Y*z)) as the rack describes it to the planner.
GroupLayout torus(std::vector<int> dims) {
  GroupLayout g;
  g.torus_dims = dims;
  int n = 1;
  for (int d : dims) n *= d;
  g.neighbours.resize(std::size_t(n));
  for (int c = 0; c < n; ++c) {
    int stride = 1;
    for (int d : dims) {
      const int x = c / stride % d;
      for (int step : {1, d - 1}) {
        const int nb = c + ((x + step) % d - x) * stride;
        if (nb != c) g.neighbours[std::size_t(c)].push_back(nb);
      }
      stride *= d;
    }
    auto& v = g.neighbours[std::size_t(c)];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return g;
}

bool adjacent(const GroupLayout& g, int a, int b) {
  const auto& v = g.neighbours[std::size_t(a)];
  return std::find(v.begin(), v.end(), b) != v.end();
}

// Every send of every data step goes to a one-hop neighbour of the sender's chip.
void expect_one_hop(const Schedule& s, const GroupLayout& g) {
  for (int i = 0; i < int(s.members.size()); ++i) {
    for (const auto& st : s.members[std::size_t(i)]) {
      for (const auto& t : st.sends) EXPECT_TRUE(adjacent(g, i, t.peer)) << i << " -> " << t.peer;
    }
  }
}

std::uint64_t total_sent(const Schedule& s) {
  std::uint64_t t = 0;
  for (auto b : bytes_sent(s)) t += b;
  return t;
}

}  // namespace

TEST(Collectives, RingAllReduceSendsTwoNMinusOneOverN) {
  Group g(OpKind::all_reduce, 8, 8 * 1024);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::ring));
  ASSERT_EQ(s.members[0].size(), 14u);  // 2 (n - 1) steps
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * 7 * 1024);
  std::uint64_t reduced = 0;
  for (const auto& st : s.members[3]) reduced += st.reduce_bytes;
  EXPECT_EQ(reduced, 7u * 1024);  // n - 1 chunks reduced
  expect_balanced(s);
}

TEST(Collectives, RdhAllReduceHalvesThenDoubles) {
  Group g(OpKind::all_reduce, 8, 8 * 1024);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::rdh));
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::rdh);
  ASSERT_EQ(s.members[0].size(), 6u);  // 2 log2 n
  // halving: 4096, 2048, 1024; doubling: 1024, 2048, 4096
  const std::vector<std::uint64_t> want{4096, 2048, 1024, 1024, 2048, 4096};
  for (std::size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(s.members[5][k].sends.size(), 1u);
    EXPECT_EQ(s.members[5][k].sends[0].bytes, want[k]) << k;
  }
  EXPECT_EQ(s.members[5][0].sends[0].peer, 5 ^ 4);
  expect_balanced(s);
}

TEST(Collectives, RdhFallsBackToRingOffPowersOfTwo) {
  Group g(OpKind::all_reduce, 6, 6000);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::rdh));
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::ring);
  // not silently: the planner says why
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("6 is not a power of two"), std::string::npos) << s.notes[0];
}

TEST(Collectives, MeshAllReduceIsTwoSteps) {
  Group g(OpKind::all_reduce, 4, 4000);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::mesh));
  ASSERT_EQ(s.members[2].size(), 2u);
  EXPECT_EQ(s.members[2][0].sends.size(), 3u);
  EXPECT_EQ(s.members[2][0].reduce_bytes, 3000u);
  EXPECT_EQ(total_sent(s), 4u * 2 * 3 * 1000);
  expect_balanced(s);
}

TEST(Collectives, BidirectionalRingSplitsTheBuffer) {
  Group g(OpKind::all_reduce, 4, 8000);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::bidir_ring));
  ASSERT_EQ(s.members[0].size(), 6u);
  EXPECT_EQ(s.members[0][0].sends.size(), 2u);  // one each way
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * 3 * 2000);
  expect_balanced(s);
}

TEST(Collectives, HierarchicalAllReduceSendsLocalThenAcross) {
  Group g(OpKind::all_reduce, 8, 8000);
  const auto s = plan_collective(g.ptrs, 0, local(4));
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::hierarchical);
  // local RS: 3 x 2000; inter AR of 2000 over 2 groups: 2 x 1000; local AG: 3 x 2000
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 6000u + 2000u + 6000u);
  // the inter-group partner of member 1 is member 5
  EXPECT_EQ(s.members[1][3].sends[0].peer, 5);
  expect_balanced(s);
}

TEST(Collectives, AutoChoosesBySize) {
  config::CollectiveParams p;  // auto, mesh < 1 MB, rdh < 56 MB
  trace::Op op;
  op.kind = OpKind::all_reduce;
  op.bytes = 512 * 1024;
  EXPECT_EQ(choose_algorithm(op, 16, p, {}, nullptr), CollectiveAlgorithm::mesh);
  op.bytes = 8 * 1024 * 1024;
  EXPECT_EQ(choose_algorithm(op, 16, p, {}, nullptr), CollectiveAlgorithm::rdh);
  EXPECT_EQ(choose_algorithm(op, 12, p, {}, nullptr), CollectiveAlgorithm::ring);
  op.bytes = 100 * 1000 * 1000;
  EXPECT_EQ(choose_algorithm(op, 16, p, {}, nullptr), CollectiveAlgorithm::ring);
}

TEST(Collectives, AllGatherAndReduceScatterRing) {
  Group ag(OpKind::all_gather, 4, 4000);
  const auto a = plan_collective(ag.ptrs, 0, forced(CollectiveAlgorithm::ring));
  for (auto b : bytes_sent(a)) EXPECT_EQ(b, 3000u);
  expect_balanced(a);
  Group rs(OpKind::reduce_scatter, 4, 4000);
  const auto r = plan_collective(rs.ptrs, 0, forced(CollectiveAlgorithm::ring));
  for (auto b : bytes_sent(r)) EXPECT_EQ(b, 3000u);
  expect_balanced(r);
}

TEST(Collectives, AllToAllVFollowsSendBytes) {
  Group g(OpKind::all_to_all_v, 3, 0);
  g.ops[0].send_bytes = {5, 10, 20};
  g.ops[1].send_bytes = {1, 0, 2};
  g.ops[2].send_bytes = {7, 8, 9};
  const auto s = plan_collective(g.ptrs, 0, plain());
  EXPECT_EQ(bytes_sent(s), (std::vector<std::uint64_t>{30, 3, 15}));
  // member 1 receives 10 from 0 and 8 from 2; its zero-byte send to 1 is not a message
  std::uint64_t got = 0;
  for (const auto& t : s.members[1][0].recvs) got += t.bytes;
  EXPECT_EQ(got, 18u);
  expect_balanced(s);
}

// The flow calibration's patterns (replay/pattern.hpp), by hand from its table: all_to_all_v is
// all_to_all's pattern (the same direct steps; it was 0, never calibrated, while a MoE step's
// dispatch and combine are all_to_all_v); the reductions 2 + 4 x collective + algorithm.
TEST(Collectives, TrafficPatternsByCollectiveAndAlgorithm) {
  using A = config::CollectiveAlgorithm;
  EXPECT_EQ(traffic_pattern(OpKind::all_to_all, A::mesh), 1);
  EXPECT_EQ(traffic_pattern(OpKind::all_to_all_v, A::mesh), 1);
  EXPECT_EQ(traffic_pattern(OpKind::all_gather, A::ring), 2);
  EXPECT_EQ(traffic_pattern(OpKind::reduce_scatter, A::multi_ring), 7);
  EXPECT_EQ(traffic_pattern(OpKind::all_reduce, A::rdh), 12);
  EXPECT_EQ(traffic_pattern(OpKind::all_reduce, A::hierarchical), 13);
  EXPECT_EQ(traffic_pattern(OpKind::reduce_scatter, A::mesh), 14);
  EXPECT_EQ(traffic_pattern(OpKind::all_reduce, A::torus), 0);
  EXPECT_EQ(traffic_pattern(OpKind::all_gather, A::bidir_ring), 0);
  EXPECT_EQ(traffic_pattern(OpKind::send, A::mesh), 0);
}

TEST(Collectives, BroadcastChainIsPipelined) {
  Group g(OpKind::broadcast, 4, 3 * 1048576);
  for (auto& o : g.ops) o.root = 0;
  config::CollectiveParams p = forced(CollectiveAlgorithm::ring);
  const auto s = plan_collective(g.ptrs, 2, p);
  // root is member 2: it sends 3 chunks to member 3 and receives nothing
  EXPECT_EQ(bytes_sent(s)[2], 3u * 1048576);
  EXPECT_EQ(bytes_sent(s)[1], 0u);  // last in the chain 2 -> 3 -> 0 -> 1
  expect_balanced(s);
}

TEST(Collectives, BarrierIsDissemination) {
  Group g(OpKind::barrier, 5, 0);
  const auto s = plan_collective(g.ptrs, 0, plain());
  EXPECT_EQ(s.members[0].size(), 3u);  // ceil(log2 5)
  expect_balanced(s);
}

// A Hamiltonian ring on a 4x4 torus: 16 one-hop steps around, not the rank-order ring's
// multi-hop ones (3 -> 4 is not a link of the torus).
TEST(Collectives, RingOnA4x4TorusIsAOneHopHamiltonianCycle) {
  const auto g = torus({4, 4});
  EXPECT_FALSE(adjacent(g, 3, 4));
  const auto ring = physical_ring(g, 16);
  ASSERT_EQ(ring.size(), 16u);
  EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), 16u);
  int hops = 0;
  for (std::size_t k = 0; k < 16; ++k) hops += adjacent(g, ring[k], ring[(k + 1) % 16]);
  EXPECT_EQ(hops, 16);
  Group ar(OpKind::all_reduce, 16, 16 * 1024);
  const auto s = plan_collective(ar.ptrs, 0, forced(CollectiveAlgorithm::ring), g);
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::ring);
  EXPECT_TRUE(s.notes.empty());
  ASSERT_EQ(s.members[0].size(), 30u);
  expect_one_hop(s, g);
  expect_balanced(s);
}

// Edge-disjoint Hamiltonian cycles use every link: 2 on a 4x4 torus (32 links), 3 on a 4x4x4
// torus (192 links).
TEST(Collectives, DisjointRingsCoverEveryLinkOfTheTorus) {
  for (const auto& dims : {std::vector<int>{4, 4}, std::vector<int>{4, 4, 4}}) {
    const auto g = torus(dims);
    const int n = int(g.neighbours.size());
    const auto rings = disjoint_rings(g, n, int(dims.size()));
    ASSERT_EQ(rings.size(), dims.size());
    std::set<std::pair<int, int>> edges;
    for (const auto& r : rings) {
      ASSERT_EQ(int(r.size()), n);
      for (std::size_t k = 0; k < r.size(); ++k) {
        const int a = r[k], b = r[(k + 1) % r.size()];
        ASSERT_TRUE(adjacent(g, a, b));
        EXPECT_TRUE(edges.insert({std::min(a, b), std::max(a, b)}).second) << "shared link";
      }
    }
    EXPECT_EQ(int(edges.size()), n * int(dims.size()));
  }
}

// multi_ring on a 4x4 torus: 2 cycles both ways = 4 rings, each with a quarter of the data.
TEST(Collectives, MultiRingSplitsTheDataOverFourRings) {
  const auto g = torus({4, 4});
  Group ar(OpKind::all_reduce, 16, 16 * 4 * 1000);
  const auto s = plan_collective(ar.ptrs, 0, forced(CollectiveAlgorithm::multi_ring), g);
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::multi_ring);
  EXPECT_EQ(s.rings, 4);
  ASSERT_EQ(s.members[5].size(), 30u);
  EXPECT_EQ(s.members[5][0].sends.size(), 4u);  // one per ring, to 4 different neighbours
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * 15 * 4 * 1000);
  expect_one_hop(s, g);
  expect_balanced(s);
}

// Dimension-ordered on 4x4: bidirectional rings along X (3 steps) then Y (3), and back.
TEST(Collectives, TorusAllReduceRunsDimensionByDimension) {
  const auto g = torus({4, 4});
  Group ar(OpKind::all_reduce, 16, 64000);
  const auto s = plan_collective(ar.ptrs, 0, forced(CollectiveAlgorithm::torus), g);
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::torus);
  ASSERT_EQ(s.members[0].size(), 12u);
  // X phase: 64000 / (2 x 4) per ring step, to x +- 1; Y phase: 2 x 8000 / 8 = 2000, to y +- 1
  EXPECT_EQ(s.members[0][0].sends[0].bytes, 8000u);
  EXPECT_EQ(s.members[0][0].sends[0].peer, 1);
  EXPECT_EQ(s.members[0][3].sends[0].bytes, 2000u);
  EXPECT_EQ(s.members[0][3].sends[0].peer, 4);
  // per member: 2 x 3 x 8000 + 2 x 3 x 2000 each way (reduce-scatter, all-gather)
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * (6 * 8000 + 6 * 2000));
  expect_one_hop(s, g);
  expect_balanced(s);
  // Not a whole torus: falls back, and says so.
  Group part(OpKind::all_reduce, 8, 8000);
  GroupLayout half = g;
  half.chip = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto f = plan_collective(part.ptrs, 0, forced(CollectiveAlgorithm::torus), half);
  EXPECT_EQ(f.algorithm, CollectiveAlgorithm::ring);
  ASSERT_FALSE(f.notes.empty());
  EXPECT_NE(f.notes[0].find("not one per chip of the whole torus"), std::string::npos);
}

// hierarchical_local_size is what the groups are made of; one that does not divide is refused
// with a reason.
TEST(Collectives, HierarchicalHonoursItsLocalSize) {
  Group g(OpKind::all_reduce, 8, 8000);
  const auto s = plan_collective(g.ptrs, 0, local(2));
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::hierarchical);
  // local RS of 2: 4000; inter AR of 4000 over 4 groups: 2 x 3 x 1000; local AG: 4000
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 4000u + 6000u + 4000u);
  EXPECT_EQ(s.members[0][0].sends[0].peer, 1);  // local partner
  EXPECT_EQ(s.members[0][1].sends[0].peer, 2);  // next group, same position
  expect_balanced(s);
  const auto f = plan_collective(g.ptrs, 0, local(3));
  EXPECT_EQ(f.algorithm, CollectiveAlgorithm::ring);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("hierarchical_local_size 3"), std::string::npos) << f.notes[0];
}

// Without a configured size, the servers of a switched rack are the local groups.
TEST(Collectives, HierarchicalFollowsTheServersOfASwitchedRack) {
  GroupLayout g;
  g.switched = true;
  g.tier_chips = 4;
  Group ar(OpKind::all_reduce, 8, 8000);
  const auto s = plan_collective(ar.ptrs, 0, forced(CollectiveAlgorithm::hierarchical), g);
  EXPECT_EQ(s.algorithm, CollectiveAlgorithm::hierarchical);
  EXPECT_EQ(s.members[1][3].sends[0].peer, 5);
  // auto picks it above the rdh range on such a rack
  config::CollectiveParams p = plain();
  trace::Op op;
  op.kind = OpKind::all_reduce;
  op.bytes = 100'000'000;
  EXPECT_EQ(choose_algorithm(op, 8, p, g, nullptr), CollectiveAlgorithm::hierarchical);
  EXPECT_EQ(choose_algorithm(op, 16, p, torus({4, 4}), nullptr), CollectiveAlgorithm::multi_ring);
}

// Staggered peers: in slot k member i sends to i + k, so the first messages of all members go
// to all different destinations.
TEST(Collectives, MeshAndAllToAllStaggerTheirPeers) {
  Group a2a(OpKind::all_to_all, 5, 5000);
  const auto s = plan_collective(a2a.ptrs, 0, plain());
  std::set<int> first;
  for (int i = 0; i < 5; ++i) {
    const auto& sends = s.members[std::size_t(i)][0].sends;
    ASSERT_EQ(sends.size(), 4u);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(sends[std::size_t(k)].peer, (i + k + 1) % 5);
    first.insert(sends[0].peer);
  }
  EXPECT_EQ(first.size(), 5u);
  expect_balanced(s);
}

// Before each data step every receiver writes a sync_bytes semaphore to its sender; the data
// bytes are unchanged.
TEST(Collectives, EveryDataStepIsPrecededByASemaphoreHandshake) {
  Group g(OpKind::all_reduce, 4, 4000);
  auto p = forced(CollectiveAlgorithm::ring);
  p.sync_bytes = Bytes(4);
  p.launch_latency = Duration(1e-6);
  p.descriptor_time = Duration(5e-7);
  const auto s = plan_collective(g.ptrs, 0, p);
  ASSERT_EQ(s.members[1].size(), 12u);  // 6 data steps, each after a sync step
  const Step& sync = s.members[1][0];
  EXPECT_EQ(sync.kind, StepKind::sync);
  ASSERT_EQ(sync.sends.size(), 1u);
  EXPECT_EQ(sync.sends[0].peer, 0);  // to the member it receives from
  EXPECT_EQ(sync.sends[0].bytes, 4u);
  ASSERT_EQ(sync.recvs.size(), 1u);
  EXPECT_EQ(sync.recvs[0].peer, 2);  // from the member it sends to
  EXPECT_DOUBLE_EQ(sync.launch_s, 1e-6);
  EXPECT_DOUBLE_EQ(sync.descriptor_s, 0);
  EXPECT_DOUBLE_EQ(s.members[1][1].descriptor_s, 5e-7);
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * 3 * 1000);
  expect_balanced(s);
}

// chunk_bytes splits every transfer; each received piece is reduced on its own.
TEST(Collectives, ChunksSplitTransfersAndReduceEachPiece) {
  Group g(OpKind::reduce_scatter, 2, 5 * 1048576);
  auto p = forced(CollectiveAlgorithm::ring);
  p.chunk_bytes = Bytes(1048576);
  const auto s = plan_collective(g.ptrs, 0, p);
  ASSERT_EQ(s.members[0].size(), 1u);
  const Step& st = s.members[0][0];
  ASSERT_EQ(st.recvs.size(), 3u);  // 2.5 MiB in 1 + 1 + 0.5 MiB
  EXPECT_EQ(st.recvs[2].bytes, 524288u);
  for (const auto& t : st.recvs) EXPECT_TRUE(t.reduce);
  EXPECT_EQ(st.reduce_bytes, 5u * 524288);
  expect_balanced(s);
}

// Ranks on one chip: the ring visits a chip's members one after another, so only one step of
// the ring leaves each chip.
TEST(Collectives, MembersSharingAChipAreConsecutiveOnTheRing) {
  auto g = torus({4, 4});
  for (int r = 0; r < 64; ++r) g.chip.push_back(r / 4);
  const auto ring = physical_ring(g, 64);
  ASSERT_EQ(ring.size(), 64u);
  int off_chip = 0;
  for (std::size_t k = 0; k < 64; ++k) {
    const int a = g.chip[std::size_t(ring[k])], b = g.chip[std::size_t(ring[(k + 1) % 64])];
    if (a != b) {
      ++off_chip;
      EXPECT_TRUE(adjacent(g, a, b));
    }
  }
  EXPECT_EQ(off_chip, 16);
}

namespace {

// Folding (docs/scaling.md): one member of N alike replicas plans what member 0 of the whole
// group does, runtime costs and handshakes included; its peers are replica distances. (Sizes that
// N does not divide differ by a few bytes: folded, the partner's share is taken to be one's own.)
TEST(FoldedCollectives, RdhIsMemberZeroOfTheWholeGroup) {
  config::CollectiveParams p;  // default costs: launch, descriptors, semaphore handshakes
  p.algorithm = CollectiveAlgorithm::rdh;
  for (const OpKind k : {OpKind::all_reduce, OpKind::reduce_scatter, OpKind::all_gather}) {
    for (const int n : {2, 4, 8, 16}) {
      const Group g(k, n, 96 * 1024 * 1024);
      const Schedule whole = plan_collective(g.ptrs, 0, p);
      const Schedule one = plan_folded(g.ops[0], n, p);
      ASSERT_EQ(one.members.size(), 1u);
      const auto& a = whole.members[0];
      const auto& b = one.members[0];
      ASSERT_EQ(a.size(), b.size()) << trace::kind_name(k) << " on " << n;
      for (std::size_t s = 0; s < a.size(); ++s) {
        EXPECT_EQ(a[s].kind, b[s].kind);
        EXPECT_DOUBLE_EQ(a[s].launch_s, b[s].launch_s);
        EXPECT_DOUBLE_EQ(a[s].descriptor_s, b[s].descriptor_s);
        ASSERT_EQ(a[s].sends.size(), b[s].sends.size());
        ASSERT_EQ(a[s].recvs.size(), b[s].recvs.size());
        for (std::size_t i = 0; i < a[s].sends.size(); ++i) {
          EXPECT_EQ(-a[s].sends[i].peer, b[s].sends[i].peer);
          EXPECT_EQ(a[s].sends[i].bytes, b[s].sends[i].bytes);
        }
        for (std::size_t i = 0; i < a[s].recvs.size(); ++i) {
          EXPECT_EQ(-a[s].recvs[i].peer, b[s].recvs[i].peer);
          EXPECT_EQ(a[s].recvs[i].bytes, b[s].recvs[i].bytes);
          EXPECT_EQ(a[s].recvs[i].reduce, b[s].recvs[i].reduce);
        }
      }
    }
  }
}

// 6 replicas: the member also takes the data of the extra replica 4 away before the
// halving-doubling among 4 and returns the result after it.
TEST(FoldedCollectives, OffPowersOfTwoTheMemberServesAnExtraReplica) {
  const Group g(OpKind::all_reduce, 1, 1200);
  const Schedule s = plan_folded(g.ops[0], 6, forced(CollectiveAlgorithm::rdh));
  const auto& st = s.members.at(0);
  ASSERT_EQ(st.size(), 6u);
  auto one = [](const std::vector<Transfer>& ts) {
    return ts.size() == 1 ? std::pair{ts[0].peer, ts[0].bytes} : std::pair{0, std::uint64_t(0)};
  };
  EXPECT_TRUE(st[0].sends.empty());
  EXPECT_EQ(one(st[0].recvs), (std::pair{-4, std::uint64_t(1200)}));
  EXPECT_TRUE(st[0].recvs[0].reduce);
  EXPECT_EQ(one(st[1].sends), (std::pair{-2, std::uint64_t(600)}));
  EXPECT_EQ(one(st[1].recvs), (std::pair{-2, std::uint64_t(600)}));
  EXPECT_EQ(one(st[2].sends), (std::pair{-1, std::uint64_t(300)}));
  EXPECT_EQ(one(st[3].sends), (std::pair{-1, std::uint64_t(300)}));  // doubling, nearest first
  EXPECT_FALSE(st[3].recvs[0].reduce);
  EXPECT_EQ(one(st[4].sends), (std::pair{-2, std::uint64_t(600)}));
  EXPECT_EQ(one(st[5].sends), (std::pair{-4, std::uint64_t(1200)}));
  EXPECT_TRUE(st[5].recvs.empty());
}

}  // namespace
