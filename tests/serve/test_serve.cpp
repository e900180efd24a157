// SPDX-License-Identifier: MIT
// The serving layer (docs/serving.md): the scheduler against hand-computed times with a timer
// whose costs are a stated table (so every expected value follows by hand), the KV admission and
// preemption, Little's law on a steady run, the rack-timed run (the first token is the simulated
// prefill iteration, runtime costs included), byte-identical reports by seed, and bad specs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/asan.hpp"
#include "../common/run_trnsim.hpp"
#include "trnsim/bench/bench.hpp"
#include "trnsim/error.hpp"
#include "trnsim/infer/model.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/simulation.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/serve/arrivals.hpp"
#include "trnsim/serve/engine.hpp"
#include "trnsim/serve/serve.hpp"
#include "trnsim/serve/shape_cache.hpp"
#include "trnsim/serve/timer.hpp"
#include "trnsim/serve/transfer.hpp"

namespace trnsim::serve {
namespace {

namespace fs = std::filesystem;

// cost = 1 ms + 10 us per decode sequence + 1 ns per decode context token + 2 us per prefill
// token: a table the tests compute by hand, not a model of anything.
class TableTimer : public IterationTimer {
 public:
  IterationCost cost(const Shape& s) override {
    shapes.push_back(s);
    const double t = 1e-3 + 10e-6 * double(s.decode) + 1e-9 * double(s.decode * s.context) +
                     2e-6 * double(s.prefill);
    return {t, 1.0};
  }
  double static_w() const override { return 100; }
  static double t(std::uint64_t d, std::uint64_t c, std::uint64_t p) {
    return 1e-3 + 10e-6 * double(d) + 1e-9 * double(d * c) + 2e-6 * double(p);
  }
  // A KV transfer: 0.5 ms + 1 us per prompt token, 1,000 bytes per token.
  TransferCost kv_transfer(std::uint64_t tokens) override {
    transfers.push_back(tokens);
    return {x(tokens), 0.25, 1000.0 * double(tokens)};
  }
  static double x(std::uint64_t tokens) { return 0.5e-3 + 1e-6 * double(tokens); }
  std::vector<Shape> shapes;
  std::vector<std::uint64_t> transfers;
};

EngineOptions options(std::uint64_t blocks = 1000000) {
  EngineOptions o;
  o.scheduler.max_batch = 8;
  o.scheduler.token_budget = 1024;
  o.kv_blocks = blocks;
  return o;
}

TEST(Engine, OneRequestOnAnIdleSystem) {
  Workload w;
  w.open.push_back({0, 1.0, 100, 5});
  TableTimer timer;
  const EngineResult r = simulate(w, options(), timer, 0);
  ASSERT_EQ(r.requests.size(), 1u);
  const auto& q = r.requests[0];
  // TTFT: the prefill iteration of the 100-token prompt; E2E: TTFT and 4 decode iterations, the
  // KV read growing from 101 to 104 tokens.
  const double ttft = TableTimer::t(0, 0, 100);
  EXPECT_NEAR(q.first_token_s - q.req.arrival_s, ttft, 1e-12);
  double e2e = ttft;
  for (std::uint64_t c = 101; c <= 104; ++c) e2e += TableTimer::t(1, c, 0);
  EXPECT_NEAR(q.finish_s - q.req.arrival_s, e2e, 1e-12);
  EXPECT_DOUBLE_EQ(q.first_scheduled_s, 1.0);
  ASSERT_EQ(timer.shapes.size(), 5u);
  EXPECT_EQ(timer.shapes[0], (Shape{0, 0, 100, 0}));
  EXPECT_EQ(timer.shapes[4], (Shape{1, 104, 0, 0}));
  EXPECT_EQ(q.itl_s.size(), 4u);
  EXPECT_EQ(r.iterations_total, 5u);
}

// Disaggregated: one prefill replica (0) and one decode replica (1).
EngineOptions disaggregated(std::uint64_t prefill_blocks = 1000000,
                            std::uint64_t decode_blocks = 1000000) {
  EngineOptions o = options(prefill_blocks);
  o.replicas = 2;
  o.prefill_replicas = 1;
  o.decode_kv_blocks = decode_blocks;
  return o;
}

TEST(Engine, DisaggregatedOneRequestOnAnIdleSystem) {
  Workload w;
  w.open.push_back({0, 1.0, 100, 5});
  TableTimer timer;
  const EngineResult r = simulate(w, disaggregated(), timer, 0);
  const auto& q = r.requests[0];
  // TTFT: the prefill replica's iteration of the 100-token prompt, which samples the first
  // token. Then its KV (100 tokens) moves to the decode replica, which decodes the 4 other
  // tokens at KV 101 to 104: E2E = TTFT + the transfer + 4 decode iterations.
  const double ttft = TableTimer::t(0, 0, 100);
  EXPECT_NEAR(q.first_token_s - q.req.arrival_s, ttft, 1e-12);
  EXPECT_NEAR(q.transfer_start_s, 1.0 + ttft, 1e-12);
  EXPECT_NEAR(q.transfer_end_s, 1.0 + ttft + TableTimer::x(100), 1e-12);
  double e2e = ttft + TableTimer::x(100);
  for (std::uint64_t c = 101; c <= 104; ++c) e2e += TableTimer::t(1, c, 0);
  EXPECT_NEAR(q.finish_s - q.req.arrival_s, e2e, 1e-12);
  EXPECT_EQ(q.replica, 0);
  EXPECT_EQ(q.decode_replica, 1);
  ASSERT_EQ(timer.shapes.size(), 5u);
  EXPECT_EQ(timer.shapes[0], (Shape{0, 0, 100, 0}));
  EXPECT_EQ(timer.shapes[1], (Shape{1, 101, 0, 0}));
  EXPECT_EQ(timer.shapes[4], (Shape{1, 104, 0, 0}));
  EXPECT_EQ(timer.transfers, (std::vector<std::uint64_t>{100}));
  // The first decode's gap after the first token includes the transfer.
  ASSERT_EQ(q.itl_s.size(), 4u);
  EXPECT_NEAR(q.itl_s[0], TableTimer::x(100) + TableTimer::t(1, 101, 0), 1e-6);
  EXPECT_EQ(r.transfers, 1u);
  EXPECT_DOUBLE_EQ(r.transfer_bytes, 100000);
  EXPECT_NEAR(r.transfer_s, TableTimer::x(100), 1e-15);  // end - start
  EXPECT_EQ(r.iterations_total, 5u);
  // The pools' totals: the prefill iteration (one sequence, its 7 blocks held after it) and the
  // four decodes (one sequence each).
  EXPECT_EQ(r.pools[0].iterations, 1u);
  EXPECT_EQ(r.pools[0].batch, 1u);
  EXPECT_EQ(r.pools[0].kv_blocks, 7u);
  EXPECT_EQ(r.pools[0].kv_blocks_max, 7u);
  EXPECT_EQ(r.pools[1].iterations, 4u);
  EXPECT_EQ(r.pools[1].batch, 4u);
  // Iteration 1 on the prefill replica (the prompt's 7 blocks, held until the transfer ends),
  // the others on the decode replica.
  EXPECT_EQ(r.iterations[0].replica, 0);
  EXPECT_EQ(r.iterations[0].kv_blocks, 7u);
  EXPECT_EQ(r.iterations[1].replica, 1);
  // Dynamic energy: 5 iterations at 1 J and the transfer's 0.25 J.
  EXPECT_DOUBLE_EQ(r.dynamic_j, 5.25);
  // A one-token output is done at its prefill: no transfer.
  Workload one;
  one.open.push_back({0, 0.0, 100, 1});
  TableTimer t2;
  const EngineResult r2 = simulate(one, disaggregated(), t2, 0);
  EXPECT_EQ(r2.transfers, 0u);
  EXPECT_EQ(r2.requests[0].decode_replica, -1);
  EXPECT_DOUBLE_EQ(r2.requests[0].finish_s, TableTimer::t(0, 0, 100));
}

TEST(Engine, DisaggregatedTransferWaitsForDecodeBlocks) {
  // The decode replica has 7 blocks (112 tokens): A (60 + 40 = 100 tokens, 7 blocks at most)
  // takes them all by its end, so B's KV, prefilled meanwhile and held by the prefill replica,
  // moves only when A finishes.
  Workload w;
  w.open.push_back({0, 0.0, 60, 40});
  w.open.push_back({1, 0.0, 60, 40});
  TableTimer timer;
  const EngineResult r = simulate(w, disaggregated(1000000, 7), timer, 0);
  const auto &a = r.requests[0], &b = r.requests[1];
  const double ta = TableTimer::t(0, 0, 60), x = TableTimer::x(60);
  double decodes = 0;  // 39 decode iterations at KV 61 to 99, alone
  for (std::uint64_t c = 61; c <= 99; ++c) decodes += TableTimer::t(1, c, 0);
  EXPECT_NEAR(a.first_token_s, ta, 1e-12);
  EXPECT_NEAR(a.finish_s, ta + x + decodes, 1e-12);
  // B prefills in the prefill replica's second iteration, then waits for A's blocks.
  EXPECT_NEAR(b.first_token_s, 2 * ta, 1e-12);
  EXPECT_NEAR(b.transfer_start_s, a.finish_s, 1e-12);
  EXPECT_NEAR(b.finish_s, a.finish_s + x + decodes, 1e-9);
  EXPECT_EQ(r.preemptions, 0u);
  EXPECT_EQ(r.refused, 0u);
}

TEST(Engine, DisaggregatedDecodeReplicaPreemptsAndRecomputesItself) {
  // 10 decode blocks (160 tokens). A's KV (61 tokens with its next: 4 blocks) moves first, B's
  // a prefill iteration later (4 blocks). A, ahead, needs its sixth block at KV 81 while B holds
  // five: B (admitted last) is preempted and, once A has finished, recomputes its prompt and
  // the tokens it had generated on the decode replica (a prefill there), then decodes on.
  Workload w;
  w.open.push_back({0, 0.0, 60, 40});
  w.open.push_back({1, 0.0, 60, 40});
  TableTimer timer;
  const EngineResult r = simulate(w, disaggregated(1000000, 10), timer, 0);
  EXPECT_EQ(r.preemptions, 1u);
  EXPECT_EQ(r.requests[1].preemptions, 1u);
  EXPECT_EQ(r.transfers, 2u);
  EXPECT_GT(r.requests[1].finish_s, r.requests[0].finish_s);
  std::uint64_t recomputes = 0;
  for (const auto& it : r.iterations) {
    if (it.replica == 1 && it.shape.prefill > 0) {
      ++recomputes;
      EXPECT_GT(it.shape.prefill, 60u);  // the prompt and the tokens generated before
    }
  }
  EXPECT_EQ(recomputes, 1u);
}

TEST(Engine, DisaggregatedTransfersOfOnePrefillReplicaShareItsEgress) {
  // C (10 tokens) starts the prefill replica at 0; A and B arrive during it and are prefilled
  // together in its second iteration (120 tokens); their transfers start at once and share the
  // prefill replica's egress (and the decode replica's ingress): each at half rate, both done
  // after twice one's time alone (the timer states no bandwidth: all of it is time on the wire).
  Workload w;
  w.open.push_back({0, 0.0, 10, 2});
  w.open.push_back({1, 1e-4, 60, 2});
  w.open.push_back({2, 1e-4, 60, 2});
  TableTimer timer;
  const EngineResult r = simulate(w, disaggregated(), timer, 0);
  const double t1 = TableTimer::t(0, 0, 10), t2 = t1 + TableTimer::t(0, 0, 120);
  EXPECT_EQ(timer.shapes[1], (Shape{0, 0, 120, 0}));
  EXPECT_NEAR(r.requests[1].first_token_s, t2, 1e-12);
  EXPECT_NEAR(r.requests[2].first_token_s, t2, 1e-12);
  EXPECT_NEAR(r.requests[0].transfer_start_s, t1, 1e-12);
  EXPECT_NEAR(r.requests[0].transfer_end_s, t1 + TableTimer::x(10), 1e-12);
  EXPECT_NEAR(r.requests[1].transfer_start_s, t2, 1e-12);
  EXPECT_NEAR(r.requests[2].transfer_start_s, t2, 1e-12);
  EXPECT_NEAR(r.requests[1].transfer_end_s, t2 + 2 * TableTimer::x(60), 1e-12);
  EXPECT_NEAR(r.requests[2].transfer_end_s, t2 + 2 * TableTimer::x(60), 1e-12);
  EXPECT_DOUBLE_EQ(r.requests[2].transfer_alone_s, TableTimer::x(60));
  EXPECT_NEAR(r.transfer_s, TableTimer::x(10) + 4 * TableTimer::x(60), 1e-12);
  EXPECT_EQ(timer.transfers, (std::vector<std::uint64_t>{10, 60, 60}));
}

// The transfer network alone: links of capacity W, transfers of B (hand-computed max-min
// fair rates).
TEST(TransferNet, OneTransferTakesItsSizeOverTheLink) {
  TransferNet n;
  const int l = n.add_link(25e9);
  n.start(7, 100e6, {l}, 1.0);
  EXPECT_DOUBLE_EQ(n.rate(7), 25e9);
  EXPECT_NEAR(n.next_done(), 1.0 + 100e6 / 25e9, 1e-15);  // 4 ms
  EXPECT_TRUE(n.advance(1.0 + 2e-3).empty());
  EXPECT_EQ(n.advance(n.next_done()), (std::vector<std::uint64_t>{7}));
  EXPECT_EQ(n.active(), 0u);
  EXPECT_TRUE(std::isinf(n.next_done()));
}

TEST(TransferNet, TwoAtOnceOnOneLinkTakeTwiceAsLong) {
  TransferNet n;
  const int l = n.add_link(25e9);
  n.start(1, 100e6, {l}, 0);
  n.start(2, 100e6, {l}, 0);
  EXPECT_DOUBLE_EQ(n.rate(1), 12.5e9);
  EXPECT_NEAR(n.next_done(), 8e-3, 1e-15);
  EXPECT_EQ(n.advance(8e-3), (std::vector<std::uint64_t>{1, 2}));
}

TEST(TransferNet, ALaterTransferSharesWhatIsLeft) {
  // A (B = 100 MB) alone from 0; B (100 MB) joins at 2 ms, when A has 50 MB left: both at
  // 12.5 GB/s, A done at 2 + 4 = 6 ms with B half sent; B alone again, done at 6 + 2 = 8 ms.
  TransferNet n;
  const int l = n.add_link(25e9);
  n.start(1, 100e6, {l}, 0);
  n.start(2, 100e6, {l}, 2e-3);
  EXPECT_NEAR(n.next_done(), 6e-3, 1e-15);
  EXPECT_EQ(n.advance(n.next_done()), (std::vector<std::uint64_t>{1}));
  EXPECT_DOUBLE_EQ(n.rate(2), 25e9);
  EXPECT_NEAR(n.next_done(), 8e-3, 1e-15);
  EXPECT_EQ(n.advance(8e-3), (std::vector<std::uint64_t>{2}));
}

TEST(TransferNet, DisjointLinksDoNotContendAndTheTightestLinkSetsTheShare) {
  // Links a (W) and b (2W). X over a, Y over a and b, Z over b: a's share W/2 fixes X and Y;
  // Z takes what is left of b, 2W - W/2 = 1.5 W. A transfer on a link of its own: W.
  const double W = 10e9;
  TransferNet n;
  const int a = n.add_link(W), b = n.add_link(2 * W), c = n.add_link(W);
  n.start(1, 1e6, {a}, 0);
  n.start(2, 1e6, {a, b}, 0);
  n.start(3, 1e6, {b}, 0);
  n.start(4, 1e6, {c}, 0);
  EXPECT_DOUBLE_EQ(n.rate(1), W / 2);
  EXPECT_DOUBLE_EQ(n.rate(2), W / 2);
  EXPECT_DOUBLE_EQ(n.rate(3), 1.5 * W);
  EXPECT_DOUBLE_EQ(n.rate(4), W);
}

// A KV transfer path whose bandwidth is known (EFA): B bytes at W, latency L.
class EfaTimer : public TableTimer {
 public:
  static constexpr double W = 25e9, L = 20e-6, per_token = 1e6;
  TransferCost kv_transfer(std::uint64_t tokens) override {
    const double b = per_token * double(tokens);
    return {L + b / W, 0.25, b, W};
  }
};

TEST(Engine, DisaggregatedTransferOverAKnownPathIsItsBytesOverTheBandwidthAndItsLatency) {
  // One request: its 100 MB transfer takes B / W + L = 4 ms + 20 us. Two handed over at once
  // by one prefill replica to one decode replica share both ends: each 2 B / W + L (the
  // latency is not stretched).
  Workload w;
  w.open.push_back({0, 0.0, 100, 2});
  EfaTimer timer;
  const EngineResult r = simulate(w, disaggregated(), timer, 0);
  const auto& q = r.requests[0];
  EXPECT_NEAR(q.transfer_end_s - q.transfer_start_s, 100e6 / 25e9 + 20e-6, 1e-12);

  Workload two;
  two.open.push_back({0, 0.0, 10, 2});
  two.open.push_back({1, 1e-4, 60, 2});
  two.open.push_back({2, 1e-4, 60, 2});
  EfaTimer t2;
  const EngineResult r2 = simulate(two, disaggregated(), t2, 0);
  const double b = 60e6;
  for (int i : {1, 2}) {
    const auto& qi = r2.requests[std::size_t(i)];
    EXPECT_NEAR(qi.transfer_end_s - qi.transfer_start_s, 2 * b / EfaTimer::W + EfaTimer::L, 1e-12);
    EXPECT_NEAR(qi.transfer_alone_s, b / EfaTimer::W + EfaTimer::L, 1e-15);
  }
}

TEST(Engine, DisaggregatedTransfersBetweenOtherReplicasDoNotContend) {
  // Two prefill and two decode replicas; two requests arrive at once, prefill on replicas 0
  // and 1, end together and hand over to decode replicas 2 and 3: disjoint ends, each B / W + L.
  Workload w;
  w.open.push_back({0, 0.0, 100, 2});
  w.open.push_back({1, 0.0, 100, 2});
  EngineOptions o = disaggregated();
  o.replicas = 4;
  o.prefill_replicas = 2;
  EfaTimer timer;
  const EngineResult r = simulate(w, o, timer, 0);
  EXPECT_EQ(r.requests[0].replica, 0);
  EXPECT_EQ(r.requests[1].replica, 1);
  EXPECT_EQ(r.requests[0].decode_replica, 2);
  EXPECT_EQ(r.requests[1].decode_replica, 3);
  for (const auto& q : r.requests) {
    EXPECT_NEAR(q.transfer_start_s, TableTimer::t(0, 0, 100), 1e-12);
    EXPECT_NEAR(q.transfer_end_s - q.transfer_start_s, 100e6 / 25e9 + 20e-6, 1e-12);
  }
}

// A decode pool of another layout: its iterations on its own timer.
class SlowDecodeTimer : public TableTimer {
 public:
  IterationCost cost(const Shape& s) override {
    shapes.push_back(s);
    return {2e-3, 1.0};
  }
};

TEST(Engine, DisaggregatedDecodePoolOnItsOwnTimer) {
  Workload w;
  w.open.push_back({0, 0.0, 100, 4});
  TableTimer prefill;
  SlowDecodeTimer decode;
  const EngineResult r = simulate(w, disaggregated(), prefill, 0, &decode);
  // The prefill on the prefill pool's timer; the 3 decodes at 2 ms each on the decode pool's.
  EXPECT_EQ(prefill.shapes.size(), 1u);
  EXPECT_EQ(decode.shapes.size(), 3u);
  const auto& q = r.requests[0];
  EXPECT_NEAR(q.finish_s, TableTimer::t(0, 0, 100) + TableTimer::x(100) + 3 * 2e-3, 1e-12);
}

TEST(Engine, TwoRequestsShareIterations) {
  Workload w;
  w.open.push_back({0, 0.0, 100, 3});
  w.open.push_back({1, 0.0, 50, 3});
  TableTimer timer;
  const EngineResult r = simulate(w, options(), timer, 0);
  // Arrival of the first starts an iteration alone (the second is not there yet at the same
  // instant: events at one time are taken in order, and the engine starts at once). So: it 1
  // prefills A (100); B waits. It 2: A decodes (ctx 101), B prefills 50. It 3: both decode
  // (ctx 102 and 51: mean 76.5, rounded up to 77). A finishes after it 3 (3 tokens), B after
  // it 4 (ctx 52).
  ASSERT_EQ(timer.shapes.size(), 4u);
  EXPECT_EQ(timer.shapes[0], (Shape{0, 0, 100, 0}));
  EXPECT_EQ(timer.shapes[1], (Shape{1, 101, 50, 0}));
  EXPECT_EQ(timer.shapes[2], (Shape{2, 77, 0, 0}));
  EXPECT_EQ(timer.shapes[3], (Shape{1, 52, 0, 0}));
  const double t1 = TableTimer::t(0, 0, 100), t2 = TableTimer::t(1, 101, 50),
               t3 = TableTimer::t(2, 77, 0), t4 = TableTimer::t(1, 52, 0);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, t1);
  EXPECT_DOUBLE_EQ(r.requests[1].first_token_s, t1 + t2);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, t1 + t2 + t3);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_s, t1 + t2 + t3 + t4);
  EXPECT_DOUBLE_EQ(r.requests[1].first_scheduled_s, t1);
}

