// SPDX-License-Identifier: MIT
// Workload helpers the replay engine relies on, on workloads built in code.
#include <gtest/gtest.h>

#include "trnsim/error.hpp"
#include "trnsim/trace/workload.hpp"

using namespace trnsim;
using namespace trnsim::trace;

namespace {

Op delay_op(OpId id, std::vector<OpId> deps = {}, std::string name = "") {
  Op op;
  op.id = id;
  op.name = std::move(name);
  op.kind = OpKind::delay;
  op.duration = Duration(1e-6);
  op.deps = std::move(deps);
  return op;
}

Op coll(OpId id, OpKind kind, std::string group, std::uint64_t bytes) {
  Op op;
  op.id = id;
  op.kind = kind;
  op.group = std::move(group);
  op.bytes = bytes;
  return op;
}

Workload two_ranks() {
  Workload w;
  w.groups["world"] = {0, 1};
  w.ranks.resize(2);
  w.ranks[0].rank = 0;
  w.ranks[1].rank = 1;
  return w;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Workload, TopologicalOrderKeepsFileOrderWhenPossible) {
  RankTrace r;
  r.ops = {delay_op(0), delay_op(1, {0}), delay_op(2), delay_op(3, {1, 2})};
  EXPECT_EQ(topological_order(r), (std::vector<std::size_t>{0, 1, 2, 3}));
  // Out of order in the file: 5 needs 7 which comes later; 6 is free.
  r.ops = {delay_op(5, {7}), delay_op(6), delay_op(7)};
  EXPECT_EQ(topological_order(r), (std::vector<std::size_t>{1, 2, 0}));
}

TEST(Workload, IndexById) {
  RankTrace r;
  r.ops = {delay_op(40), delay_op(7), delay_op(12)};
  const auto idx = index_by_id(r);
  EXPECT_EQ(idx.at(40), 0u);
  EXPECT_EQ(idx.at(7), 1u);
  EXPECT_EQ(idx.at(12), 2u);
  r.ops.push_back(delay_op(7));
  EXPECT_EQ(error_of([&] { index_by_id(r); }), "rank 0: op id 7 is used twice");
}

TEST(Workload, CycleErrorNamesTheOpsInRunOrder) {
  RankTrace r;
  r.rank = 3;
  r.ops = {delay_op(1, {}, "free"), delay_op(2, {4}, "x"), delay_op(3, {2}, "y"),
           delay_op(4, {3}, "z")};
  EXPECT_EQ(error_of([&] { topological_order(r); }),
            "rank 3: dependency cycle: op 3 (y) -> op 4 (z) -> op 2 (x) -> op 3 (y)");
  r.ops = {delay_op(9, {9})};
  EXPECT_EQ(error_of([&] { topological_order(r); }), "rank 3: dependency cycle: op 9 -> op 9");
}

TEST(Workload, FlopsFollowTheDocumentedConventions) {
  Op g;
  g.kind = OpKind::gemm;
  g.m = 128;
  g.k = 256;
  g.n = 512;
  g.batch = 3;
  EXPECT_DOUBLE_EQ(op_flops(g), 2.0 * 128 * 256 * 512 * 3);  // 100,663,296
  Op a;
  a.kind = OpKind::attention;
  a.batch = 2;
  a.heads = 4;
  a.seq_q = 8;
  a.seq_kv = 16;
  a.head_dim = 32;
  // 4 * b*h*sq*skv*d = 4 * 2*4*8*16*32 = 131,072
  EXPECT_DOUBLE_EQ(op_flops(a), 131072.0);
  a.causal = true;
  EXPECT_DOUBLE_EQ(op_flops(a), 65536.0);
  Op e;
  e.kind = OpKind::elementwise;
  e.elements = 1000;
  e.inputs = 3;
  EXPECT_DOUBLE_EQ(op_flops(e), 2000.0);
  e.flops = 7.0;  // the producer's count wins
  EXPECT_DOUBLE_EQ(op_flops(e), 7.0);
  RankTrace r;
  r.ops = {g, e, delay_op(1)};
  EXPECT_DOUBLE_EQ(total_flops(r), 100663296.0 + 7.0);
}

TEST(Workload, DtypeBytesCountMxScales) {
  EXPECT_DOUBLE_EQ(dtype_bytes(DType::fp32), 4.0);
  EXPECT_DOUBLE_EQ(dtype_bytes(DType::mxfp8), 1.03125);
  EXPECT_DOUBLE_EQ(dtype_bytes(DType::mxfp4), 0.53125);
}

TEST(Workload, CollectivesMatchInTopologicalOrderNotFileOrder) {
  Workload w = two_ranks();
  // Rank 1 lists its all_gather first in the file but makes it depend on the all_reduce.
  w.ranks[0].ops = {coll(0, OpKind::all_reduce, "world", 8), coll(1, OpKind::all_gather, "world", 16)};
  Op ag = coll(1, OpKind::all_gather, "world", 16);
  ag.deps = {0};
  w.ranks[1].ops = {ag, coll(0, OpKind::all_reduce, "world", 8)};
  EXPECT_NO_THROW(validate(w));
  w.ranks[1].ops[0].deps.clear();
  EXPECT_EQ(error_of([&] { check_collectives(w); }),
            "group \"world\": collective #0 does not match between ranks 0 and 1: all_reduce vs "
            "all_gather (rank 0, op 0 / rank 1, op 1)");
}

TEST(Workload, MissingMemberIsReportedWithBothSides) {
  Workload w = two_ranks();
  w.ranks.resize(3);
  w.ranks[2].rank = 2;
  w.groups["world"] = {0, 1, 2};
  for (int r = 0; r < 3; ++r) w.ranks[r].ops = {coll(0, OpKind::barrier, "world", 0)};
  w.ranks[1].ops.push_back(coll(1, OpKind::all_to_all, "world", 99));
  EXPECT_EQ(error_of([&] { check_collectives(w); }),
            "group \"world\": collective #1 (all_to_all at rank 1, op 1) is issued by ranks [1] "
            "but never by ranks [0, 2]; the replay would wait for them forever");
}

TEST(Workload, GroupChecks) {
  Workload w = two_ranks();
  w.groups["bad"] = {0, 2};
  EXPECT_EQ(error_of([&] { check_groups(w); }),
            "group \"bad\": rank 2 is out of range (ranks are 0..1)");
  w.groups["bad"] = {1, 1};
  EXPECT_EQ(error_of([&] { check_groups(w); }), "group \"bad\": rank 1 is listed twice");
  w.groups["bad"] = {};
  EXPECT_EQ(error_of([&] { check_groups(w); }), "group \"bad\" has no members");
}

TEST(Workload, DescribeSummarises) {
  Workload w = two_ranks();
  w.name = "tiny";
  Op g;
  g.id = 5;
  g.kind = OpKind::gemm;
  g.m = g.k = g.n = 1000;
  w.ranks[0].ops = {g, coll(0, OpKind::all_reduce, "world", 3000000)};
  w.ranks[1].ops = {coll(0, OpKind::all_reduce, "world", 3000000)};
  w.warnings.push_back("something tolerated");
  const std::string text = describe(w);
  EXPECT_NE(text.find("workload tiny: 2 ranks, 3 ops"), std::string::npos) << text;
  EXPECT_NE(text.find("ops by kind: all_reduce 2, gemm 1"), std::string::npos) << text;
  EXPECT_NE(text.find("groups: 1 world[2]"), std::string::npos) << text;
  EXPECT_NE(text.find("compute: 2 GFLOP total (2 GFLOP in gemm/attention), 2 GFLOP on the busiest rank"), std::string::npos)
      << text;
  EXPECT_NE(text.find("communication: 6 MB sent"), std::string::npos) << text;
  EXPECT_NE(text.find("warnings: 1"), std::string::npos) << text;
}
