// SPDX-License-Identifier: MIT
// Collective planning: bytes on the wire per algorithm (hand-computed) and that every send has a
// matching receive.
#include <gtest/gtest.h>

#include <map>

#include "trnsim/replay/collectives.hpp"

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

config::CollectiveParams forced(CollectiveAlgorithm a) {
  config::CollectiveParams p;
  p.algorithm = a;
  return p;
}

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

std::uint64_t total_sent(const Schedule& s) {
  std::uint64_t t = 0;
  for (auto b : bytes_sent(s)) t += b;
  return t;
}

}  // namespace

TEST(Collectives, RingAllReduceSendsTwoNMinusOneOverN) {
  Group g(OpKind::all_reduce, 8, 8 * 1024);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::ring), 0);
  ASSERT_EQ(s.members[0].size(), 14u);  // 2 (n - 1) steps
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * 7 * 1024);
  std::uint64_t reduced = 0;
  for (const auto& st : s.members[3]) reduced += st.reduce_bytes;
  EXPECT_EQ(reduced, 7u * 1024);  // n - 1 chunks reduced
  expect_balanced(s);
}

TEST(Collectives, RdhAllReduceHalvesThenDoubles) {
  Group g(OpKind::all_reduce, 8, 8 * 1024);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::rdh), 0);
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
  EXPECT_EQ(plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::rdh), 0).algorithm,
            CollectiveAlgorithm::ring);
}

TEST(Collectives, MeshAllReduceIsTwoSteps) {
  Group g(OpKind::all_reduce, 4, 4000);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::mesh), 0);
  ASSERT_EQ(s.members[2].size(), 2u);
  EXPECT_EQ(s.members[2][0].sends.size(), 3u);
  EXPECT_EQ(s.members[2][0].reduce_bytes, 3000u);
  EXPECT_EQ(total_sent(s), 4u * 2 * 3 * 1000);
  expect_balanced(s);
}

TEST(Collectives, BidirectionalRingSplitsTheBuffer) {
  Group g(OpKind::all_reduce, 4, 8000);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::bidir_ring), 0);
  ASSERT_EQ(s.members[0].size(), 6u);
  EXPECT_EQ(s.members[0][0].sends.size(), 2u);  // one each way
  for (auto b : bytes_sent(s)) EXPECT_EQ(b, 2u * 3 * 2000);
  expect_balanced(s);
}

TEST(Collectives, HierarchicalAllReduceSendsLocalThenAcross) {
  Group g(OpKind::all_reduce, 8, 8000);
  const auto s = plan_collective(g.ptrs, 0, forced(CollectiveAlgorithm::hierarchical), 4);
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
  EXPECT_EQ(choose_algorithm(op, 16, p, 0), CollectiveAlgorithm::mesh);
  op.bytes = 8 * 1024 * 1024;
  EXPECT_EQ(choose_algorithm(op, 16, p, 0), CollectiveAlgorithm::rdh);
  EXPECT_EQ(choose_algorithm(op, 12, p, 0), CollectiveAlgorithm::ring);
  op.bytes = 100 * 1000 * 1000;
  EXPECT_EQ(choose_algorithm(op, 16, p, 0), CollectiveAlgorithm::ring);
}

TEST(Collectives, AllGatherAndReduceScatterRing) {
  Group ag(OpKind::all_gather, 4, 4000);
  const auto a = plan_collective(ag.ptrs, 0, forced(CollectiveAlgorithm::ring), 0);
  for (auto b : bytes_sent(a)) EXPECT_EQ(b, 3000u);
  expect_balanced(a);
  Group rs(OpKind::reduce_scatter, 4, 4000);
  const auto r = plan_collective(rs.ptrs, 0, forced(CollectiveAlgorithm::ring), 0);
  for (auto b : bytes_sent(r)) EXPECT_EQ(b, 3000u);
  expect_balanced(r);
}

TEST(Collectives, AllToAllVFollowsSendBytes) {
  Group g(OpKind::all_to_all_v, 3, 0);
  g.ops[0].send_bytes = {5, 10, 20};
  g.ops[1].send_bytes = {1, 0, 2};
  g.ops[2].send_bytes = {7, 8, 9};
  const auto s = plan_collective(g.ptrs, 0, {}, 0);
  EXPECT_EQ(bytes_sent(s), (std::vector<std::uint64_t>{30, 3, 15}));
  // member 1 receives 10 from 0 and 8 from 2; its zero-byte send to 1 is not a message
  std::uint64_t got = 0;
  for (const auto& t : s.members[1][0].recvs) got += t.bytes;
  EXPECT_EQ(got, 18u);
  expect_balanced(s);
}

TEST(Collectives, BroadcastChainIsPipelined) {
  Group g(OpKind::broadcast, 4, 3 * 1048576);
  for (auto& o : g.ops) o.root = 0;
  config::CollectiveParams p = forced(CollectiveAlgorithm::ring);
  const auto s = plan_collective(g.ptrs, 2, p, 0);
  // root is member 2: it sends 3 chunks to member 3 and receives nothing
  EXPECT_EQ(bytes_sent(s)[2], 3u * 1048576);
  EXPECT_EQ(bytes_sent(s)[1], 0u);  // last in the chain 2 -> 3 -> 0 -> 1
  expect_balanced(s);
}

TEST(Collectives, BarrierIsDissemination) {
  Group g(OpKind::barrier, 5, 0);
  const auto s = plan_collective(g.ptrs, 0, {}, 0);
  EXPECT_EQ(s.members[0].size(), 3u);  // ceil(log2 5)
  expect_balanced(s);
}