TEST(Engine, ChunkedPrefillUnderATokenBudget) {
  Workload w;
  w.open.push_back({0, 0.0, 100, 2});
  w.open.push_back({1, 0.0, 50, 2});
  EngineOptions o = options();
  o.scheduler.token_budget = 64;
  TableTimer timer;
  simulate(w, o, timer, 0);
  // It 1: A's first 64 tokens. It 2: A's last 36 (cached 64) and B's first 28 (the budget left);
  // A samples its first token. It 3: A decodes (KV 101) and B's last 22 (cached 28).
  ASSERT_GE(timer.shapes.size(), 3u);
  EXPECT_EQ(timer.shapes[0], (Shape{0, 0, 64, 0}));
  // A's second chunk (36, cached 64) and B's first (28, cached 0): token-weighted mean context
  // ceil(36 x 64 / 64) = 36.
  EXPECT_EQ(timer.shapes[1], (Shape{0, 0, 64, 36}));
  EXPECT_EQ(timer.shapes[2], (Shape{1, 101, 22, 28}));
}

TEST(Engine, RefusesWhatCanNeverFitAndPreemptsWhenTheCacheRunsOut) {
  // 10 blocks of 16 tokens: 160 tokens.
  EngineOptions o = options(10);
  Workload w;
  w.open.push_back({0, 0.0, 200, 10});  // 210 tokens: 14 blocks, never
  w.open.push_back({1, 0.0, 60, 40});   // at most 100 tokens: 7 blocks
  w.open.push_back({2, 0.0, 60, 40});
  TableTimer timer;
  const EngineResult r = simulate(w, o, timer, 0);
  EXPECT_TRUE(r.requests[0].refused);
  EXPECT_EQ(r.refused, 1u);
  // A arrives first and prefills alone; B prefills in A's first decode iteration, so B runs one
  // token behind A. When A feeds its 81st token it needs a sixth block (A 5, B 5: all 10 used):
  // B (admitted last) is preempted, with 20 tokens generated, and recomputed after A finishes.
  // Exactly one preemption.
  EXPECT_EQ(r.preemptions, 1u);
  EXPECT_EQ(r.requests[2].preemptions, 1u);
  EXPECT_GT(r.requests[2].finish_s, r.requests[1].finish_s);
  for (std::size_t i = 1; i < 3; ++i) EXPECT_GT(r.requests[i].finish_s, 0);
  // B's recompute: a prefill of its prompt and the 20 tokens it had generated, alone (A done).
  bool recomputed = false;
  for (const auto& s : timer.shapes) recomputed |= s == Shape{0, 0, 80, 0};
  EXPECT_TRUE(recomputed);
}

// The steady load of the Little's-law tests: 6,000 Poisson requests at 200/s of 200 input and 50
// output tokens, in batches of at most 64 and 2,048 tokens: a load the table timer's iterations
// keep up with (the throughput is the offered rate).
Workload steady_load() {
  ArrivalParams a;
  a.kind = ArrivalKind::poisson;
  a.rate_per_s = 200;
  a.input_tokens = 200;
  a.output_tokens = 50;
  a.seed = 7;
  return make_workload(a, 6000, "test");
}

EngineOptions steady_batching(EngineOptions o) {
  o.scheduler.max_batch = 64;
  o.scheduler.token_budget = 2048;
  return o;
}

TEST(Engine, LittlesLawOnASteadyRun) {
  const Workload w = steady_load();
  EngineOptions o = steady_batching(options());
  TableTimer timer;
  const EngineResult r = simulate(w, o, timer, 1000);
  SloParams slo;
  const Json f = figures(r, slo, 1, 1, timer.static_w());
  const double L = f["littles_law"]["mean_in_system"].get<double>();
  const double lw = f["littles_law"]["throughput_x_latency"].get<double>();
  // L counts each replica's requests at iteration starts (arrivals during an iteration are
  // counted from the next), so it runs below lambda W by about lambda x half an iteration.
  EXPECT_GT(L, 1.0);
  EXPECT_NEAR(L / lw, 1.0, 0.05) << "L " << L << " lambda W " << lw;
  // Steady: the throughput is the offered rate.
  EXPECT_NEAR(f["throughput"]["requests_per_s"].get<double>(), 200, 10);
}

// Past the engine's cap on iteration records (EngineOptions::max_iteration_records) the kept
// iterations are the first ones: Little's law's mean is over the part of the window they cover
// (`over_s`), and still agrees with throughput x latency on the steady run above. Averaged over
// the whole window it fell short by the fraction not covered.
TEST(Engine, LittlesLawPastTheIterationRecordCap) {
  const Workload w = steady_load();
  EngineOptions o = steady_batching(options());
  TableTimer timer;
  const std::uint64_t total = simulate(w, o, timer, 1000).iterations_total;
  // Kept: the iterations of the first 3/5 of the run; the warm-up (1,000 of the 6,000
  // requests) is the first sixth, so they cover a little over half the window.
  o.max_iteration_records = total * 3 / 5;
  const EngineResult r = simulate(w, o, timer, 1000);
  ASSERT_EQ(r.iterations_total, total);
  ASSERT_EQ(r.iterations.size(), o.max_iteration_records);
  const Json f = figures(r, SloParams{}, 1, 1, timer.static_w());
  const double over = f["littles_law"]["over_s"].get<double>(), window = f["window_s"].get<double>();
  EXPECT_GT(over, 0.4 * window);
  EXPECT_LT(over, 0.6 * window);
  const double L = f["littles_law"]["mean_in_system"].get<double>();
  const double lw = f["littles_law"]["throughput_x_latency"].get<double>();
  EXPECT_NEAR(L / lw, 1.0, 0.05) << "L " << L << " lambda W " << lw;
}

// Past the cap on iteration records, the disaggregated pools' means are still over every
// iteration (the same as with every record kept), and over_time still spans the run.
TEST(Engine, PoolsAndOverTimeCoverTheRunPastTheIterationRecordCap) {
  const Workload w = steady_load();
  EngineOptions o = steady_batching(disaggregated());
  TableTimer timer;
  const EngineResult all = simulate(w, o, timer, 1000);
  ASSERT_EQ(all.iterations.size(), all.iterations_total);
  o.max_iteration_records = all.iterations_total / 10;
  const EngineResult capped = simulate(w, o, timer, 1000);
  ASSERT_EQ(capped.iterations.size(), o.max_iteration_records);
  const Json fa = figures(all, SloParams{}, 2, 2, timer.static_w());
  const Json fc = figures(capped, SloParams{}, 2, 2, timer.static_w());
  EXPECT_EQ(fc["pools"], fa["pools"]);
  EXPECT_EQ(fa["pools"]["prefill"]["iterations"].get<std::uint64_t>() +
                fa["pools"]["decode"]["iterations"].get<std::uint64_t>(),
            all.iterations_total);
  // The sample: every stride-th iteration, 512 to 1,023 of them (the cap 1,024); the last within
  // a stride of the run's last iteration.
  const std::uint64_t n = all.iterations_total, stride = capped.sampled_stride;
  ASSERT_EQ(capped.sampled.size(), (n + stride - 1) / stride);
  EXPECT_GE(capped.sampled.size(), 512u);
  EXPECT_LT(capped.sampled.size(), 1024u);
  for (std::size_t k = 0; k < capped.sampled.size(); ++k) {
    const IterationRecord& a = capped.sampled[k];
    const IterationRecord& b = all.iterations[k * stride];
    ASSERT_EQ(a.start_s, b.start_s) << k;
    ASSERT_EQ(a.replica, b.replica) << k;
    ASSERT_EQ(a.kv_blocks, b.kv_blocks) << k;
  }
  const Json& rows = fc["over_time"]["rows"];
  ASSERT_EQ(rows.size(), capped.sampled.size());
  EXPECT_GT(rows.back()[0].get<double>(), all.iterations[n - stride].start_s - 1e-12);
  // Below the cap, over_time is as before: every (n / 512)-th record.
  EXPECT_EQ(fa["over_time"]["rows"].size(), (n + n / 512 - 1) / (n / 512));
}

