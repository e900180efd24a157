// SPDX-License-Identifier: MIT
// The step breakdown on a hand-built two-rank step, its parts computed by hand; and SHA-256
// against the FIPS 180-4 examples.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "trnsim/report/breakdown.hpp"
#include "trnsim/report/report.hpp"

namespace trnsim::report {
namespace {

using sc_core::SC_US;
using sc_core::sc_time;

trace::Op op(trace::OpId id, const char* name, trace::OpKind k, std::vector<trace::OpId> deps = {}) {
  trace::Op o;
  o.id = id;
  o.name = name;
  o.kind = k;
  o.deps = std::move(deps);
  if (trace::is_collective(k)) {
    o.group = "g";
    o.bytes = 1024;
  }
  return o;
}

// Rank 0: gemm 0-10 us, all-reduce 4-20 us (its last member arrives at 8 us), a backward
// element-wise op 22-25 us. Rank 1: the all-reduce 2-20 us. The step ends at 30 us.
struct TwoRanks : ::testing::Test {
  trace::Workload w;
  std::vector<replay::OpRecord> recs;
  std::vector<replay::CollectiveRecord> coll;
  void SetUp() override {
    w.groups["g"] = {0, 1};
    w.ranks.resize(2);
    w.ranks[0].rank = 0;
    w.ranks[1].rank = 1;
    w.ranks[0].ops = {op(1, "l0.m0.q", trace::OpKind::gemm), op(2, "l0.dense_grad_rs", trace::OpKind::all_reduce),
                      op(3, "l1.m0.x.bwd", trace::OpKind::elementwise, {1, 2})};
    w.ranks[1].ops = {op(1, "l0.dense_grad_rs", trace::OpKind::all_reduce)};
    recs = {{0, 0, sc_time(0, SC_US), sc_time(10, SC_US)},
            {0, 1, sc_time(4, SC_US), sc_time(20, SC_US)},
            {0, 2, sc_time(22, SC_US), sc_time(25, SC_US)},
            {1, 0, sc_time(2, SC_US), sc_time(20, SC_US)}};
    replay::CollectiveRecord c;
    c.group = "g";
    c.sequence = 0;
    c.first_arrival = sc_time(2, SC_US);
    c.last_arrival = sc_time(8, SC_US);
    c.end = sc_time(20, SC_US);
    coll = {c};
  }
};

constexpr std::uint64_t us = 1000000;  // picoseconds

TEST_F(TwoRanks, PartsAddUpToTheStepForEveryRank) {
  const Breakdown b = compute_breakdown(w, recs, coll, sc_time(30, SC_US));
  ASSERT_EQ(b.ranks.size(), 2u);
  // Rank 0: compute alone 0-8 (the wait for peers 4-8 is hidden by the gemm) and 22-25;
  // overlapped 8-10; exposed 10-20; idle 20-22 and 25-30.
  const Parts& p0 = b.ranks[0].parts;
  EXPECT_EQ(p0.compute_ps, 11 * us);
  EXPECT_EQ(p0.overlapped_ps, 2 * us);
  EXPECT_EQ(p0.exposed_ps, 10 * us);
  EXPECT_EQ(p0.waiting_ps, 7 * us);
  EXPECT_EQ(p0.waiting_for_peers_ps, 0u);
  // Rank 1: idle 0-2, waiting for rank 0 2-8, exposed 8-20, idle 20-30.
  const Parts& p1 = b.ranks[1].parts;
  EXPECT_EQ(p1.compute_ps, 0u);
  EXPECT_EQ(p1.overlapped_ps, 0u);
  EXPECT_EQ(p1.exposed_ps, 12 * us);
  EXPECT_EQ(p1.waiting_ps, 18 * us);
  EXPECT_EQ(p1.waiting_for_peers_ps, 6 * us);
  for (const auto& r : b.ranks) EXPECT_EQ(r.parts.total_ps(), 30 * us) << "rank " << r.rank;
}

TEST_F(TwoRanks, PhasesAndLayersTakeTheirShare) {
  const Breakdown b = compute_breakdown(w, recs, coll, sc_time(30, SC_US));
  const auto& ph = b.ranks[0].by_phase;
  EXPECT_DOUBLE_EQ(ph.at("forward").compute_ns, 8000);
  EXPECT_DOUBLE_EQ(ph.at("forward").overlapped_ns, 2000);
  EXPECT_DOUBLE_EQ(ph.at("gradient_sync").exposed_ns, 10000);
  EXPECT_DOUBLE_EQ(ph.at("backward").compute_ns, 3000);
  EXPECT_EQ(ph.at("backward").ops, 1u);
  EXPECT_DOUBLE_EQ(b.ranks[0].by_layer.at(1).compute_ns, 3000);
  EXPECT_DOUBLE_EQ(b.ranks[1].by_phase.at("gradient_sync").waiting_for_peers_ns, 6000);
}

TEST_F(TwoRanks, CriticalPathOfTheSlowestRank) {
  const Breakdown b = compute_breakdown(w, recs, coll, sc_time(30, SC_US));
  EXPECT_EQ(b.slowest_rank, 0);  // ends at 25 us, rank 1 at 20 us
  ASSERT_EQ(b.critical_path.size(), 2u);
  EXPECT_EQ(b.critical_path[0].index, 1u);  // the all-reduce: its dependency ended last (20 us)
  EXPECT_EQ(b.critical_path[0].peers_ps, 4 * us);
  EXPECT_EQ(b.critical_path[0].gap_ps, 4 * us);  // no dependency: from 0 to its start at 4 us
  EXPECT_EQ(b.critical_path[1].index, 2u);
  EXPECT_EQ(b.critical_path[1].gap_ps, 2 * us);  // 20 -> 22 us
}

// Two pipeline stages: rank 1 posts its recv at 0 and computes 0-5 us; rank 0 computes 0-12 us,
// then sends 12-15 us; the recv ends at 15 us. Rank 1 waits for its peer 5-12 us (the bubble:
// the send had not started) and communicates 12-15 us; a second send of the same tag, 16-18 us,
// is the one its second recv takes (the k-th recv takes the k-th send to finish).
TEST(Breakdown, RecvWaitsForItsSendToStart) {
  trace::Workload w;
  w.ranks.resize(2);
  w.ranks[0].rank = 0;
  w.ranks[1].rank = 1;
  auto p2p = [](trace::OpId id, const char* name, trace::OpKind k, int peer,
                std::vector<trace::OpId> deps) {
    trace::Op o = op(id, name, k, std::move(deps));
    o.peer = peer;
    o.tag = 7;
    o.bytes = 1024;
    return o;
  };
  w.ranks[0].ops = {op(1, "l0.m0.q", trace::OpKind::gemm),
                    p2p(2, "m0.act.send", trace::OpKind::send, 1, {1}),
                    p2p(3, "m1.act.send", trace::OpKind::send, 1, {2})};
  w.ranks[1].ops = {p2p(1, "m0.act.recv", trace::OpKind::recv, 0, {}),
                    op(2, "l1.m0.q", trace::OpKind::gemm),
                    p2p(3, "m1.act.recv", trace::OpKind::recv, 0, {1})};
  const std::vector<replay::OpRecord> recs = {{0, 0, sc_time(0, SC_US), sc_time(12, SC_US)},
                                              {0, 1, sc_time(12, SC_US), sc_time(15, SC_US)},
                                              {0, 2, sc_time(16, SC_US), sc_time(18, SC_US)},
                                              {1, 0, sc_time(0, SC_US), sc_time(15, SC_US)},
                                              {1, 1, sc_time(0, SC_US), sc_time(5, SC_US)},
                                              {1, 2, sc_time(15, SC_US), sc_time(18, SC_US)}};
  const Breakdown b = compute_breakdown(w, recs, {}, sc_time(20, SC_US));
  // Rank 1: compute 0-5 (the recv's wait hidden under it), waiting for the peer 5-12 and 15-16,
  // exposed 12-15 and 16-18, idle 18-20.
  const Parts& p1 = b.ranks[1].parts;
  EXPECT_EQ(p1.compute_ps, 5 * us);
  EXPECT_EQ(p1.overlapped_ps, 0u);
  EXPECT_EQ(p1.exposed_ps, 5 * us);
  EXPECT_EQ(p1.waiting_ps, 10 * us);
  EXPECT_EQ(p1.waiting_for_peers_ps, 8 * us);
  EXPECT_DOUBLE_EQ(b.ranks[1].by_phase.at("forward").waiting_for_peers_ns, 8000);
  EXPECT_EQ(b.ranks[1].by_phase.count("unattributed"), 0u);
  // Rank 0's sends are communication from their start.
  EXPECT_EQ(b.ranks[0].parts.exposed_ps, 5 * us);
  EXPECT_EQ(b.ranks[0].parts.waiting_for_peers_ps, 0u);
}

TEST(Phase, InferredFromTheGeneratorsNames) {
  auto phase = [](const char* n) {
    trace::Op o;
    o.name = n;
    const auto p = trace::infer_phase(o);
    return p ? std::string(config::enum_name(*p)) : std::string("none");
  };
  EXPECT_EQ(phase("l0.m0.attn"), "forward");
  EXPECT_EQ(phase("l3.m1.experts.down.dgrad"), "backward");
  EXPECT_EQ(phase("l0.m0.attn.bwd.dqk"), "backward");
  EXPECT_EQ(phase("l0.expert_grad_rs"), "gradient_sync");
  EXPECT_EQ(phase("l0.dense_param_ag"), "gradient_sync");
  EXPECT_EQ(phase("l0.expert_adam"), "optimizer");
  EXPECT_EQ(phase("m3.act.recv"), "forward");
  EXPECT_EQ(phase("m3.grad.send"), "backward");
  EXPECT_EQ(phase("m3.other"), "none");
  EXPECT_EQ(phase("matmul_17"), "none");
  trace::Op o;
  o.name = "l12.m0.q";
  EXPECT_EQ(trace::infer_layer(o), 12);
  o.layer = 3;  // the trace's own field wins
  o.phase = trace::Phase::optimizer;
  EXPECT_EQ(trace::infer_layer(o), 3);
  EXPECT_EQ(trace::infer_phase(o), trace::Phase::optimizer);
}

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(Sha256().hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256().update("abc").hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256().update("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").hex(),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 split;  // the same bytes in two pieces
  split.update("abcdbcdecdefdefgefghfghighij").update("hijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(split.hex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// Lengths around the block and padding boundaries, and a long input, whole and in uneven pieces;
// the digests are Python's hashlib.sha256 of bytes((i * 7 + 3) % 251 for i in range(n)).
TEST(Sha256, BlockBoundariesAndPieces) {
  const std::pair<std::size_t, const char*> cases[] = {
      {55, "1deace58c745f3ecadde68a5923f494c3703fa73f0306483ccb898a5826e8d70"},
      {56, "06dbe23685750e4d3881ded95047abaf93fa8f9c5d3501dc57c717a72ff1398e"},
      {63, "47fb38b12335c9298d09280515c0666489a189d1554bb0ac1a0740806ce9d8b6"},
      {64, "dfa798724b1a8014994f363e5da7474ed26ce3757fb29e07aa47ad5a9352d37b"},
      {65, "dd2eab5a5507d7717c63ce953d9ac61752c21e664425ad1227054722a0d97f69"},
      {127, "2409a159329f4e770a7d8128130497abb1de01ffb6ad389d97d89ebbeeb7f02c"},
      {128, "3a9c1e22e20578eebe442238f431befd688bd56698eb7c77d95d3f97d8f58207"},
      {129, "956f5da998f608be52587f28902b608909b661f99a1b300e3d3046b4f69f6fb5"},
      {1000, "a9425c416f534025a4e2422bd14adba4ec3d4a68d10c3329be8df612964d2b6e"},
      {100003, "3b1d6731138fc44f6de1267ee21c50c8320d23d75fa6515f63e9588cb262ba7a"}};
  for (const auto& [n, want] : cases) {
    SCOPED_TRACE(n);
    std::string data(n, '\0');
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<char>((i * 7 + 3) % 251);
    EXPECT_EQ(Sha256().update(data).hex(), want);
    Sha256 pieces;
    for (std::size_t at = 0, step = 1; at < n; at += step, step = step * 3 % 97 + 1) {
      pieces.update(std::string_view(data).substr(at, step));
    }
    EXPECT_EQ(pieces.hex(), want);
  }
}

TEST(NsOf, NoFloatNoise) {
  EXPECT_EQ(fmt::format("{}", ns_of(sc_time(8925366, sc_core::SC_PS))), "8925.366");
}

}  // namespace
}  // namespace trnsim::report