// The sample's stride on a hand-counted run: one request of 100 output tokens on one replica is
// 100 iterations (its prefill, then 99 decodes). With room for 8, the stride doubles at the 8th
// kept (indices 0 to 7, then 0, 2, ..., 14, ...) until 100 iterations fit in 7: stride 16, kept
// 0, 16, ..., 96.
TEST(Engine, SampledIterationsDoubleTheirStride) {
  Workload w;
  w.open.push_back({0, 0.0, 10, 100});
  EngineOptions o = options();
  o.max_sampled = 8;
  TableTimer timer;
  const EngineResult r = simulate(w, o, timer, 0);
  ASSERT_EQ(r.iterations_total, 100u);
  EXPECT_EQ(r.sampled_stride, 16u);
  ASSERT_EQ(r.sampled.size(), 7u);
  for (std::size_t k = 0; k < 7; ++k) EXPECT_EQ(r.sampled[k].start_s, r.iterations[16 * k].start_s);
}

TEST(Engine, DisaggregatedLittlesLawOnASteadyRun) {
  // The same load on one prefill and one decode replica: a request is counted by its prefill
  // replica while waiting or prefilling, then by its decode replica (waiting for blocks, in
  // transfer, running), each at its iterations' starts.
  const Workload w = steady_load();
  EngineOptions o = steady_batching(disaggregated());
  TableTimer timer;
  const EngineResult r = simulate(w, o, timer, 1000);
  const Json f = figures(r, SloParams{}, 2, 2, timer.static_w());
  const double L = f["littles_law"]["mean_in_system"].get<double>();
  const double lw = f["littles_law"]["throughput_x_latency"].get<double>();
  EXPECT_GT(L, 1.0);
  EXPECT_NEAR(L / lw, 1.0, 0.05) << "L " << L << " lambda W " << lw;
  EXPECT_NEAR(f["throughput"]["requests_per_s"].get<double>(), 200, 10);
  EXPECT_EQ(f["kv_transfer"]["transfers"], 6000);
  EXPECT_DOUBLE_EQ(f["kv_transfer"]["bytes"].get<double>(), 6000 * 200 * 1000.0);
  EXPECT_EQ(f["pools"]["prefill"]["iterations"].get<std::uint64_t>() +
                f["pools"]["decode"]["iterations"].get<std::uint64_t>(),
            r.iterations_total);
}

TEST(Engine, ClosedLoopKeepsUsersBusy) {
  Workload w;
  w.users = 2;
  w.think_s = 0.5;
  for (int i = 0; i < 4; ++i) w.lengths.push_back({0, 0, 10, 1});
  TableTimer timer;
  const EngineResult r = simulate(w, options(), timer, 0);
  ASSERT_EQ(r.requests.size(), 4u);
  // Both users' first requests arrive at 0; each user's next request a think time after its
  // previous one finished (request 2 is user 1's second: issued when request 0 finished).
  EXPECT_DOUBLE_EQ(r.requests[2].req.arrival_s, r.requests[0].finish_s + 0.5);
}

TEST(SolveUsers, DoublesThenBisectsToTheLargestConcurrencyMeetingTheTarget) {
  // tokens/s per user = 1000 / (10 + n): at least 40 while n <= 15.
  auto f = [](std::uint64_t n) { return 1000.0 / (10.0 + double(n)); };
  UsersSolution s = solve_users(f, 40, 1024);
  EXPECT_EQ(s.users, 15u);
  EXPECT_FALSE(s.capped);
  // 1, 2, 4, 8 meet, 16 misses; then 12 (meets), 14 (meets), 15 (meets).
  std::vector<std::uint64_t> tried;
  for (const auto& p : s.points) tried.push_back(p.users);
  EXPECT_EQ(tried, (std::vector<std::uint64_t>{1, 2, 4, 8, 16, 12, 14, 15}));
  EXPECT_FALSE(s.points[4].meets);
  EXPECT_DOUBLE_EQ(s.points[4].tokens_per_s_per_user, 1000.0 / 26);
  // Every point meets up to the cap: the answer is the cap, marked.
  s = solve_users(f, 1, 8);
  EXPECT_EQ(s.users, 8u);
  EXPECT_TRUE(s.capped);
  EXPECT_EQ(s.points.size(), 4u);  // 1, 2, 4, 8
  // Not even one user meets it.
  s = solve_users(f, 1000, 1024);
  EXPECT_EQ(s.users, 0u);
  EXPECT_EQ(s.points.size(), 1u);
}

// Every sequence in an iteration costs 1 ms on top of 10 ms: with 1-token prompts, n users never
// put more than n sequences in an iteration, so TPOT <= 10 + n ms.
class PerSequenceTimer : public IterationTimer {
 public:
  IterationCost cost(const Shape& s) override {
    return {10e-3 + 1e-3 * double(s.decode + s.prefill), 0.5};
  }
  double static_w() const override { return 100; }
};

TEST(SolveUsers, OnAStubTimerTheLargestConcurrencyWithinTheTpot) {
  // Target 49.9 tokens/s per user (TPOT <= 20.04 ms): n <= 10 users give TPOT <= 20 ms (at most
  // n sequences an iteration); 11 users put 11 sequences in most of a request's iterations (a
  // user is out of the batch only for the iteration after its request finishes), so the p50
  // TPOT is above 20.04 ms. The answer is 10, reached by 1, 2, 4, 8, 16, 12, 10, 11.
  PerSequenceTimer timer;
  EngineOptions o = options();
  o.scheduler.max_batch = 64;
  std::map<std::uint64_t, double> tpot_p50;
  auto per_user = [&](std::uint64_t n) {
    Workload w;
    w.users = n;
    for (std::uint64_t i = 0; i < 5 * n; ++i) w.lengths.push_back({0, 0, 1, 40});
    const EngineResult r = simulate(w, o, timer, n);
    const Json f = figures(r, SloParams{}, 1, 1, timer.static_w());
    tpot_p50[n] = f["tpot_s"]["p50"].get<double>();
    return f["throughput"]["tokens_per_s_per_user"]["p50"].get<double>();
  };
  const UsersSolution s = solve_users(per_user, 49.9, 1024);
  EXPECT_EQ(s.users, 10u);
  std::vector<std::uint64_t> tried;
  for (const auto& p : s.points) tried.push_back(p.users);
  EXPECT_EQ(tried, (std::vector<std::uint64_t>{1, 2, 4, 8, 16, 12, 10, 11}));
  // One user: every iteration holds its one sequence, 11 ms.
  EXPECT_NEAR(tpot_p50[1], 11e-3, 1e-12);
  for (std::uint64_t n : {2, 4, 8, 10}) EXPECT_LE(tpot_p50[n], (10.0 + double(n)) * 1e-3 + 1e-12) << n;
  EXPECT_GT(tpot_p50[11], 20.04e-3);
  EXPECT_LE(tpot_p50[11], 21e-3 + 1e-12);
}

TEST(Grid, CellsAreOnPowersOfTwoAndHalves) {
  EXPECT_EQ(grid_cell(0), (std::pair<std::uint64_t, std::uint64_t>{0, 0}));
  EXPECT_EQ(grid_cell(4), (std::pair<std::uint64_t, std::uint64_t>{4, 4}));
  EXPECT_EQ(grid_cell(5), (std::pair<std::uint64_t, std::uint64_t>{4, 6}));
  EXPECT_EQ(grid_cell(7), (std::pair<std::uint64_t, std::uint64_t>{6, 8}));
  EXPECT_EQ(grid_cell(1000), (std::pair<std::uint64_t, std::uint64_t>{768, 1024}));
  EXPECT_EQ(grid_cell(1536), (std::pair<std::uint64_t, std::uint64_t>{1536, 1536}));
  EXPECT_EQ(grid_cell(1536, 1), (std::pair<std::uint64_t, std::uint64_t>{1024, 2048}));
  EXPECT_EQ(grid_cell(5, 1), (std::pair<std::uint64_t, std::uint64_t>{4, 8}));
}

// The decode context's cells in whole key tiles: the time steps up between the last context of a
// tile count and the first of the next, so a cell ends on both sides of such a step.
TEST(Grid, ContextCellsAreWholeKeyTiles) {
  using P = std::pair<std::uint64_t, std::uint64_t>;
  EXPECT_EQ(context_cell(0, 128), (P{0, 0}));
  EXPECT_EQ(context_cell(1, 128), (P{1, 1}));
  EXPECT_EQ(context_cell(50, 128), (P{1, 128}));  // one tile
  EXPECT_EQ(context_cell(128, 128), (P{128, 128}));
  EXPECT_EQ(context_cell(129, 128), (P{129, 129}));  // the first context of tile 2
  EXPECT_EQ(context_cell(200, 128), (P{129, 256}));  // tile counts (1, 2]
  // 1,100 keys: 9 tiles, between the grid's 8 and 12: from 8 x 128 + 1 to 12 x 128.
  EXPECT_EQ(context_cell(1100, 128), (P{1025, 1536}));
  // 1,536 = 12 tiles, a grid point: the end of the cell (8, 12]; 1,537 the start of (12, 16].
  EXPECT_EQ(context_cell(1536, 128), (P{1536, 1536}));
  EXPECT_EQ(context_cell(1537, 128), (P{1537, 1537}));
  EXPECT_EQ(context_cell(1600, 128), (P{1537, 2048}));
  // 4,097 keys (the step bench iteration measured, docs/inference.md): on a cell's low end.
  EXPECT_EQ(context_cell(4096, 128), (P{4096, 4096}));
  EXPECT_EQ(context_cell(4097, 128), (P{4097, 4097}));
  EXPECT_EQ(context_cell(5000, 128), (P{4097, 6144}));
  // One point per octave: tile counts 4, 8, 16, ...
  EXPECT_EQ(context_cell(1600, 128, 1), (P{1025, 2048}));
}

// The coarse grid: 0, 1, 4, 16, 64, ... (the mixed grid's batch: a prefill chunk's increment
// falls slowly with the decodes beside it; a chunk's cached context: the time is close to linear
// in it).
TEST(Grid, CoarseCellsArePowersOfFour) {
  using P = std::pair<std::uint64_t, std::uint64_t>;
  EXPECT_EQ(coarse_cell(0), (P{0, 0}));
  EXPECT_EQ(coarse_cell(1), (P{1, 1}));
  EXPECT_EQ(coarse_cell(2), (P{1, 4}));
  EXPECT_EQ(coarse_cell(4), (P{4, 4}));
  EXPECT_EQ(coarse_cell(5), (P{4, 16}));
  EXPECT_EQ(coarse_cell(63), (P{16, 64}));
  EXPECT_EQ(coarse_cell(256), (P{256, 256}));
  EXPECT_EQ(coarse_cell(300), (P{256, 1024}));
}

// The shapes that time one shape on the fixed grid, and their weights, by hand (key tile 128,
// two points per octave).
TEST(Grid, TermsOfPureAndMixedShapes) {
  using T = std::vector<std::pair<Shape, double>>;
  const auto expect = [](const Shape& s, T want) {
    T got = grid_terms(s, 128);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got.size(), want.size()) << s.decode << " " << s.context << " " << s.prefill;
    double sum = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i].first) << i;
      EXPECT_NEAR(got[i].second, want[i].second, 1e-12) << i;
      sum += got[i].second;
    }
    EXPECT_NEAR(sum, 1, 1e-12);
  };
  // A pure decode of 5 at KV 200: batch (4, 6), KV in the tile cell (129, 256) (tile counts
  // (1, 2], one point per octave).
  const double k = (200.0 - 129) / (256 - 129);
  expect({5, 200, 0, 0}, {{{4, 129, 0, 0}, 0.5 * (1 - k)}, {{4, 256, 0, 0}, 0.5 * k},
                          {{6, 129, 0, 0}, 0.5 * (1 - k)}, {{6, 256, 0, 0}, 0.5 * k}});
  // A pure prefill of 100 tokens after 40: the chunk in whole row tiles, [1, 128] (f = 99/127),
  // the cached context on the coarse grid (16, 64), halfway.
  const double f = 99.0 / 127;
  expect({0, 0, 100, 40}, {{{0, 0, 1, 16}, (1 - f) * 0.5}, {{0, 0, 1, 64}, (1 - f) * 0.5},
                           {{0, 0, 128, 16}, f * 0.5}, {{0, 0, 128, 64}, f * 0.5}});
  // Mixed: 2 decodes at KV 200 beside a 100-token chunk (one data-parallel group: 102 rows): the
  // pure decode (batch 2 a point, KV (129, 256)), plus the chunk's increment at batches 1 and 4
  // (2/3 and 1/3) at KV 128 (the anchor: one tile), its rows in [1, 128] (101/127 of the way), each
  // anchor's chunk the rows less its own decodes (at least 1: 1 and 127 beside 1 decode, 1 and 124
  // beside 4), less the pure decodes of 1 and 4 at KV 128.
  const double r = 101.0 / 127;
  const T mixed = {{{2, 129, 0, 0}, 1 - k}, {{2, 256, 0, 0}, k},
                   {{1, 128, 1, 0}, 2.0 / 3 * (1 - r)}, {{1, 128, 127, 0}, 2.0 / 3 * r},
                   {{4, 128, 1, 0}, 1.0 / 3 * (1 - r)}, {{4, 128, 124, 0}, 1.0 / 3 * r},
                   {{1, 128, 0, 0}, -2.0 / 3}, {{4, 128, 0, 0}, -1.0 / 3}};
  expect({2, 200, 100, 0}, mixed);
  // The same chunk after 40 cached tokens: plus what the 40 add to the pure prefill of the
  // chunk's grid points (the prefill after 16 and 64, halfway, less the prefill after none).
  T after = mixed;
  for (const auto& [p, w] : std::vector<std::pair<std::uint64_t, double>>{{1, 1 - f}, {128, f}}) {
    after.push_back({{0, 0, p, 16}, 0.5 * w});
    after.push_back({{0, 0, p, 64}, 0.5 * w});
    after.push_back({{0, 0, p, 0}, -w});
  }
  expect({2, 200, 100, 40}, after);
  // A mixed grid point is its own simulation: 4 decodes at KV 128 beside a 124-token chunk (128
  // rows, a whole tile).
  expect({4, 128, 124, 0}, {{{4, 128, 0, 0}, 1}, {{4, 128, 124, 0}, 1}, {{4, 128, 0, 0}, -1}});
  // Data-parallel groups: 130 decodes over 64 groups put 3 in group 0, so a 125-token chunk fills
  // one tile of rows; beside the anchor batches 64 (1 in group 0) and 256 (4) its chunk is 127
  // and 124 tokens. The decodes: batch (128, 192), 62/64 of the way to 128.
  const double fb = (130.0 - 64) / (256 - 64);
  T dp = grid_terms({130, 128, 125, 0}, 128, 2, 64);
  std::sort(dp.begin(), dp.end());
  T want = {{{128, 128, 0, 0}, 62.0 / 64}, {{192, 128, 0, 0}, 2.0 / 64},
            {{64, 128, 127, 0}, 1 - fb}, {{256, 128, 124, 0}, fb},
            {{64, 128, 0, 0}, -(1 - fb)}, {{256, 128, 0, 0}, -fb}};
  std::sort(want.begin(), want.end());
  ASSERT_EQ(dp.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(dp[i].first, want[i].first) << i;
    EXPECT_NEAR(dp[i].second, want[i].second, 1e-12) << i;
  }
}

TEST(Stats, NearestRankPercentile) {
  EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 0.5), 3);
  EXPECT_DOUBLE_EQ(percentile({5, 1, 4, 2, 3}, 0.99), 5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2);
}

// Several ranks of one copy, each selected above the one before: the values a sort gives.
TEST(Stats, PercentilesSelectTheSortedRanks) {
  // Sorted: 1 1 2 3 3 4 5 5 6 9; ranks ceil(p x 10): 3, 5, 9, 10.
  EXPECT_EQ(percentiles({3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, {0.3, 0.5, 0.9, 0.99}),
            (std::vector<double>{2, 3, 6, 9}));
  EXPECT_EQ(percentiles({}, {0.5, 0.9}), (std::vector<double>{0, 0}));
  EXPECT_THROW(percentiles({1, 2}, {0.9, 0.5}), InternalError);
  // 10,007 values with many ties, against the sorted copy's nearest ranks.
  std::vector<double> v;
  for (std::uint64_t i = 0; i < 10'007; ++i) v.push_back(double((i * 7919) % 613) * 0.25);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<double> ps = {0.0, 0.25, 0.5, 0.5, 0.9, 0.99, 1.0};
  const std::vector<double> got = percentiles(v, ps);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto rank = std::size_t(std::ceil(ps[i] * double(sorted.size())));
    EXPECT_EQ(got[i], sorted[rank == 0 ? 0 : rank - 1]) << ps[i];
  }
}

TEST(Arrivals, ReadsTheAzureTraceInPlace) {
  const std::string path =
      std::string(TRNSIM_SOURCE_DIR) + "/../shared/traces/serving/azure/AzureLLMInferenceTrace_conv.csv";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  const auto r = read_request_file(path, 0.5);
  ASSERT_EQ(r.size(), 19366u);
  // Its first two rows: 18:15:46.6805900 374 44 and 18:15:50.9951690 396 109.
  EXPECT_EQ(r[0].input_tokens, 374u);
  EXPECT_EQ(r[1].output_tokens, 109u);
  EXPECT_NEAR(r[1].arrival_s, (50.9951690 - 46.6805900) * 0.5, 1e-6);
}

// A spec in a temporary folder, served through the command line.
struct SpecDir {
  fs::path dir;
  explicit SpecDir(const std::string& name) {
    dir = fs::temp_directory_path() / ("trnsim-serve-" + name + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~SpecDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

const char* kSmall = R"({
  "name": "small", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
  "scheduler": {"max_batch": 8, "token_budget": 512},
  "arrivals": {"kind": "poisson", "rate_per_s": 50, "input_tokens": 128, "output_tokens": 4,
               "seed": 3},
  "run": {"requests": 6},
  "timing": {"mode": "exact"}
})";

// One request of 128 input and 3 output tokens on one TP-1 replica, every shape simulated.
const char* kOneRequest = R"({
    "name": "one", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
    "arrivals": {"kind": "poisson", "rate_per_s": 1, "input_tokens": 128, "output_tokens": 3},
    "run": {"requests": 1}, "timing": {"mode": "exact"}})";

TEST(ServeCli, OneRequestIsItsSimulatedPrefillIteration) {
  SpecDir d("one");
  const std::string spec = d.write("one.json", kOneRequest);
  const auto r = test::run_trnsim(fmt::format("serve {} --json", spec), false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  const auto& rows = j["timing"]["shapes"]["rows"];
  // Three shapes: the prefill of 128 and decodes at 129 and 130 (columns decode, context,
  // prefill, prefill_context, time_s).
  ASSERT_EQ(rows.size(), 3u);
  double prefill = 0, d129 = 0, d130 = 0;
  for (const auto& row : rows) {
    if (row[2] == 128) prefill = row[4];
    if (row[0] == 1 && row[1] == 129) d129 = row[4];
    if (row[0] == 1 && row[1] == 130) d130 = row[4];
  }
  // The iteration includes the runtime's launch and sync (15 + 10 us by default).
  EXPECT_GT(prefill, 25e-6);
  EXPECT_GT(d129, 25e-6);
  const auto& res = j["results"];
  EXPECT_DOUBLE_EQ(res["ttft_s"]["p50"].get<double>(), prefill);
  EXPECT_NEAR(res["e2e_s"]["p50"].get<double>(), prefill + d129 + d130, 1e-12);
}

// The small spec with one prefill and one decode replica of TP 1.
std::string disaggregated_small() {
  Json j = Json::parse(kSmall);
  j["disaggregated"] = {{"prefill", {{"replicas", 1}}}, {"decode", {{"replicas", 1}}}};
  return j.dump();
}

TEST(ServeCli, DisaggregatedOneRequestIsItsPrefillItsTransferAndItsDecodes) {
  SpecDir d("disone");
  const std::string spec = d.write("one.json", R"({
    "name": "one", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
    "disaggregated": {"prefill": {"replicas": 1}, "decode": {"layout": "tp=1", "replicas": 1}},
    "arrivals": {"kind": "poisson", "rate_per_s": 1, "input_tokens": 128, "output_tokens": 3},
    "run": {"requests": 1}, "timing": {"mode": "exact"}})");
  const auto r = test::run_trnsim(fmt::format("serve {} --json", spec), false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  const auto& rows = j["timing"]["shapes"]["rows"];
  // The prefill iteration of 128 tokens (prefill replica) and decodes at 129 and 130 (decode
  // replica), timed as the co-located ones are.
  ASSERT_EQ(rows.size(), 3u);
  double prefill = 0, d129 = 0, d130 = 0;
  for (const auto& row : rows) {
    if (row[2] == 128) prefill = row[4];
    if (row[0] == 1 && row[1] == 129) d129 = row[4];
    if (row[0] == 1 && row[1] == 130) d130 = row[4];
  }
  EXPECT_GT(prefill, 25e-6);  // runtime costs included
  // One transfer of the prompt's KV, simulated on the fabric: 32 layers x 128 tokens x 4,096 B
  // (8 KV heads x 128 x K and V x 2 B) = 16,777,216 B from chip 0 to chip 1.
  const auto& tr = j["timing"]["kv_transfers"]["rows"];
  ASSERT_EQ(tr.size(), 1u);
  EXPECT_EQ(tr[0][0], 128);
  EXPECT_DOUBLE_EQ(tr[0][1].get<double>(), 16777216.0);
  const double x = tr[0][2].get<double>();
  EXPECT_GT(x, 0);
  const auto& res = j["results"];
  // TTFT ends at the first token, which the prefill samples; E2E adds the transfer and the two
  // decode iterations.
  EXPECT_DOUBLE_EQ(res["ttft_s"]["p50"].get<double>(), prefill);
  EXPECT_NEAR(res["e2e_s"]["p50"].get<double>(), prefill + x + d129 + d130, 1e-12);
  EXPECT_EQ(res["kv_transfer"]["transfers"], 1);
  EXPECT_DOUBLE_EQ(res["kv_transfer"]["bytes"].get<double>(), 16777216.0);
  EXPECT_NEAR(res["kv_transfer"]["transfer_s"]["p50"].get<double>(), x, 1e-15);  // end - start
  EXPECT_EQ(res["pools"]["prefill"]["iterations"], 1);
  EXPECT_EQ(res["pools"]["decode"]["iterations"], 2);
  EXPECT_EQ(j["machine"]["replicas"], 2);
  EXPECT_DOUBLE_EQ(j["machine"]["chips_used"].get<double>(), 2.0);
}

TEST(ServeCli, DisaggregatedOverEfaIsTheBytesOverTheNicAndTheLatency) {
  // The pools on two UltraServers of a Trn2 cluster: the prompt's 16,777,216 B go from chip 0
  // of one to chip 0 of the other through one 25 GB/s NIC at each end: 671.1 us on the wire,
  // plus the path's latency; at Mooncake's measured 19.3 GB/s, 869.3 us plus the latency.
  SpecDir d("disefa");
  Json j = Json::parse(kSmall);
  j["disaggregated"] = {{"prefill", {{"replicas", 1}}},
                        {"decode", {{"replicas", 1}}},
                        {"transfer", {{"cluster", "trn2-ultracluster"}}}};
  j["run"]["requests"] = 1;
  const std::string spec = d.write("efa.json", j.dump());
  for (const char* bw : {"", "19.3GB/s"}) {
    const std::string set = *bw ? fmt::format(" --set disaggregated.transfer.nic_bandwidth={}", bw) : "";
    const auto r = test::run_trnsim(fmt::format("serve {} --json{}", spec, set), false);
    ASSERT_EQ(r.code, 0) << r.out;
    const Json o = Json::parse(r.out);
    const double W = *bw ? 19.3e9 : 25e9;
    const auto& tr = o["timing"]["kv_transfers"]["rows"];
    ASSERT_EQ(tr.size(), 1u);
    EXPECT_DOUBLE_EQ(tr[0][1].get<double>(), 16777216.0);
    EXPECT_DOUBLE_EQ(tr[0][4].get<double>(), W);  // one NIC each end
    const double x = tr[0][2].get<double>();
    // B / W and the 15 us HBM-to-HBM EFA latency the preset's NIC latency is derived from
    // (2 x 6.5 us NICs, a leaf switch, the endpoint overheads; docs/scaling.md#presets).
    EXPECT_NEAR(x, 16777216.0 / W + 15e-6, 1e-6) << bw;
    EXPECT_NEAR(o["results"]["kv_transfer"]["transfer_s"]["p50"].get<double>(), x, 1e-15);
    EXPECT_NE(o["machine"]["disaggregated"]["kv_transfer_path"].get<std::string>().find("EFA"),
              std::string::npos);
  }
}

TEST(ServeCli, DisaggregatedPoolsOfDifferentLayouts) {
  // Prefill TP 2, decode TP 1 (Llama 3.1 8B, 8 KV heads): the decode rank holds all 8 heads,
  // half from each prefill rank: 32 layers x 128 tokens x 4,096 B = 16,777,216 B in all, as
  // with one layout. The decode pool's iterations are its own shapes.
  SpecDir d("dislayouts");
  Json j = Json::parse(kSmall);
  j["disaggregated"] = {{"prefill", {{"replicas", 1}, {"layout", "tp=2"}}},
                        {"decode", {{"replicas", 2}, {"layout", "tp=1"}}}};
  j["run"]["requests"] = 1;
  const std::string spec = d.write("layouts.json", j.dump());
  const auto r = test::run_trnsim(fmt::format("serve {} --json", spec), false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json o = Json::parse(r.out);
  EXPECT_EQ(o["machine"]["layout"], "tp=2,dp=1,ep=1,pp=1");
  EXPECT_EQ(o["machine"]["decode_layout"], "tp=1,dp=1,ep=1,pp=1");
  EXPECT_DOUBLE_EQ(o["machine"]["chips_used"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(o["machine"]["disaggregated"]["prefill_chips"].get<double>(), 2.0);
  const auto& tr = o["timing"]["kv_transfers"]["rows"];
  ASSERT_EQ(tr.size(), 1u);
  EXPECT_DOUBLE_EQ(tr[0][1].get<double>(), 16777216.0);
  // KV per token and rank: 4,096 B at TP 1, 2,048 B at TP 2.
  EXPECT_EQ(o["kv_cache"]["kv_bytes_per_token_rank"].get<double>(), 32 * 2048.0);
  EXPECT_EQ(o["kv_cache"]["decode"]["kv_bytes_per_token_rank"].get<double>(), 32 * 4096.0);
  ASSERT_EQ(o["timing"]["shapes"]["rows"].size(), 1u);         // the prefill
  ASSERT_EQ(o["timing"]["decode_shapes"]["rows"].size(), 3u);  // decodes at 129 to 131
  EXPECT_EQ(o["results"]["pools"]["decode"]["replicas"], 2);
}

TEST(KvHandoff, PoolsOfDifferentTpSplitTheHeads) {
  infer::IterationSpec p, dd;
  p.model = infer::load_model(infer::model_path("llama-3.1-8b", bench::data_path("configs/models")));
  dd.model = p.model;
  p.layout = infer::parse_layout("tp=2");
  dd.layout = infer::parse_layout("tp=4");
  // Decode TP 4 from prefill TP 2: decode rank t takes its heads from prefill rank t / 2; each
  // receives 32 layers x 10 tokens x 1,024 B (2 of 8 KV heads x 128 x K and V x 2 B).
  const trace::Workload w = kv_handoff_workload(p, dd, 10, 2);
  ASSERT_EQ(w.ranks.size(), 6u);
  for (int rd = 0; rd < 4; ++rd) {
    const auto& ops = w.ranks[std::size_t(2 + rd)].ops;
    ASSERT_EQ(ops.size(), 32u);
    EXPECT_EQ(ops[0].peer, rd / 2);
    EXPECT_EQ(ops[0].bytes, 10240u);
  }
  // And back: decode TP 1 from prefill TP 2 (decode_first 4: ranks 2 and 3 idle): rank 4 gets
  // each layer from both prefill ranks, 10 x 4,096 / 2 B from each.
  infer::IterationSpec one = p;
  one.layout = infer::parse_layout("tp=1");
  const trace::Workload w1 = kv_handoff_workload(p, one, 10, 4);
  ASSERT_EQ(w1.ranks.size(), 5u);
  EXPECT_TRUE(w1.ranks[2].ops.empty());
  const auto& ops = w1.ranks[4].ops;
  ASSERT_EQ(ops.size(), 64u);
  EXPECT_EQ(ops[0].peer, 0);
  EXPECT_EQ(ops[1].peer, 1);
  EXPECT_EQ(ops[0].bytes, 20480u);
}

TEST(KvHandoff, OneLayoutIsEachRankOfTheFirstGroupSendingItsLayersToItsCounterpart) {
  // One layout for both pools, decode_first = n (what the rack timer's own transfer workload
  // was before KvTransferTimer took all of them): prefill rank r of the first data-parallel
  // group sends each layer of its stage, tokens x kv_bytes_per_token_layer_rank, to rank r + n.
  infer::IterationSpec p;
  p.model = infer::load_model(infer::model_path("llama-3.1-8b", bench::data_path("configs/models")));
  // TP 2 x DP 2 (n = 4): ranks 0 and 1 (group 0) send 32 layers x 10 x 2,048 B (4 of 8 KV
  // heads x 128 x K and V x 2 B) to ranks 4 and 5; group 1's ranks (2, 3) send nothing.
  p.layout = infer::parse_layout("tp=2,dp=2");
  const trace::Workload w = kv_handoff_workload(p, p, 10, 4);
  ASSERT_EQ(w.ranks.size(), 8u);
  for (int r : {0, 1}) {
    const auto& ops = w.ranks[std::size_t(r)].ops;
    ASSERT_EQ(ops.size(), 32u);
    for (std::size_t l = 0; l < 32; ++l) {
      EXPECT_EQ(ops[l].kind, trace::OpKind::send);
      EXPECT_EQ(ops[l].peer, r + 4);
      EXPECT_EQ(ops[l].bytes, 20480u);
      EXPECT_EQ(ops[l].tag, std::int64_t(l));
    }
    const auto& in = w.ranks[std::size_t(r + 4)].ops;
    ASSERT_EQ(in.size(), 32u);
    EXPECT_EQ(in[0].kind, trace::OpKind::recv);
    EXPECT_EQ(in[0].peer, r);
  }
  for (int r : {2, 3, 6, 7}) EXPECT_TRUE(w.ranks[std::size_t(r)].ops.empty()) << r;
  // PP 2 (n = 2): rank 0 sends layers 0 to 15 to rank 2, rank 1 layers 16 to 31 to rank 3,
  // 10 x 4,096 B each.
  p.layout = infer::parse_layout("tp=1,pp=2");
  const trace::Workload pp = kv_handoff_workload(p, p, 10, 2);
  ASSERT_EQ(pp.ranks[0].ops.size(), 16u);
  ASSERT_EQ(pp.ranks[1].ops.size(), 16u);
  EXPECT_EQ(pp.ranks[0].ops[0].peer, 2);
  EXPECT_EQ(pp.ranks[1].ops[0].peer, 3);
  EXPECT_EQ(pp.ranks[1].ops[0].tag, 16);
  EXPECT_EQ(pp.ranks[1].ops[0].bytes, 40960u);
}

TEST(KvTransferTimer, SimulatesEachGridPointOnceWithItsBytesAndInterpolatesBetween) {
  // Llama 3.1 8B, TP 1 pools on the Trn2 UltraServer's fabric (decode replica from rank 1): a
  // prompt of 128 tokens moves 32 layers x 128 x 4,096 B = 16,777,216 B, simulated once (its
  // child returns the bytes with the time). 112 tokens lies between the grid points 96 and 128:
  // its time half way from 96's to 128's (16 of 32 tokens), its bytes its own.
  infer::IterationSpec p;
  p.model = infer::load_model(infer::model_path("llama-3.1-8b", bench::data_path("configs/models")));
  p.layout = infer::parse_layout("tp=1");
  TransferPath path;
  path.cfg = bench::ConfigSource{bench::data_path("configs/racks/trn2-ultraserver.json"), {}}.load();
  path.decode_first = 1;
  KvTransferTimer t(path, p, p, TimingMode::grid, 2, 2);
  const TransferCost c128 = t.cost(128);
  EXPECT_DOUBLE_EQ(c128.bytes, 16777216.0);
  EXPECT_DOUBLE_EQ(c128.bandwidth, 0.0);  // the fabric: not stated
  EXPECT_GT(c128.time_s, 16777216.0 / 1e12);
  EXPECT_EQ(t.table().size(), 1u);
  const TransferCost c112 = t.cost(112);
  ASSERT_EQ(t.table().size(), 2u);  // 96 simulated too, 128 reused
  const TransferCost& c96 = t.table().at(96);
  EXPECT_DOUBLE_EQ(c96.bytes, 96 * 32 * 4096.0);
  EXPECT_NEAR(c112.time_s, (c96.time_s + c128.time_s) / 2, 1e-15);
  EXPECT_DOUBLE_EQ(c112.bytes, 112 * 32 * 4096.0);
  EXPECT_EQ(t.lookups(), 2u);
}

// Contention (docs/serving.md#contention).
TEST(TransferNet, ALowerCapacitySlowsTheTransfersOnTheLinkFromThen) {
  // 100 MB at 25 GB/s from 0; at 2 ms (50 MB left) the link drops to 12.5 GB/s: done at
  // 2 + 4 = 6 ms. A transfer on another link keeps its rate.
  TransferNet n;
  const int a = n.add_link(25e9), b = n.add_link(25e9);
  n.start(1, 100e6, {a}, 0);
  n.start(2, 100e6, {b}, 0);
  EXPECT_EQ(n.on_link(a), 1);
  EXPECT_TRUE(n.set_capacity(a, 12.5e9, 2e-3).empty());
  EXPECT_DOUBLE_EQ(n.capacity(a), 12.5e9);
  EXPECT_DOUBLE_EQ(n.rate(1), 12.5e9);
  EXPECT_DOUBLE_EQ(n.rate(2), 25e9);
  EXPECT_EQ(n.advance(4e-3), (std::vector<std::uint64_t>{2}));
  EXPECT_NEAR(n.next_done(), 6e-3, 1e-15);
  EXPECT_EQ(n.on_link(b), 0);
}

TEST(Contention, TheShareIsWhatTheTransfersGotWhileTheIterationRan) {
  // Alone 4 ms; beside a 4 ms iteration they took 6 ms: 2 ms at full rate after it, so 2 ms of
  // their work in its 4 ms: half rate.
  EXPECT_DOUBLE_EQ(transfer_share(4e-3, 6e-3, 4e-3), 0.5);
  // Done within the iteration: alone 2 ms, beside 4 ms (iteration 5 ms): half rate.
  EXPECT_DOUBLE_EQ(transfer_share(2e-3, 4e-3, 5e-3), 0.5);
  // Not slowed; faster than alone (clamped); a share of nothing left at the end (clamped).
  EXPECT_DOUBLE_EQ(transfer_share(4e-3, 4e-3, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(transfer_share(4e-3, 3e-3, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(transfer_share(4e-3, 8e-3, 4e-3), kMinShare);
  EXPECT_EQ(transfer_bucket(0), 0);
  EXPECT_EQ(transfer_bucket(1), 1);
  EXPECT_EQ(transfer_bucket(3), 2);
  EXPECT_EQ(transfer_bucket(7), 4);
  EXPECT_EQ(transfer_bucket(8), 8);
  EXPECT_EQ(transfer_bucket(100), 8);
}

// Two ranks, each with one all-to-all ("a2a") of `bytes` in the group "g" = {0, 1}.
trace::Workload two_rank_all_to_all(std::uint64_t bytes) {
  trace::Workload w;
  w.ranks.resize(2);
  w.groups["g"] = {0, 1};
  for (int r = 0; r < 2; ++r) {
    w.ranks[std::size_t(r)].rank = r;
    trace::Op op;
    op.name = "a2a";
    op.kind = trace::OpKind::all_to_all;
    op.group = "g";
    op.bytes = bytes;
    w.ranks[std::size_t(r)].ops.push_back(op);
  }
  return w;
}

TEST(Contention, BesideWorkloadPlacesTheIterationAndAppendsTheCopies) {
  // An "iteration" of 2 ranks (an all-to-all and a send 0 -> 1) placed at ranks 2 and 3 of a
  // 4-rank transfer (rank 0 sends 5 B to rank 2, rank 1 to rank 3), with 2 copies of it.
  trace::Workload it = two_rank_all_to_all(100);
  for (int r = 0; r < 2; ++r) {
    trace::Op p;
    p.id = 1;
    p.kind = r == 0 ? trace::OpKind::send : trace::OpKind::recv;
    p.peer = 1 - r;
    p.bytes = 7;
    p.tag = 3;
    p.deps = {0};
    it.ranks[std::size_t(r)].ops.push_back(p);
  }
  trace::Workload h;
  h.ranks.resize(4);
  for (int r = 0; r < 2; ++r) {
    trace::Op s;
    s.kind = trace::OpKind::send;
    s.peer = r + 2;
    s.bytes = 5;
    s.tag = 1;
    h.ranks[std::size_t(r)].ops.push_back(s);
    s.kind = trace::OpKind::recv;
    s.peer = r;
    h.ranks[std::size_t(r + 2)].ops.push_back(s);
  }
  const BesideWorkload b = beside_workload(it, 2, h, 2);
  EXPECT_EQ(b.w.groups.at("g"), (std::vector<int>{2, 3}));
  EXPECT_EQ(b.iteration_ops, (std::vector<std::size_t>{0, 0, 2, 2}));
  // Rank 2: the iteration's two ops (its send now to rank 3), then the two copies' receives.
  const auto& r2 = b.w.ranks[2].ops;
  ASSERT_EQ(r2.size(), 4u);
  EXPECT_EQ(r2[1].peer, 3);
  EXPECT_EQ(r2[1].tag, 3);
  EXPECT_EQ(r2[1].deps, (std::vector<trace::OpId>{0}));
  EXPECT_EQ(r2[2].kind, trace::OpKind::recv);
  EXPECT_EQ(r2[2].id, 2u);
  EXPECT_EQ(r2[2].peer, 0);
  EXPECT_EQ(r2[3].id, 3u);
  EXPECT_NE(r2[2].tag, r2[3].tag);
  // Rank 0: the two copies' sends, matching rank 2's receives.
  ASSERT_EQ(b.w.ranks[0].ops.size(), 2u);
  EXPECT_EQ(b.w.ranks[0].ops[0].tag, r2[2].tag);
  EXPECT_EQ(b.w.ranks[0].ops[1].tag, r2[3].tag);
  EXPECT_EQ(b.w.ranks[0].ops[1].id, 1u);
  // The transfers alone: no iteration. A copy's sends between one pair are one op of their
  // bytes (two layers' 5 B from rank 0 to rank 2: one send of 10 B).
  trace::Workload h2 = h;
  h2.ranks[0].ops.push_back(h.ranks[0].ops[0]);
  h2.ranks[0].ops[1].tag = 2;
  h2.ranks[2].ops.push_back(h.ranks[2].ops[0]);
  h2.ranks[2].ops[1].tag = 2;
  const BesideWorkload alone = beside_workload(trace::Workload{}, 0, h2, 1);
  EXPECT_EQ(alone.iteration_ops, (std::vector<std::size_t>{0, 0, 0, 0}));
  ASSERT_EQ(alone.w.ranks[0].ops.size(), 1u);
  ASSERT_EQ(alone.w.ranks[2].ops.size(), 1u);
  EXPECT_EQ(alone.w.ranks[0].ops[0].bytes, 10u);
  EXPECT_EQ(alone.w.ranks[2].ops[0].bytes, 10u);
  EXPECT_EQ(alone.w.ranks[1].ops[0].bytes, 5u);
}

TEST(Contention, ATransferAndAnAllToAllOnOneLinkShareIt) {
  // On the Trn2 UltraServer's flow fabric: a send of B = 64 MiB from chip 0 to chip 1, and an
  // all-to-all of 2 B per rank in the group {0, 1} (each rank keeps half and sends B to the
  // other). Alone each puts B on the path 0 -> 1 and takes the same time t (B / W and the
  // latency); together the path carries 2 B: the later of them ends at 2 t (within 5 %: the
  // latency is not doubled), neither before t. The fabric does not split it evenly: the
  // all-to-all keeps nearly its whole rate, and the send takes what is left, so the share the
  // send got while the all-to-all ran is small.
  const std::uint64_t B = 64ull << 20;
  const trace::Workload a2a = two_rank_all_to_all(2 * B);
  trace::Workload x;
  x.ranks.resize(2);
  for (int r = 0; r < 2; ++r) x.ranks[std::size_t(r)].rank = r;
  trace::Op s;
  s.name = "kv";
  s.kind = trace::OpKind::send;
  s.peer = 1;
  s.bytes = B;
  x.ranks[0].ops.push_back(s);
  s.kind = trace::OpKind::recv;
  s.peer = 0;
  x.ranks[1].ops.push_back(s);
  const config::LoadedConfig cfg =
      bench::ConfigSource{bench::data_path("configs/racks/trn2-ultraserver.json"), {"sim.fidelity=fast"}}.load();
  std::vector<std::function<std::string()>> jobs;
  for (int copies : {0, 1}) {
    for (bool with_a2a : {true, false}) {
      if (!with_a2a && copies == 0) continue;
      jobs.push_back([&, copies, with_a2a]() {
        const BesideWorkload b = beside_workload(with_a2a ? a2a : trace::Workload{}, 0, x, copies);
        const BesideTimes t = beside_times(b, run::run_workload(cfg, b.w).records);
        return fmt::format("{:.17g} {:.17g}", t.iteration_s, t.transfers_s);
      });
    }
  }
  const std::vector<std::string> out = run_forked(jobs, 2);
  ASSERT_EQ(out.size(), 3u);
  double a2a_alone = 0, a2a_beside = 0, x_alone = 0, x_beside = 0, none = 0;
  ASSERT_EQ(std::sscanf(out[0].c_str(), "%lf %lf", &a2a_alone, &none), 2);
  ASSERT_EQ(std::sscanf(out[1].c_str(), "%lf %lf", &a2a_beside, &x_beside), 2);
  ASSERT_EQ(std::sscanf(out[2].c_str(), "%lf %lf", &none, &x_alone), 2);
  EXPECT_GT(x_alone, 0);
  EXPECT_GT(a2a_alone, 0);
  EXPECT_NEAR(a2a_alone / x_alone, 1.0, 0.02) << a2a_alone << " " << x_alone;
  EXPECT_NEAR(std::max(x_beside, a2a_beside) / x_alone, 2.0, 0.1) << x_beside << " " << a2a_beside;
  EXPECT_GE(x_beside, x_alone);
  EXPECT_GE(a2a_beside, a2a_alone);
  // Work conserved: the send's share while the all-to-all ran, and its full rate after it,
  // make up its time alone (transfer_share's reading); here below a quarter.
  const double f = transfer_share(x_alone, x_beside, a2a_beside);
  EXPECT_LT(f, 0.25);
  EXPECT_NEAR(f * a2a_beside + (x_beside - a2a_beside), x_alone, 1e-12);
}

// A timer whose iterations beside transfers take 1 ms more and leave the transfers half their
// rate (a stated table, not a model).
class BesideTimer : public TableTimer {
 public:
  IterationCost cost_beside(const Shape& s, int in_flight, bool decode_pool) override {
    beside.emplace_back(in_flight, decode_pool);
    IterationCost c = cost(s);
    if (in_flight > 0) {
      c.time_s += 1e-3;
      c.transfer_share = 0.5;
    }
    return c;
  }
  std::vector<std::pair<int, bool>> beside;
};

TEST(Engine, DisaggregatedIterationBesideATransferSlowsBoth) {
  // A (10 tokens) prefills from 0 to t1 and hands over; its transfer (x(10) alone) starts at t1
  // and B's prefill (B arrived during A's) starts then beside it: B's iteration takes 1 ms more,
  // and A's transfer runs at half rate while it does (x(10) = 0.51 ms, done within B's 2.12 ms):
  // it ends at t1 + 2 x(10). B's transfer starts when B's prefill ends, with the prefill replica
  // idle after it: alone.
  Workload w;
  w.open.push_back({0, 0.0, 10, 2});
  w.open.push_back({1, 1e-4, 60, 2});
  BesideTimer timer;
  const EngineResult r = simulate(w, disaggregated(), timer, 0);
  const double t1 = TableTimer::t(0, 0, 10);
  EXPECT_NEAR(r.requests[0].transfer_start_s, t1, 1e-12);
  EXPECT_NEAR(r.requests[0].transfer_end_s, t1 + 2 * TableTimer::x(10), 1e-12);
  EXPECT_DOUBLE_EQ(r.requests[0].transfer_alone_s, TableTimer::x(10));
  const double t2 = t1 + TableTimer::t(0, 0, 60) + 1e-3;
  EXPECT_NEAR(r.requests[1].first_token_s, t2, 1e-12);
  EXPECT_NEAR(r.requests[1].transfer_end_s, t2 + TableTimer::x(60), 1e-12);
  // A's prefill (nothing in flight), B's (A's transfer from the prefill replica), then the
  // decode replica's two decodes (nothing in flight to it when each starts).
  EXPECT_EQ(timer.beside, (std::vector<std::pair<int, bool>>{{0, false}, {1, false}, {0, true}, {0, true}}));
}

TEST(ServeCli, DisaggregatedSameSeedGivesAByteIdenticalReport) {
  SpecDir d("disseed");
  const std::string spec = d.write("small.json", disaggregated_small());
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string();
  ASSERT_EQ(test::run_trnsim(fmt::format("serve {} --out {}", spec, a)).code, 0);
  ASSERT_EQ(test::run_trnsim(fmt::format("serve {} --out {}", spec, b)).code, 0);
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Json ja = Json::parse(read(a + "/report.json")), jb = Json::parse(read(b + "/report.json"));
  ja["identity"].erase("command_line");
  jb["identity"].erase("command_line");
  EXPECT_EQ(ja.dump(), jb.dump());
  EXPECT_EQ(read(a + "/requests.csv"), read(b + "/requests.csv"));
  EXPECT_EQ(ja["results"]["kv_transfer"]["transfers"], 6);
  EXPECT_TRUE(ja["timing"]["contention"]["on"].get<bool>());  // the default
}

TEST(ServeCli, SameSeedGivesAByteIdenticalReport) {
  SpecDir d("seed");
  const std::string spec = d.write("small.json", kSmall);
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string(), c = (d.dir / "c").string();
  ASSERT_EQ(test::run_trnsim(fmt::format("serve {} --out {}", spec, a)).code, 0);
  ASSERT_EQ(test::run_trnsim(fmt::format("serve {} --out {}", spec, b)).code, 0);
  ASSERT_EQ(test::run_trnsim(fmt::format("serve {} --out {} --set arrivals.seed=4", spec, c)).code, 0);
  auto read = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // The command line differs (the folder): compare without it.
  auto body = [&](const std::string& dir) {
    Json j = Json::parse(read(dir + "/report.json"));
    j["identity"].erase("command_line");
    return j.dump();
  };
  EXPECT_EQ(body(a), body(b));
  EXPECT_EQ(read(a + "/requests.csv"), read(b + "/requests.csv"));
  EXPECT_NE(read(a + "/requests.csv"), read(c + "/requests.csv"));
}

// Shape costs are kept on disk (docs/serving.md#shape-cache): a rerun reads every shape back
// and reports the same figures; --no-cache simulates them again.
TEST(ServeCli, ShapeCacheServesARerunWithTheSameReport) {
  SpecDir d("shapecache");
  ::setenv("TRNSIM_CACHE_DIR", (d.dir / "cache").c_str(), 1);
  const std::string spec = d.write("one.json", kOneRequest);
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string(), c = (d.dir / "c").string();
  const auto ra = test::run_trnsim(fmt::format("serve {} --out {} --log-level info", spec, a));
  ASSERT_EQ(ra.code, 0) << ra.out;
  // The prefill of 128 and the decodes at 129 and 130 (OneRequestIsItsSimulatedPrefillIteration).
  EXPECT_NE(ra.out.find("3 shapes: 3 simulated, 0 from the shape cache"), std::string::npos) << ra.out;
  const auto rb = test::run_trnsim(fmt::format("serve {} --out {} --log-level info", spec, b));
  ASSERT_EQ(rb.code, 0) << rb.out;
  EXPECT_NE(rb.out.find("3 shapes: 0 simulated, 3 from the shape cache"), std::string::npos) << rb.out;
  const auto rc = test::run_trnsim(fmt::format("serve {} --out {} --log-level info --no-cache", spec, c));
  ASSERT_EQ(rc.code, 0) << rc.out;
  EXPECT_NE(rc.out.find("3 shapes: 3 simulated, 0 from the shape cache"), std::string::npos) << rc.out;
  auto body = [](const std::string& dir) {
    std::ifstream in(dir + "/report.json");
    Json j = Json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    j["identity"].erase("command_line");
    return j.dump();
  };
  EXPECT_EQ(body(a), body(b));
  EXPECT_EQ(body(a), body(c));
  // One file of costs for this rack, model and layout: a line a shape.
  std::size_t files = 0, lines = 0;
  for (const auto& e : fs::directory_iterator(d.dir / "cache" / "serve-shapes")) {
    if (e.path().extension() != ".costs") continue;
    ++files;
    std::ifstream in(e.path());
    for (std::string l; std::getline(in, l);) ++lines;
  }
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(lines, 3u);
}

// The shapes' op calibrations share the op profile store (docs/performance.md#calibration-cache):
// a second run without the shape cache simulates every shape again but no op (each shape's
// calibration is skipped), and the report is the same as the cold run's and as one without any
// cache: a profile is the same whichever shape calibrated it.
TEST(ServeCli, ShapesShareTheOpProfileStoreAndReportTheSame) {
  SpecDir d("opstore");
  ::setenv("TRNSIM_CACHE_DIR", (d.dir / "cache").c_str(), 1);
  const std::string spec = d.write("one.json", kOneRequest);
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string(), c = (d.dir / "c").string();
  const auto ra = test::run_trnsim(fmt::format("serve {} --out {} --log-level info", spec, a));
  ASSERT_EQ(ra.code, 0) << ra.out;
  EXPECT_NE(ra.out.find("from the op profile store"), std::string::npos) << ra.out;
  std::size_t stores = 0;
  for (const auto& e : fs::directory_iterator(d.dir / "cache" / "op-profiles")) {
    stores += e.path().extension() == ".ops";
  }
  EXPECT_EQ(stores, 1u);  // one chip plan
  fs::remove_all(d.dir / "cache" / "serve-shapes");
  const auto rb = test::run_trnsim(fmt::format("serve {} --out {} --log-level info", spec, b));
  ASSERT_EQ(rb.code, 0) << rb.out;
  EXPECT_NE(rb.out.find("3 shapes: 3 simulated, 0 from the shape cache"), std::string::npos) << rb.out;
  std::size_t skipped = 0;
  for (std::size_t at = 0; (at = rb.out.find("calibration skipped", at)) != std::string::npos; ++at) ++skipped;
  EXPECT_EQ(skipped, 3u) << rb.out;
  const auto rc = test::run_trnsim(fmt::format("serve {} --out {} --no-cache", spec, c));
  ASSERT_EQ(rc.code, 0) << rc.out;
  auto body = [](const std::string& dir) {
    std::ifstream in(dir + "/report.json");
    Json j = Json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    j.erase("identity");
    j.erase("host");
    return j.dump();
  };
  EXPECT_EQ(body(a), body(b));
  EXPECT_EQ(body(a), body(c));
}

// Per-shape claims (trnsim/serve/shape_cache.hpp): a shape claimed by another live process is
// reported as such (and who holds it), and is ours once it is released; a claim whose holder died
// without releasing it (its lock file left behind, naming the dead pid) is taken over.
TEST(ShapeClaims, AnotherProcessHoldsUntilItReleasesOrDies) {
  SpecDir d("claims");
  const std::string prefix = (d.dir / "key").string();
  const Shape s{8, 1024, 0, 0};
  // A child claims s, says so through a pipe, then waits for a byte: 'r' releases, 'd' dies
  // holding it.
  auto holder = [&](int& to_child, pid_t& pid) {
    int up[2], down[2];
    EXPECT_EQ(::pipe(up), 0);
    EXPECT_EQ(::pipe(down), 0);
    pid = ::fork();
    if (pid == 0) {
      ShapeClaims c(prefix);
      const char ok = c.claim(s) == ShapeClaims::Claim::ours ? 'y' : 'n';
      (void)!::write(up[1], &ok, 1);
      char cmd = 0;
      (void)!::read(down[0], &cmd, 1);
      if (cmd == 'r') c.release(s);
      ::_exit(0);  // 'd': no release, no destructor: the lock file stays, naming this pid
    }
    ::close(up[1]);
    ::close(down[0]);
    char ok = 0;
    EXPECT_EQ(::read(up[0], &ok, 1), 1);
    ::close(up[0]);
    EXPECT_EQ(ok, 'y');
    to_child = down[1];
  };
  ShapeClaims mine(prefix);
  for (const char how : {'r', 'd'}) {
    int to_child = -1;
    pid_t pid = 0;
    holder(to_child, pid);
    EXPECT_EQ(mine.claim(s), ShapeClaims::Claim::other) << how;
    EXPECT_FALSE(mine.holds(s));
    EXPECT_EQ(mine.holder(s).substr(0, mine.holder(s).find(' ')), std::to_string(pid)) << how;
    EXPECT_EQ(::write(to_child, &how, 1), 1);
    ::close(to_child);
    int st = 0;
    ::waitpid(pid, &st, 0);
    // Released: the lock file is gone; died: it is left, naming the dead holder.
    EXPECT_EQ(fs::exists(mine.lock_path(s)), how == 'd') << how;
    EXPECT_EQ(mine.claim(s), ShapeClaims::Claim::ours) << how;
    EXPECT_TRUE(mine.holds(s));
    EXPECT_EQ(mine.holder(s).substr(0, mine.holder(s).find(' ')), std::to_string(::getpid()));
    // Another object of this process: told to go on without a claim (never a wait on itself).
    ShapeClaims again(prefix);
    EXPECT_EQ(again.claim(s), ShapeClaims::Claim::self);
    mine.release(s);
    EXPECT_FALSE(fs::exists(mine.lock_path(s)));
  }
  // Claims off (no prefix): go on without one.
  EXPECT_EQ(ShapeClaims().claim(s), ShapeClaims::Claim::self);
}

// The cache's costs file and the key prefix of its lock files, of the one rack, model and layout
// in `cache`.
fs::path costs_file(const fs::path& cache) {
  for (const auto& e : fs::directory_iterator(cache / "serve-shapes")) {
    if (e.path().extension() == ".costs") return e.path();
  }
  return {};
}

std::vector<std::string> file_lines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// "N shapes: S simulated, D from the shape cache" of a serve log: S (-1: no such line).
int simulated_in(const std::string& log) {
  const std::size_t at = log.find(" shapes: ");
  int sim = -1;
  if (at == std::string::npos || std::sscanf(log.c_str() + at, " shapes: %d simulated", &sim) != 1) {
    return -1;
  }
  return sim;
}

std::string report_body(const std::string& dir) {
  std::ifstream in(dir + "/report.json");
  Json j = Json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  j["identity"].erase("command_line");
  return j.dump();
}

const char* kClaimSpec = R"({
    "name": "claims", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
    "arrivals": {"kind": "poisson", "rate_per_s": 1, "input_tokens": 128, "output_tokens": 3},
    "run": {"requests": 1}, "timing": {"mode": "exact"}})";

// Two runs of one spec at once on one shape cache (two points of a sweep): each shape simulated
// once between them (the other run waits for its line), the costs file a line a shape, and the
// two reports byte-identical.
TEST(ServeCli, TwoRunsAtOnceSimulateEachShapeOnce) {
  SpecDir d("claimtwo");
  const std::string spec = d.write("one.json", kClaimSpec);
  const std::string run = fmt::format(
      "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 TRNSIM_CACHE_DIR={0}/cache {1} serve {2} --out {0}/{3} "
      "--log-level info > {0}/{3}.log 2>&1",
      d.dir.string(), TRNSIM_BINARY, spec, "{0}");
  const std::string both = fmt::format(fmt::runtime(run), "x") + " & " +
                           fmt::format(fmt::runtime(run), "y") + " & wait";
  ASSERT_EQ(std::system(both.c_str()), 0);
  auto log = [&](const char* n) {
    std::ifstream in(d.dir / (std::string(n) + ".log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string lx = log("x"), ly = log("y");
  ASSERT_TRUE(fs::exists(d.dir / "x" / "report.json")) << lx;
  ASSERT_TRUE(fs::exists(d.dir / "y" / "report.json")) << ly;
  // The prefill of 128 and the decodes at 129 and 130, each simulated by one of the two.
  EXPECT_EQ(simulated_in(lx) + simulated_in(ly), 3) << lx << ly;
  EXPECT_EQ(file_lines(costs_file(d.dir / "cache")).size(), 3u);
  EXPECT_EQ(report_body((d.dir / "x").string()), report_body((d.dir / "y").string()));
}

// A run that finds a shape claimed by another process waits for that process's line in the costs
// file and uses it (the shape counted as from the cache); a claim left by a dead process is taken
// over and the shape simulated. Each gives the report of a run alone.
TEST(ServeCli, AClaimedShapeIsWaitedForAndADeadClaimTakenOver) {
  SpecDir d("claimwait");
  const std::string spec = d.write("one.json", kClaimSpec);
  const fs::path cache = d.dir / "cache";
  ::setenv("TRNSIM_CACHE_DIR", cache.c_str(), 1);
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string(), c = (d.dir / "c").string();
  const auto ra = test::run_trnsim(fmt::format("serve {} --out {} --log-level info", spec, a));
  ASSERT_EQ(ra.code, 0) << ra.out;
  const fs::path costs = costs_file(cache);
  const std::vector<std::string> lines = file_lines(costs);
  ASSERT_EQ(lines.size(), 3u);
  const auto prefill = std::find_if(lines.begin(), lines.end(),
                                    [](const std::string& l) { return l.starts_with("0 0 128 0 "); });
  ASSERT_NE(prefill, lines.end());
  std::string prefix = costs.string();
  prefix.resize(prefix.size() - std::string(".costs").size());
  const Shape s{0, 0, 128, 0};

  // This process holds the prefill's claim, with an empty costs file: the run waits (its debug
  // log says for whom), then gets the line this process appends before releasing.
  fs::remove(costs);
  ShapeClaims held(prefix);
  ASSERT_EQ(held.claim(s), ShapeClaims::Claim::ours);
  const std::string blog = b + ".log";
  FILE* p = ::popen(fmt::format("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 {} serve {} --out {} --log-level debug > {} 2>&1",
                                TRNSIM_BINARY, spec, b, blog).c_str(), "r");
  ASSERT_NE(p, nullptr);
  const std::string waiting = fmt::format("waiting for {} ", ::getpid());
  std::string text;
  for (int i = 0; i < 6000 && text.find(waiting) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(blog);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(text.find(waiting), std::string::npos) << text;
  std::ofstream(costs, std::ios::app) << *prefill << "\n";
  held.release(s);
  EXPECT_EQ(::pclose(p), 0);
  {
    std::ifstream in(blog);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(text.find("3 shapes: 2 simulated, 1 from the shape cache"), std::string::npos) << text;
  EXPECT_EQ(report_body(a), report_body(b));

  // A claim whose holder died: its lock file stays, naming the dead pid; the run takes it over.
  fs::remove(costs);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ShapeClaims dying(prefix);
    ::_exit(dying.claim(s) == ShapeClaims::Claim::ours ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_TRUE(fs::exists(held.lock_path(s)));
  EXPECT_EQ(held.holder(s).substr(0, held.holder(s).find(' ')), std::to_string(pid));
  const auto rc = test::run_trnsim(fmt::format("serve {} --out {} --log-level info", spec, c));
  ASSERT_EQ(rc.code, 0) << rc.out;
  EXPECT_NE(rc.out.find("3 shapes: 3 simulated, 0 from the shape cache"), std::string::npos) << rc.out;
  EXPECT_FALSE(fs::exists(held.lock_path(s)));  // released by the run that took it over
  EXPECT_EQ(file_lines(costs).size(), 3u);
  EXPECT_EQ(report_body(a), report_body(c));
}

// ForkPool: jobs started one at a time in children, collected as they end, in id order; an
// InputError's message comes back as 'i'; a pool destroyed with a child running kills it.
TEST(ForkPool, CollectsChildrenAsTheyEnd) {
  ForkPool pool;
  EXPECT_TRUE(pool.collect(true).empty());  // none running: at once
  const std::uint64_t a = pool.start([] { return std::string("alpha"); });
  const std::uint64_t b = pool.start([]() -> std::string { throw InputError("bad shape"); });
  const std::uint64_t c = pool.start([] { return std::string(100000, 'x'); });  // above a pipe
  EXPECT_EQ(pool.running(), 3u);
  std::map<std::uint64_t, ForkPool::Done> done;
  while (pool.running() > 0) {
    for (ForkPool::Done& d : pool.collect(true)) done[d.id] = std::move(d);
  }
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[a].kind, 'o');
  EXPECT_EQ(done[a].text, "alpha");
  EXPECT_EQ(done[b].kind, 'i');
  EXPECT_EQ(done[b].text, "bad shape");
  EXPECT_EQ(done[c].kind, 'o');
  EXPECT_EQ(done[c].text.size(), 100000u);
  // Done::rethrow: nothing for a result, the child's error as the caller's exception.
  EXPECT_NO_THROW(done[a].rethrow());
  EXPECT_THROW(done[b].rethrow(), InputError);
  ForkPool::Done died;  // kind 'd': the child died
  died.text = "9";
  EXPECT_THROW(died.rethrow(), InternalError);
  pid_t sleeper = 0;
  {
    ForkPool p2;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    p2.start([fds]() -> std::string {
      const pid_t me = ::getpid();
      (void)!::write(fds[1], &me, sizeof me);
      ::sleep(60);
      return "late";
    });
    ::close(fds[1]);
    ASSERT_EQ(::read(fds[0], &sleeper, sizeof sleeper), ssize_t(sizeof sleeper));
    ::close(fds[0]);
    EXPECT_TRUE(p2.collect(false).empty());  // still running: nothing, without waiting
  }
  EXPECT_NE(::kill(sleeper, 0), 0);  // killed and reaped
}

// A background child (serve's shapes ahead of need) runs at nice 19, and the children it forks
// take it from it; foreground() puts both back at the parent's priority (where the process may
// raise a priority: root, or RLIMIT_NICE; otherwise they stay low, which is checked instead).
TEST(ForkPool, BackgroundChildrenRunAtTheLowestPriorityUntilWanted) {
  const int own = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_LT(own, 19) << "the test needs to run above the lowest priority";
  ForkPool pool;
  const std::uint64_t low = pool.start([] { return std::to_string(::getpriority(PRIO_PROCESS, 0)); },
                                       /*background=*/true);
  const std::uint64_t normal =
      pool.start([] { return std::to_string(::getpriority(PRIO_PROCESS, 0)); });
  // A background child that forks a grandchild, tells the parent both are up, and reports both
  // priorities once the parent has called foreground() (the pipe's second byte).
  int up[2], go[2];
  ASSERT_EQ(::pipe(up), 0);
  ASSERT_EQ(::pipe(go), 0);
  const std::uint64_t raised = pool.start(
      [up, go]() -> std::string {
        int report[2];
        if (::pipe(report) != 0) return "pipe";
        const pid_t kid = ::fork();
        if (kid == 0) {
          char c = 0;
          (void)!::read(go[0], &c, 1);
          const int p = ::getpriority(PRIO_PROCESS, 0);
          (void)!::write(report[1], &p, sizeof p);
          ::_exit(0);
        }
        (void)!::write(up[1], "u", 1);
        char c = 0;
        (void)!::read(go[0], &c, 1);
        int kid_priority = -100;
        (void)!::read(report[0], &kid_priority, sizeof kid_priority);
        ::waitpid(kid, nullptr, 0);
        return fmt::format("{} {}", ::getpriority(PRIO_PROCESS, 0), kid_priority);
      },
      /*background=*/true);
  char c = 0;
  ASSERT_EQ(::read(up[0], &c, 1), 1);
  pool.foreground(raised);
  ASSERT_EQ(::write(go[1], "gg", 2), 2);  // one byte each for the child and the grandchild
  std::map<std::uint64_t, std::string> text;
  while (pool.running() > 0) {
    for (ForkPool::Done& d : pool.collect(true)) text[d.id] = d.text;
  }
  for (int fd : {up[0], up[1], go[0], go[1]}) ::close(fd);
  EXPECT_EQ(text[low], "19");
  EXPECT_EQ(text[normal], std::to_string(own));
  // Raising a priority back needs the right to: probed in a child of our own.
  const pid_t probe = ::fork();
  if (probe == 0) {
    ::setpriority(PRIO_PROCESS, 0, 19);
    ::_exit(::setpriority(PRIO_PROCESS, 0, own) == 0 ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(probe, &st, 0), probe);
  const bool may_raise = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  EXPECT_EQ(text[raised], may_raise ? fmt::format("{} {}", own, own) : "19 19");
}

// A forked child's heap (src/core/isolate.cpp, prepare_heap): it keeps at least the 64 MB pad free
// at its top (grown once: 30 MB of small blocks fit without growing it again), and where the
// kernel has transparent huge pages the heap's range is advised for them (VmFlags "hg" in
// /proc/self/smaps). The parent's heap is left as it was.
// (AddressSanitizer allocates from heaps of its own: glibc's is not used, and not checked.)
TEST(ForkPool, ChildHeapIsGrownOnceAndAdvisedForHugePages) {
#ifdef TRNSIM_TEST_ASAN
  GTEST_SKIP() << "AddressSanitizer's allocator: glibc's heap is not used";
#endif
  const bool thp = std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::vector<std::string> out = run_forked(
      {[]() -> std::string {
        const std::size_t top = ::mallinfo2().keepcost;
        const void* const brk0 = ::sbrk(0);
        // 30 MB in blocks below the mmap threshold (from the heap): taken from the free top,
        // the heap does not grow.
        std::vector<void*> blocks;
        for (int i = 0; i < 300; ++i) blocks.push_back(std::malloc(100 * 1024));
        const bool same_brk = ::sbrk(0) == brk0;
        for (void* b : blocks) std::free(b);
        std::ifstream smaps("/proc/self/smaps");
        std::string line;
        bool heap = false, hg = false;
        while (std::getline(smaps, line)) {
          if (line.find('-') < line.find(' ') && line.find(':') > line.find(' ')) {
            heap = line.find("[heap]") != std::string::npos;  // a mapping's first line
          } else if (heap && line.rfind("VmFlags:", 0) == 0 &&
                     (line + " ").find(" hg ") != std::string::npos) {
            hg = true;
          }
        }
        return fmt::format("{} {} {}", top >= (std::size_t(64) << 20), same_brk, hg);
      }},
      1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], thp ? "true true true" : "true true false");
  EXPECT_LT(::mallinfo2().keepcost, std::size_t(64) << 20);  // this process: not touched
}

// Shapes simulated ahead of need (parallel > 1, grid mode) change which child simulates a shape
// and when, not the report: one request of 128 + 300 tokens (its decode contexts cross the key
// tiles' cells 129..256 and 257..384), served with one child and with two, without the shape
// cache. The first decode (KV 129) starts the next context cell's shape (1, 257) ahead; the run
// takes it when its contexts get there. Whether shapes go ahead, and whether the run uses them,
// depends on when the children end, so the test asks only that the report is the same: the
// prefill's cell starts two shapes ahead too, and at the lowest CPU priority they can still hold
// both places when the decodes pass KV 257 (seen once in CI under ASan: "0 used, 2 not used"),
// or never end on a machine whose cores are busy (no shape ahead at all).
TEST(ServeCli, ShapesAheadGiveTheSameReportAsOneChild) {
  SpecDir d("ahead");
  auto spec = [&](int parallel) {
    return d.write(fmt::format("p{}.json", parallel), fmt::format(R"({{
    "name": "one", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
    "arrivals": {{"kind": "poisson", "rate_per_s": 1, "input_tokens": 128, "output_tokens": 300}},
    "run": {{"requests": 1}}, "timing": {{"mode": "grid", "parallel": {}}}}})", parallel));
  };
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string();
  const auto ra = test::run_trnsim(
      fmt::format("serve {} --out {} --log-level info --no-cache", spec(1), a));
  ASSERT_EQ(ra.code, 0) << ra.out;
  EXPECT_EQ(ra.out.find("ahead of need"), std::string::npos) << ra.out;
  const auto rb = test::run_trnsim(
      fmt::format("serve {} --out {} --log-level info --no-cache", spec(2), b));
  ASSERT_EQ(rb.code, 0) << rb.out;
  auto body = [](const std::string& dir) {
    std::ifstream in(dir + "/report.json");
    Json j = Json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    j["identity"].erase("command_line");
    j["identity"].erase("spec");  // p1.json, p2.json
    j["spec"]["timing"].erase("parallel");  // (not echoed: a setting of the host, not the run)
    return j.dump();
  };
  EXPECT_EQ(body(a), body(b));
  // The shapes the run used: (0, 0, 128, 0) and the decodes' corners up to KV 384.
  std::ifstream in(a + "/report.json");
  const Json j = Json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  EXPECT_GE(j["timing"]["shapes"]["rows"].size(), 4u) << j["timing"].dump();
}

// --held-back: the interpolated shapes of a grid run simulated exactly after it. One request of
// 128 + 3 tokens: the prefill of 128 and the decode at KV 129 are grid points (128 a grid point;
// 129 the first context of the second key tile), the decode at KV 130 is interpolated between
// 129 and 256 (ContextCellsAreWholeKeyTiles): the one shape held back.
TEST(ServeCli, HeldBackShapesAreSimulatedAgainstTheirInterpolation) {
  SpecDir d("heldback");
  const std::string spec = d.write("one.json", R"({
    "name": "one", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
    "arrivals": {"kind": "poisson", "rate_per_s": 1, "input_tokens": 128, "output_tokens": 3},
    "run": {"requests": 1}, "timing": {"mode": "grid"}})");
  const auto r = test::run_trnsim(fmt::format("serve {} --json --held-back 4", spec), false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  const Json& t = j["timing"];
  EXPECT_EQ(t["context_key_tile"], 128);
  // The shapes simulated: (0, 0, 128, 0), (1, 129, 0, 0), (1, 256, 0, 0); the held-back one not.
  ASSERT_EQ(t["shapes"]["rows"].size(), 3u) << t.dump();
  EXPECT_EQ(t["shapes"]["rows"][1][1], 129);
  EXPECT_EQ(t["shapes"]["rows"][2][1], 256);
  const Json& rows = t["held_back"]["rows"];
  ASSERT_EQ(rows.size(), 1u) << t.dump();
  EXPECT_EQ(rows[0][0], 1);
  EXPECT_EQ(rows[0][1], 130);
  const double t129 = t["shapes"]["rows"][1][4], t256 = t["shapes"]["rows"][2][4];
  const double interp = t129 + (t256 - t129) * (130.0 - 129.0) / (256.0 - 129.0);
  EXPECT_NEAR(rows[0][5].get<double>(), interp, 1e-15);
  const double exact = rows[0][4];
  EXPECT_GT(exact, 0);
  EXPECT_NEAR(rows[0][6].get<double>(), (interp - exact) / exact, 1e-12);
  EXPECT_NEAR(t["held_back"]["max_abs_error"].get<double>(), std::abs((interp - exact) / exact), 1e-12);
}

TEST(ServeCli, SolveUsersReportsItsPointsAndTheSolvedRun) {
  SpecDir d("solve");
  const std::string spec = d.write("small.json", kSmall);
  // A target every point meets, capped at 2 users: points 1 and 2, the answer 2 (capped), and the
  // results are the 2-user run's: 2 x 1 measured requests after 2 warm-up ones.
  const auto r = test::run_trnsim(
      fmt::format("serve {} --solve-users 0.001 --solve-max-users 2 --solve-requests-per-user 1 --json", spec),
      false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  const Json& s = j["solve"];
  EXPECT_EQ(s["users"], 2);
  EXPECT_TRUE(s["capped"].get<bool>());
  EXPECT_EQ(s["results_users"], 2);
  ASSERT_EQ(s["points"]["rows"].size(), 2u);
  EXPECT_EQ(s["points"]["rows"][0][0], 1);
  EXPECT_EQ(s["points"]["rows"][1][0], 2);
  EXPECT_EQ(j["results"]["requests"]["measured"], 2);
  EXPECT_EQ(j["results"]["requests"]["warmup"], 2);
  // The second point reused the first's shapes: the cache is shared, so the shapes simulated
  // after point 2 are at least those after point 1, and the report lists them all.
  EXPECT_LE(s["points"]["rows"][0][6].get<int>(), s["points"]["rows"][1][6].get<int>());
  EXPECT_EQ(j["timing"]["shapes"]["rows"].size(), s["points"]["rows"][1][6].get<std::size_t>());
  // A bad option exits 2 naming it.
  const auto bad = test::run_trnsim(fmt::format("serve {} --solve-users -3", spec));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--solve-users"), std::string::npos) << bad.out;
}

// serve --estimate: what the spec bounds, by hand, and nothing simulated.
TEST(ServeCli, EstimatePrintsWhatTheSpecBoundsWithoutSimulating) {
  SpecDir d("estimate");
  const std::string one = d.write("one.json", kOneRequest);
  const auto r = test::run_trnsim(fmt::format("serve {} --estimate", one));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("TTFT"), std::string::npos) << "it simulated: " << r.out;
  // One request of 128 + 3 tokens: at least 3 iterations (its 3 output tokens, one an
  // iteration), at most 131 (one a token); exact timing simulates at most one shape an
  // iteration (the run simulates 3: OneRequestIsItsSimulatedPrefillIteration).
  EXPECT_NE(r.out.find("requests     1 (0 warm-up): 128 input and 3 output tokens, at most 128 and 3 in one"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("iterations   3 to 131 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shapes       at least 1, at most 131 (exact: one an iteration)"), std::string::npos)
      << r.out;
  // The largest shape: one sequence at the KV of the whole request, the prompt's chunk after at
  // most all of it but one token.
  EXPECT_NE(r.out.find("the largest, decode 1 at KV 131, prefill 128 after 127)"), std::string::npos) << r.out;

  // Grid, kSmall: decode up to min(max_batch 8, 6 requests) = 6, KV up to 132, chunks up to 128
  // after up to 127. The fixed grid's points to each one's cell top: batches 1-4 and 6 (5); the
  // KV in whole tiles of 128 keys (trn2's /chip/core/tensor/rows) at one point per octave, cells
  // [1, 128] and [129, 256]: 1, 128, 129, 256 (4); chunks in whole row tiles to 128: 1, 128 (2);
  // cached context on the coarse grid to 256: 0, 1, 4, 16, 64, 256 (6); mixed batches to the
  // cell of 6, (4, 16]: 1, 4, 16 (3), each with group 0's rows (one group: 6 decodes and a chunk
  // of 128, 134 rows) to 256: 1, 128, 129, 256 (4); and the anchor decode of 16 at KV 128, off
  // the decode points. Pure decodes 5 x 4 + pure prefills 2 x 6 + mixed 3 x 4 + 1 anchor = 20 +
  // 12 + 12 + 1 = 45. The iterations: at most 6 x 132 = 792, 16 shapes each = 12672; the smaller.
  const std::string small = d.write("small.json", kSmall);
  const auto g = test::run_trnsim(fmt::format("serve {} --estimate --set timing.mode=grid", small));
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_NE(g.out.find("iterations   4 to 792 "), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("at most 45 (grid: 45 points of the fixed grid the requests reach, 16 an iteration"),
            std::string::npos) << g.out;
  // The largest: every dimension at its cell's top (the mixed grid's batch 16 above the decode's).
  EXPECT_NE(g.out.find("decode 16 at KV 256, prefill 128 after 256)"), std::string::npos) << g.out;

  // Options it does not take: exit 2.
  for (const char* bad : {"--out x", "--json", "--solve-users 10"}) {
    const auto b = test::run_trnsim(fmt::format("serve {} --estimate {}", small, bad));
    EXPECT_EQ(b.code, 2) << bad << ": " << b.out;
    EXPECT_NE(b.out.find("serve --estimate: prints the estimate and simulates nothing"), std::string::npos)
        << b.out;
  }
}

TEST(ServeCli, BadSpecsExit2NamingFileAndPointer) {
  SpecDir d("bad");
  struct Case {
    std::string name, pointer, what;
    std::function<void(Json&)> edit;
  };
  std::vector<Case> cases = {
      {"unknown", "/scheduler/max_bach", "max_batch", [](Json& j) { j["scheduler"]["max_bach"] = 4; }},
      {"rate", "/arrivals/rate_per_s", "> 0", [](Json& j) { j["arrivals"]["rate_per_s"] = -1; }},
      {"unit", "/slo/ttft", "2GB", [](Json& j) { j["slo"] = {{"ttft", "2GB"}}; }},
      {"fit", "/model", "does not fit", [](Json& j) { j["model"] = "llama-3.1-70b"; }},
      // 33 copies of a 2-rank layout need 66 ranks; the Trn2 rack has 64 chips of one rank each.
      {"replicas", "/replicas",
       "33 replicas of tp=2,dp=1,ep=1,pp=1 need 66 ranks; Trn2 UltraServer has 64 chips x 1 ranks per chip",
       [](Json& j) {
         j["layout"] = "tp=2";
         j["replicas"] = 33;
       }},
  };
  // Disaggregated pools.
  auto pools = [](Json prefill, Json decode) {
    return [prefill, decode](Json& j) {
      j["disaggregated"] = {{"prefill", prefill}, {"decode", decode}};
    };
  };
  const Json one = {{"replicas", 1}};
  const std::vector<Case> pool_cases = {
      {"pool-unknown", "/disaggregated/prefill/layot", "layout",
       pools({{"replicas", 1}, {"layot", "tp=1"}}, one)},
      {"pool-missing", "/disaggregated/decode", "missing required key",
       [](Json& j) { j["disaggregated"] = {{"prefill", {{"replicas", 1}}}}; }},
      {"pool-zero", "/disaggregated/decode/replicas", ">= 1", pools(one, {{"replicas", 0}})},
      {"pool-rack", "/disaggregated",
       "40 prefill and 40 decode replicas of tp=1,dp=1,ep=1,pp=1 need 80 ranks; Trn2 UltraServer "
       "has 64 chips x 1 ranks per chip",
       pools({{"replicas", 40}}, {{"replicas", 40}})},
      {"pool-fit", "/disaggregated/prefill/layout", "does not fit",
       [&](Json& j) {
         j["model"] = "llama-3.1-70b";
         pools({{"replicas", 1}, {"layout", "tp=1"}}, one)(j);
       }},
      {"pool-layouts-rack", "/disaggregated",
       "40 prefill replicas of tp=1,dp=1,ep=1,pp=1 and 20 decode replicas of tp=2,dp=1,ep=1,pp=1 "
       "need 80 ranks; Trn2 UltraServer has 64 chips x 1 ranks per chip",
       pools({{"replicas", 40}}, {{"replicas", 20}, {"layout", "tp=2"}})},
      {"pool-decode-layout", "/disaggregated/decode/layout", "tp=3",
       pools(one, {{"replicas", 1}, {"layout", "tp=3"}})},
      {"efa-rack", "/disaggregated/transfer/cluster",
       "expected a cluster of the spec's rack (Trn2 UltraServer)",
       [&](Json& j) {
         pools(one, one)(j);
         j["disaggregated"]["transfer"] = {{"cluster", "trn3-gen2-ultracluster"}};
       }},
      {"efa-not-cluster", "/disaggregated/transfer/cluster", "expected a cluster preset",
       [&](Json& j) {
         pools(one, one)(j);
         j["disaggregated"]["transfer"] = {{"cluster", bench::data_path("configs/racks/trn2-ultraserver.json")}};
       }},
      {"efa-pool", "/disaggregated/decode/replicas",
       "65 decode replicas of tp=1,dp=1,ep=1,pp=1 need 65 ranks; the pool has one UltraServer",
       [&](Json& j) {
         pools({{"replicas", 64}}, {{"replicas", 65}})(j);
         j["disaggregated"]["transfer"] = {{"cluster", "trn2-ultracluster"}};
       }},
      {"efa-no-cluster", "/disaggregated/transfer/nic_bandwidth", "expected /disaggregated/transfer/cluster",
       [&](Json& j) {
         pools(one, one)(j);
         j["disaggregated"]["transfer"] = {{"nic_bandwidth", "19.3GB/s"}};
       }},
      {"efa-bandwidth", "/disaggregated/transfer/nic_bandwidth", "19.3GB",
       [&](Json& j) {
         pools(one, one)(j);
         j["disaggregated"]["transfer"] = {{"cluster", "trn2-ultracluster"}, {"nic_bandwidth", "19.3GB"}};
       }},
      {"pool-replicas", "/replicas", "the pools' 2 together, got 3",
       [&](Json& j) {
         j["replicas"] = 3;
         pools(one, one)(j);
       }},
  };
  cases.insert(cases.end(), pool_cases.begin(), pool_cases.end());
  for (const auto& c : cases) {
    Json j = Json::parse(kSmall);
    c.edit(j);
    const std::string spec = d.write(c.name + ".json", j.dump());
    // serve --estimate reads the spec with serve's own reading: the same refusal.
    for (const char* extra : {"", " --estimate"}) {
      const auto r = test::run_trnsim("serve " + spec + extra);
      EXPECT_EQ(r.code, 2) << c.name << extra << ": " << r.out;
      EXPECT_NE(r.out.find(spec + ":" + c.pointer), std::string::npos) << c.name << extra << ": " << r.out;
      EXPECT_NE(r.out.find(c.what), std::string::npos) << c.name << extra << ": " << r.out;
    }
  }
}

}  // namespace
}  // namespace trnsim::serve

namespace trnsim::serve {

namespace {

// The Trn2 UltraServer at fast fidelity, and a Llama 3.1 8B iteration laid out as `layout` (its
// shape fields left to the test).
config::LoadedConfig trn2_fast() {
  return bench::ConfigSource{bench::data_path("configs/racks/trn2-ultraserver.json"),
                             {"sim.fidelity=fast"}}.load();
}

infer::IterationSpec llama_8b(const std::string& layout) {
  infer::IterationSpec spec;
  spec.model = infer::load_model(infer::model_path("llama-3.1-8b", bench::data_path("configs/models")));
  spec.layout = infer::parse_layout(layout);
  return spec;
}

}  // namespace

// What a serving shape's child does (RackTimer::start): the rack resolved once in the parent and
// handed over, and no energy samples, since only the end's figures are read. Neither changes
// them: a Llama 3.1 8B TP 2 decode of 4 sequences at KV 300 on the Trn2 UltraServer, simulated
// as `bench iteration` does (the rack resolved in the child, samples taken) and as the timer does,
// ends at the same picosecond with the same energy of each chip and of the fabric, to the bit.
TEST(RackTimer, ChildWithoutSamplesAndWithTheParentsRackGivesTheSameCost) {
  const config::LoadedConfig cfg = trn2_fast();
  infer::IterationSpec spec = llama_8b("tp=2");
  spec.decode_seqs = 4;
  spec.context = 300;
  resolve::RackPlan rack = std::move(*resolve::plan(cfg, resolve::Purpose::run).rack);
  std::vector<std::function<std::string()>> jobs;
  for (bool as_timer : {false, true}) {
    jobs.push_back([&, as_timer]() {
      infer::IterationSource source(spec);
      infer::IterationDriver driver(source);
      run::Simulation sim(cfg, driver);
      if (as_timer) {
        sim.set_rack_plan(rack);
        sim.set_samples(false);
      }
      const run::RunData d = sim.run();
      std::string out = fmt::format("{} {} {:.17g}", d.samples.size(), d.end.value(),
                                    d.fabric_energy.dynamic.si);
      for (const auto& e : d.chip_energy) {
        out += fmt::format(" {:.17g} {:.17g}", e.dynamic.si, e.static_.si);
      }
      return out;
    });
  }
  const std::vector<std::string> out = run_forked(jobs, 2);
  ASSERT_EQ(out.size(), 2u);
  const std::size_t a = out[0].find(' '), b = out[1].find(' ');
  EXPECT_GT(std::stoul(out[0].substr(0, a)), 1u);  // the first and the last at least
  EXPECT_EQ(out[1].substr(0, b), "0");
  EXPECT_EQ(out[0].substr(a), out[1].substr(b));
  EXPECT_GT(std::stoull(out[1].substr(b + 1)), 0u);  // the iteration's end (time units)
}

// Shapes are simulated ahead of need only once the run has needed one the disk cache did not hold
// (docs/serving.md#shapes-ahead). A Llama 3.1 8B decode of 4 sequences at KV 300 on the Trn2
// UltraServer (grid mode): timed with one child into an empty cache, it simulates its grid
// corners and starts nothing ahead; timed again with two children from that cache, every corner
// is read back and no child is left running, though the cells next to it are not in the cache;
// with two children and an empty cache, the same lookup leaves children simulating them, and a
// lookup in the next context cell uses them.
TEST(RackTimer, AWarmRunSimulatesNothingAhead) {
  const config::LoadedConfig cfg = trn2_fast();
  const infer::IterationSpec spec = llama_8b("tp=1");
  const SpecDir tmp("warm-ahead");
  const fs::path& dir = tmp.dir;
  const run::CacheSettings warm{true, (dir / "warm").string()}, cold{true, (dir / "cold").string()};
  const Shape s{4, 300, 0, 0};
  {
    RackTimer one(cfg, spec, TimingMode::grid, 1, 2, warm);
    one.cost(s);
    EXPECT_GE(one.shapes_simulated(), 2u);
    EXPECT_EQ(one.shapes_from_disk(), 0u);
    EXPECT_EQ(one.shapes_in_flight(), 0u);
  }
  {
    RackTimer two(cfg, spec, TimingMode::grid, 2, 2, warm);
    two.cost(s);
    EXPECT_GE(two.shapes_simulated(), 2u);
    EXPECT_EQ(two.shapes_from_disk(), two.shapes_simulated());
    EXPECT_EQ(two.shapes_in_flight(), 0u);
  }
  {
    RackTimer two(cfg, spec, TimingMode::grid, 2, 2, cold);
    two.cost(s);
    EXPECT_EQ(two.shapes_from_disk(), 0u);
    EXPECT_GE(two.shapes_in_flight(), 1u);  // the control: a miss turns the look-ahead on
    // The first it started are the corners of the next context cell (385..512), which a lookup
    // there takes, ended or still in flight: whatever the timing, they count as used.
    EXPECT_EQ(two.shapes_ahead_used(), 0u);
    two.cost(Shape{4, 400, 0, 0});
    EXPECT_GE(two.shapes_ahead_used(), 1u);
  }
}

}  // namespace trnsim::serve
