// SPDX-License-Identifier: MIT
// The replay engine on a machine simple enough to compute by hand: each chip has one egress port
// of bandwidth B and a fixed latency L per transfer; compute takes flops / rate.
// Each TEST elaborates one SystemC simulation (CTest runs each in its own process).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "trnsim/replay/engine.hpp"

using namespace trnsim;
using namespace trnsim::replay;
using trace::OpKind;

namespace {

class SimpleMachine : public Machine {
 public:
  SimpleMachine(int chips, double bytes_per_s, double latency_s, double flops_per_s)
      : egress_free_(std::size_t(chips), sc_core::SC_ZERO_TIME),
        bw_(bytes_per_s),
        lat_(latency_s),
        rate_(flops_per_s) {}
  int chip_count() const override { return int(egress_free_.size()); }
  void compute(int, const trace::Op& op) override {
    sc_core::wait(sc_core::sc_time(trace::op_flops(op) / rate_, sc_core::SC_SEC));
  }
  void reduce(int, std::uint64_t, trace::DType) override {}
  void transfer(int src, int, std::uint64_t bytes, std::uint64_t) override {
    auto& free = egress_free_[std::size_t(src)];
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time start = free > now ? free : now;
    free = start + sc_core::sc_time(double(bytes) / bw_, sc_core::SC_SEC);
    sc_core::wait(free - now + sc_core::sc_time(lat_, sc_core::SC_SEC));
    ++transfers;
  }
  int transfers = 0;

 private:
  std::vector<sc_core::sc_time> egress_free_;
  double bw_, lat_, rate_;
};

trace::Op coll(trace::OpId id, OpKind kind, const std::string& group, std::uint64_t bytes,
               std::vector<trace::OpId> deps = {}) {
  trace::Op o;
  o.id = id;
  o.kind = kind;
  o.group = group;
  o.bytes = bytes;
  o.deps = std::move(deps);
  return o;
}

trace::Op gemm(trace::OpId id, std::uint64_t m, std::uint64_t k, std::uint64_t n,
               std::vector<trace::OpId> deps = {}) {
  trace::Op o;
  o.id = id;
  o.kind = OpKind::gemm;
  o.m = m;
  o.k = k;
  o.n = n;
  o.dtype = trace::DType::bf16;
  o.deps = std::move(deps);
  return o;
}

trace::Workload world(int n) {
  trace::Workload w;
  w.ranks.resize(std::size_t(n));
  for (int r = 0; r < n; ++r) {
    w.ranks[std::size_t(r)].rank = r;
    w.groups["world"].push_back(r);
  }
  return w;
}

// `n` ranks, each running one collective of `kind` and `bytes` on "world".
trace::Workload one_collective(int n, OpKind kind, std::uint64_t bytes) {
  auto w = world(n);
  for (int r = 0; r < n; ++r) w.ranks[std::size_t(r)].ops = {coll(0, kind, "world", bytes)};
  return w;
}

double ns(const sc_core::sc_time& t) { return t.to_seconds() * 1e9; }

// No runtime costs, no handshake: the hand computations below are the algorithms' alone.
config::ReplayParams forced(CollectiveAlgorithm a) {
  config::ReplayParams p;
  p.collectives.algorithm = a;
  p.collectives.launch_latency = Duration(0);
  p.collectives.descriptor_time = Duration(0);
  p.collectives.sync_bytes = Bytes(0);
  return p;
}

// Ideal links: every ordered chip pair has a link of its own of bandwidth B (no shared egress),
// zero latency; the layout is a 4x4 torus when asked, so that rings are its one-hop cycles.
class LinkMachine : public Machine {
 public:
  LinkMachine(int chips, double bytes_per_s, bool torus4x4)
      : chips_(chips), bw_(bytes_per_s), torus_(torus4x4) {}
  int chip_count() const override { return chips_; }
  void compute(int, const trace::Op&) override {}
  void reduce(int, std::uint64_t, trace::DType) override {}
  void transfer(int src, int dst, std::uint64_t bytes, std::uint64_t) override {
    auto& free = free_[{src, dst}];
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time start = free > now ? free : now;
    free = start + sc_core::sc_time(double(bytes) / bw_, sc_core::SC_SEC);
    sc_core::wait(free - now);
  }
  GroupLayout layout(const std::vector<int>& chips) const override {
    GroupLayout g;
    g.chip = chips;
    if (!torus_) return g;
    g.torus_dims = {4, 4};
    g.neighbours.resize(16);
    for (int c = 0; c < 16; ++c) {
      const int x = c % 4, y = c / 4;
      g.neighbours[std::size_t(c)] = {(x + 1) % 4 + 4 * y, (x + 3) % 4 + 4 * y, x + 4 * ((y + 1) % 4),
                                      x + 4 * ((y + 3) % 4)};
      std::sort(g.neighbours[std::size_t(c)].begin(), g.neighbours[std::size_t(c)].end());
    }
    return g;
  }

 private:
  int chips_;
  double bw_;
  bool torus_;
  std::map<std::pair<int, int>, sc_core::sc_time> free_;
};

double all_reduce_ns(int n, std::uint64_t S, CollectiveAlgorithm a, bool torus) {
  auto w = one_collective(n, OpKind::all_reduce, S);
  LinkMachine m(n, 100e9, torus);
  Replay replay("replay", w, m, forced(a));
  sc_core::sc_start();
  replay.check_finished();
  return ns(replay.makespan());
}

}  // namespace

// Ring all-reduce of S bytes on N chips: 2(N-1) steps, each moving S/N over a link of bandwidth B
// with latency L: T = 2(N-1)(L + S/(N B)).
TEST(Replay, RingAllReduceMatchesHandComputation) {
  const int n = 4;
  const std::uint64_t S = 4'000'000;
  auto w = one_collective(n, OpKind::all_reduce, S);
  SimpleMachine m(n, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, forced(CollectiveAlgorithm::ring));
  sc_core::sc_start();
  replay.check_finished();
  const double step_ns = 1000.0 + double(S) / n / 100e9 * 1e9;  // 1 us + 10 us
  EXPECT_NEAR(ns(replay.makespan()), 2 * (n - 1) * step_ns, 1e-3);
  EXPECT_EQ(m.transfers, n * 2 * (n - 1));
  ASSERT_EQ(replay.collectives().size(), 1u);
  EXPECT_EQ(replay.collectives()[0].wire_bytes, std::uint64_t(n) * 2 * (n - 1) * (S / n));
}

// Mesh all-reduce: step 1 sends N-1 chunks of S/N back to back on the egress port, the last
// arriving at (N-1)S/(NB) + L; step 2 the same again.
TEST(Replay, MeshAllReduceMatchesHandComputation) {
  const int n = 4;
  const std::uint64_t S = 4'000'000;
  auto w = one_collective(n, OpKind::all_reduce, S);
  SimpleMachine m(n, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, forced(CollectiveAlgorithm::mesh));
  sc_core::sc_start();
  replay.check_finished();
  const double step_ns = 1000.0 + 3.0 * double(S) / n / 100e9 * 1e9;
  EXPECT_NEAR(ns(replay.makespan()), 2 * step_ns, 1e-3);
}

// A collective starts only when every member has arrived: rank 1 computes 2 us first.
TEST(Replay, DependenciesOrderOpsAndCollectivesWaitForLateMembers) {
  auto w = world(2);
  // 2 * 1000^3 flops at 1e15 flop/s = 2 us
  w.ranks[0].ops = {coll(0, OpKind::all_reduce, "world", 2'000'000)};
  w.ranks[1].ops = {gemm(0, 1000, 1000, 1000), coll(1, OpKind::all_reduce, "world", 2'000'000, {0})};
  SimpleMachine m(2, 100e9, 1e-6, 1e15);
  Replay replay("replay", w, m, forced(CollectiveAlgorithm::ring));
  sc_core::sc_start();
  replay.check_finished();
  // after 2 us: 2 steps of (1 us + 1e6 B / 100 GB/s = 10 us)
  EXPECT_NEAR(ns(replay.makespan()), 2000.0 + 2 * 11000.0, 1e-3);
  // the gemm of rank 1 ended before its collective started
  sc_core::sc_time gemm_end, coll_start;
  for (const auto& r : replay.records()) {
    if (r.rank == 1 && r.index == 0) gemm_end = r.end;
    if (r.rank == 1 && r.index == 1) coll_start = r.start;
  }
  EXPECT_EQ(gemm_end, coll_start);
}

TEST(Replay, IndependentOpsOverlap) {
  auto w = world(1);
  // two 1 us gemms with no dependency run at the same time on this simple machine
  w.ranks[0].ops = {gemm(0, 500, 1000, 1000), gemm(1, 500, 1000, 1000)};
  SimpleMachine m(1, 100e9, 0, 1e15);
  Replay replay("replay", w, m, {});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 1000.0, 1e-6);
}

TEST(Replay, OpProcessesAreReusedFromOpToOp) {
  auto w = world(1);
  // Two 1 us gemms side by side, then a chain of three after both: two op processes in all.
  w.ranks[0].ops = {gemm(0, 500, 1000, 1000), gemm(1, 500, 1000, 1000),
                    gemm(2, 500, 1000, 1000, {0, 1}), gemm(3, 500, 1000, 1000, {2}),
                    gemm(4, 500, 1000, 1000, {3})};
  SimpleMachine m(1, 100e9, 0, 1e15);
  Replay replay("replay", w, m, {});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 4000.0, 1e-6);
  EXPECT_EQ(replay.peak_live_ops(), 2u);
  const sc_core::sc_object* dispatcher = sc_core::sc_find_object("replay.start");
  ASSERT_NE(dispatcher, nullptr);
  EXPECT_EQ(dispatcher->get_child_objects().size(), 2u);  // not one per op
}

TEST(Replay, SendRecvPair) {
  auto w = world(2);
  trace::Op s;
  s.id = 0;
  s.kind = OpKind::send;
  s.peer = 1;
  s.bytes = 1'000'000;
  trace::Op r = s;
  r.kind = OpKind::recv;
  r.peer = 0;
  w.ranks[0].ops = {s};
  w.ranks[1].ops = {r};
  SimpleMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, {});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 11000.0, 1e-3);
}

TEST(Replay, CollectiveNotReachedByEveryMemberIsReportedNotHung) {
  auto w = world(3);
  for (int r = 0; r < 3; ++r) w.ranks[std::size_t(r)].ops = {coll(0, OpKind::all_reduce, "world", 1000)};
  // rank 2 issues a second all-reduce that nobody else joins
  w.ranks[2].ops.push_back(coll(1, OpKind::all_reduce, "world", 1000, {0}));
  SimpleMachine m(3, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, {});
  sc_core::sc_start();
  try {
    replay.check_finished();
    FAIL() << "expected a deadlock report";
  } catch (const ReplayError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("rank 2 op 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("group \"world\" (collective #1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("waits for ranks [0, 1]"), std::string::npos) << msg;
  }
}

TEST(Replay, RecvWithoutSendIsReported) {
  auto w = world(2);
  trace::Op r;
  r.id = 7;
  r.kind = OpKind::recv;
  r.peer = 0;
  r.bytes = 10;
  w.ranks[1].ops = {r};
  SimpleMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, {});
  sc_core::sc_start();
  try {
    replay.check_finished();
    FAIL() << "expected a deadlock report";
  } catch (const ReplayError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 op 7 (recv) waits for a send from rank 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(Replay, DependencyCycleIsAnErrorNamingTheOps) {
  auto w = world(1);
  w.ranks[0].ops = {gemm(0, 8, 8, 8, {1}), gemm(1, 8, 8, 8, {0})};
  SimpleMachine m(1, 100e9, 0, 1e12);
  try {
    Replay replay("replay", w, m, {});
    FAIL() << "expected a cycle error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(Replay, MoreRanksThanChipsIsAnError) {
  auto w = world(4);
  SimpleMachine m(2, 100e9, 0, 1e12);
  EXPECT_THROW(Replay("replay", w, m, {}), TraceError);
}

// An error inside a simulated op (an op the chip cannot run) stops the run and comes back as the
// same typed error, not as a SystemC report.
TEST(Replay, ErrorInsideAnOpIsRethrownTyped) {
  class Refusing : public SimpleMachine {
   public:
    Refusing() : SimpleMachine(1, 1e9, 0, 1e12) {}
    void compute(int, const trace::Op& op) override {
      throw ConfigError("op " + std::to_string(op.id) + " does not fit");
    }
  };
  auto w = world(1);
  w.ranks[0].ops = {gemm(4, 8, 8, 8)};
  Refusing m;
  Replay replay("replay", w, m, {});
  sc_core::sc_start();
  try {
    replay.check_finished();
    FAIL() << "expected the op's error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "op 4 does not fit");
  }
}

// On ideal links two rings halve the time of one (one simulation per test, so two tests):
// T = 2(N-1) S/(N B) for one ring; each of the two directions carries S/2 on links of its own.
TEST(Replay, OneRingOnIdealLinksTakesTheClosedForm) {
  const std::uint64_t S = 8'000'000;
  EXPECT_NEAR(all_reduce_ns(4, S, CollectiveAlgorithm::ring, false),
              2 * 3 * double(S) / 4 / 100e9 * 1e9, 1e-3);  // 60 us
}
TEST(Replay, TwoRingsHalveTheTimeOfOneOnIdealLinks) {
  const std::uint64_t S = 8'000'000;
  EXPECT_NEAR(all_reduce_ns(4, S, CollectiveAlgorithm::bidir_ring, false),
              2 * 3 * double(S) / 2 / 4 / 100e9 * 1e9, 1e-3);  // 30 us
}
// Four rings on the 4x4 torus (two edge-disjoint cycles, both ways): a quarter.
TEST(Replay, MultiRingOnA4x4TorusTakesAQuarterOnIdealLinks) {
  const std::uint64_t S = 16'000'000;
  EXPECT_NEAR(all_reduce_ns(16, S, CollectiveAlgorithm::multi_ring, true),
              2 * 15 * double(S) / 4 / 16 / 100e9 * 1e9, 1e-3);  // 75 us
}

// Runtime costs: launch once, then per data step a semaphore (4 B over a link: L + 4/B), the
// descriptor time D, and the data (L + S/(N B)); the breakdown adds up to the total.
TEST(Replay, RuntimeCostsAddLaunchSyncAndDescriptors) {
  const int n = 2;
  const std::uint64_t S = 2'000'000;
  auto w = one_collective(n, OpKind::all_reduce, S);
  SimpleMachine m(n, 100e9, 1e-6, 1e12);
  auto p = forced(CollectiveAlgorithm::ring);
  p.collectives.launch_latency = Duration(2e-6);
  p.collectives.descriptor_time = Duration(5e-7);
  p.collectives.sync_bytes = Bytes(4);
  Replay replay("replay", w, m, p);
  sc_core::sc_start();
  replay.check_finished();
  const double sync = 1000.0 + 4 / 100e9 * 1e9, data = 1000.0 + double(S) / n / 100e9 * 1e9;
  EXPECT_NEAR(ns(replay.makespan()), 2000.0 + 2 * (sync + 500.0 + data), 1e-3);
  ASSERT_EQ(replay.collectives().size(), 1u);
  const auto& b = replay.collectives()[0].breakdown;
  EXPECT_NEAR(b.launch_s * 1e9, 2000.0, 1e-6);
  EXPECT_NEAR(b.descriptor_s * 1e9, 1000.0, 1e-6);
  EXPECT_NEAR(b.sync_s * 1e9, 2 * sync, 1e-3);
  EXPECT_NEAR(b.wire_s * 1e9, 2 * data, 1e-3);
  EXPECT_EQ(b.reduce_s, 0.0);
  // the semaphores are not data
  EXPECT_EQ(replay.collectives()[0].wire_bytes, std::uint64_t(n) * 2 * (S / n));
}

// A placement puts ranks on chips: two ranks on chip 0, one on chip 1.
TEST(Replay, PlacementMapsRanksToChipsAndIsChecked) {
  auto w = one_collective(3, OpKind::all_gather, 3000);
  SimpleMachine m(2, 100e9, 0, 1e12);
  EXPECT_THROW(Replay("bad", w, m, forced(CollectiveAlgorithm::ring), {0, 0, 2}), TraceError);
  Replay replay("replay", w, m, forced(CollectiveAlgorithm::ring), {0, 0, 1});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_EQ(replay.collectives().size(), 1u);
}

// Each received piece is reduced as soon as it has arrived, while the next ones are on the wire:
// 4 pieces of 1 MB at 100 GB/s arrive at 11, 21, 31 and 41 us; reductions of 15 us each run
// as they come (this machine has no shared reduction engine), so the step ends at 41 + 15 us,
// not 11 + 4 x 15 us as one reduction after another would.
TEST(Replay, ReductionsOfPiecesOverlapTheirArrival) {
  class SlowReduce : public SimpleMachine {
   public:
    SlowReduce() : SimpleMachine(2, 100e9, 1e-6, 1e12) {}
    void reduce(int, std::uint64_t, trace::DType) override {
      sc_core::wait(sc_core::sc_time(15, sc_core::SC_US));
    }
  };
  auto w = one_collective(2, OpKind::reduce_scatter, 8'000'000);
  SlowReduce m;
  auto p = forced(CollectiveAlgorithm::ring);
  p.collectives.chunk_bytes = Bytes(1e6);
  Replay replay("replay", w, m, p);
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 56000.0, 1e-3);
  const auto& b = replay.collectives()[0].breakdown;
  EXPECT_NEAR(b.wire_s * 1e9, 41000.0, 1e-3);
  EXPECT_NEAR(b.reduce_s * 1e9, 15000.0, 1e-3);
}

namespace {

// SimpleMachine that counts what fast-forward charged instead of simulating.
class ChargingMachine : public SimpleMachine {
 public:
  using SimpleMachine::SimpleMachine;
  void account_transfer(int, int, std::uint64_t bytes, std::uint64_t) override {
    ++charged;
    charged_bytes += double(bytes);
  }
  void compute(int chip, const trace::Op& op) override {
    ++computed;
    SimpleMachine::compute(chip, op);
  }
  void fast_compute(int chip, const trace::Op& op, const trace::Op& counterpart,
                    const sc_core::sc_time& duration) override {
    ++fast_computed;
    fast_names.push_back(op.name + "<" + counterpart.name);
    Machine::fast_compute(chip, op, counterpart, duration);
  }
  int charged = 0;
  double charged_bytes = 0;
  int computed = 0, fast_computed = 0;
  std::vector<std::string> fast_names;
};

// Two ranks, `mbs` forward micro-batches of one layer: a GEMM of 2 GFLOP (2 ms at 1 TFLOP/s),
// then an all-reduce of ar_bytes(mb), the next micro-batch after it.
trace::Workload micro_batches(int mbs, const std::function<std::uint64_t(int)>& ar_bytes) {
  auto w = world(2);
  for (int r = 0; r < 2; ++r) {
    auto& ops = w.ranks[std::size_t(r)].ops;
    for (int mb = 0; mb < mbs; ++mb) {
      const trace::OpId id = trace::OpId(2 * mb);
      trace::Op g = gemm(id, 1000, 1000, 1000, mb ? std::vector<trace::OpId>{id - 1}
                                                   : std::vector<trace::OpId>{});
      g.name = fmt::format("l0.m{}.gemm", mb);
      trace::Op a = coll(id + 1, OpKind::all_reduce, "world", ar_bytes(mb), {id});
      a.name = fmt::format("l0.m{}.ar", mb);
      ops.push_back(g);
      ops.push_back(a);
    }
  }
  return w;
}

}  // namespace

// Micro-batch 0 has no predecessor and micro-batch 1 depends on it (one dependency more outside
// the unit), so 2..5 repeat the one before; 1 and 2 are steady, so 3 and 4 are fast-forwarded
// (5, the last of the run, is simulated): their GEMMs take the 2 ms of the one before, their
// all-reduces the 12 us that micro-batch 2's took from its last arrival (2 ring steps of 500 KB
// at 100 GB/s plus 1 us), and their 4 sends each are charged. Makespan 6 x (2 ms + 12 us) as
// without fast-forward, with 2 x 4 transfers and 2 x 2 GEMMs fewer simulated.
TEST(Replay, FastForwardTimesRepeatedMicroBatchesFromTheOnesBefore) {
  auto w = micro_batches(6, [](int) { return 1'000'000; });
  ChargingMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, forced(CollectiveAlgorithm::ring), {}, FastForward{true, 0.02, 0.1});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 6 * (2e6 + 12e3), 1e-3);
  const FastForwardStats f = replay.fast_forward_stats();
  EXPECT_EQ(f.units, 12u);
  EXPECT_EQ(f.repeating_units, 8u);
  EXPECT_EQ(f.units_fast_forwarded, 4u);
  EXPECT_EQ(f.collectives_fast_forwarded, 2u);
  EXPECT_EQ(f.ops_fast_forwarded, 8u);  // 2 all-reduces x 2 members, 2 GEMMs x 2 ranks
  EXPECT_EQ(f.compute_fast_forwarded, 4u);
  EXPECT_EQ(m.charged, 8);
  EXPECT_DOUBLE_EQ(m.charged_bytes, 8 * 500'000.0);
  EXPECT_EQ(m.transfers, 4 * 4);
  EXPECT_EQ(m.computed, 2 * 4);
  EXPECT_EQ(m.fast_computed, 4);
  EXPECT_EQ(m.fast_names, (std::vector<std::string>{"l0.m3.gemm<l0.m2.gemm", "l0.m3.gemm<l0.m2.gemm",
                                                    "l0.m4.gemm<l0.m3.gemm", "l0.m4.gemm<l0.m3.gemm"}));
  int fast = 0;
  for (const auto& c : replay.collectives()) fast += c.fast_forwarded;
  EXPECT_EQ(fast, 2);
}

// All-reduces alternating between 1 MB and 2 MB: no micro-batch repeats the one before within
// the 10 % size tolerance, so everything is simulated.
TEST(Replay, FastForwardNeedsMatchingSizes) {
  auto w = micro_batches(6, [](int mb) { return mb % 2 ? 2'000'000 : 1'000'000; });
  ChargingMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", w, m, forced(CollectiveAlgorithm::ring), {}, FastForward{true, 0.02, 0.1});
  sc_core::sc_start();
  replay.check_finished();
  const FastForwardStats f = replay.fast_forward_stats();
  EXPECT_EQ(f.units, 12u);
  EXPECT_EQ(f.repeating_units, 0u);
  EXPECT_EQ(f.units_fast_forwarded, 0u);
  EXPECT_EQ(m.charged, 0);
  EXPECT_EQ(m.transfers, 6 * 4);
}

// ---- work emitted during the run (replay/source.hpp) -------------------------------------------

namespace {

// A generator on two ranks: `iterations` iterations, each emitted as one batch when the one
// before has finished (a serving scheduler's loop). An iteration is, per rank, a GEMM of
// 2 GFLOP (2 ms at 1 TFLOP/s), then an all-reduce of 1 MB on both ranks (a ring of two: two
// steps of 1 us + 500 KB / 100 GB/s = 12 us): T = 2 ms + 12 us. Its ops' fast-forward unit is
// (series 0, the iteration).
class Iterations : public WorkSource {
 public:
  // `positions[k]`: iteration k's position in its series (k when empty).
  explicit Iterations(int iterations, BatchOptions options = {}, std::vector<int> positions = {})
      : n_(iterations), options_(options), positions_(std::move(positions)) {}
  int num_ranks() const override { return 2; }
  const std::map<std::string, std::vector<int>>& groups() const override { return groups_; }
  void begin(Emitter& out) override { emit_next(out); }
  void finished(const BatchDone& d, Emitter& out) override {
    done.push_back(d);
    if (next_ < n_) emit_next(out);
  }
  std::optional<UnitKey> unit_key(int, const trace::Op& op) const override {
    return UnitKey{0, *op.micro_batch};
  }
  void calibration_ops(const OpVisitor& visit) const override {
    visit(0, gemm(0, 1000, 1000, 1000));
  }
  std::vector<BatchDone> done;
  std::vector<BatchId> ids;

 private:
  void emit_next(Emitter& out) {
    auto& batch = batches_.emplace_back(2);
    for (int r = 0; r < 2; ++r) {
      trace::RankTrace& rt = batch[std::size_t(r)];
      rt.rank = r;
      trace::Op g = gemm(0, 1000, 1000, 1000);
      g.name = fmt::format("it{}.gemm", next_);
      trace::Op a = coll(1, OpKind::all_reduce, "world", 1'000'000, {0});
      a.name = fmt::format("it{}.ar", next_);
      g.micro_batch = a.micro_batch = positions_.empty() ? next_ : positions_[std::size_t(next_)];
      rt.ops = {g, a};
    }
    ++next_;
    ids.push_back(out.emit(batch, options_));
  }
  int n_, next_ = 0;
  BatchOptions options_;
  std::vector<int> positions_;
  std::map<std::string, std::vector<int>> groups_{{"world", {0, 1}}};
  std::deque<std::vector<trace::RankTrace>> batches_;  // emitted ops stay in place
};

constexpr double kIterationNs = 2e6 + 12e3;

}  // namespace

// N iterations one after another: the makespan is N x T; each batch finishes at (k + 1) T and
// the source hears of it then; records number each rank's ops over all batches; the k-th
// all-reduce of the group is the k-th iteration's.
TEST(Replay, GeneratedIterationsRunOneAfterAnother) {
  const int n = 4;
  Iterations source(n);
  SimpleMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", source, m, forced(CollectiveAlgorithm::ring));
  EXPECT_EQ(replay.batches(), 1u);  // the first iteration, emitted at elaboration
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), n * kIterationNs, 1e-3);
  EXPECT_EQ(replay.batches(), std::size_t(n));
  EXPECT_EQ(source.ids, (std::vector<BatchId>{0, 1, 2, 3}));
  ASSERT_EQ(source.done.size(), std::size_t(n));
  for (int k = 0; k < n; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(source.done[std::size_t(k)].batch, BatchId(k));
    EXPECT_NEAR(ns(source.done[std::size_t(k)].start), k * kIterationNs, 1e-3);
    EXPECT_NEAR(ns(source.done[std::size_t(k)].end), (k + 1) * kIterationNs, 1e-3);
  }
  ASSERT_EQ(replay.records().size(), std::size_t(4 * n));
  for (const OpRecord& r : replay.records()) {
    const int k = int(r.index / 2);
    EXPECT_EQ(replay.op(r.rank, r.index).name,
              r.index % 2 ? fmt::format("it{}.ar", k) : fmt::format("it{}.gemm", k));
    EXPECT_NEAR(ns(r.start), k * kIterationNs + (r.index % 2 ? 2e6 : 0.0), 1e-3);
  }
  ASSERT_EQ(replay.collectives().size(), std::size_t(n));
  for (int k = 0; k < n; ++k) EXPECT_EQ(replay.collectives()[std::size_t(k)].sequence, k);
  EXPECT_EQ(m.transfers, n * 2 * 2);
  EXPECT_THROW(replay.op(0, std::size_t(2 * n)), std::out_of_range);
}

// Fast-forward on emitted work: iterations 1 to 5 repeat the one before; 0 and 1 are steady, so
// 2 to 5 are timed from the one before, the last too (BatchOptions::hold_back_last_unit false:
// nothing of its batch follows it). Makespan 6 T as simulated; of 6 iterations' 4 transfers,
// 4 iterations' are charged instead.
TEST(Replay, FastForwardTimesRepeatedGeneratedIterations) {
  Iterations source(6, BatchOptions{false});
  ChargingMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", source, m, forced(CollectiveAlgorithm::ring), {},
                FastForward{true, 0.02, 0.1});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 6 * kIterationNs, 1e-3);
  const FastForwardStats f = replay.fast_forward_stats();
  EXPECT_EQ(f.units, 12u);
  EXPECT_EQ(f.repeating_units, 10u);
  EXPECT_EQ(f.units_fast_forwarded, 8u);
  EXPECT_EQ(f.collectives_fast_forwarded, 4u);
  EXPECT_EQ(f.compute_fast_forwarded, 8u);
  EXPECT_EQ(m.computed, 2 * 2);
  EXPECT_EQ(m.transfers, 2 * 4);
  EXPECT_EQ(m.charged, 4 * 4);
  EXPECT_DOUBLE_EQ(m.charged_bytes, 16 * 500'000.0);
  EXPECT_EQ(m.fast_names.front(), "it2.gemm<it1.gemm");
  EXPECT_EQ(m.fast_names.back(), "it5.gemm<it4.gemm");
}

// Held back (the default, a trace's rule): each iteration is the last unit of its batch, so
// none is fast-forwarded, though they repeat one another.
TEST(Replay, FastForwardHoldsBackTheLastUnitOfABatchByDefault) {
  Iterations source(6);
  ChargingMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", source, m, forced(CollectiveAlgorithm::ring), {},
                FastForward{true, 0.02, 0.1});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 6 * kIterationNs, 1e-3);
  EXPECT_EQ(replay.fast_forward_stats().repeating_units, 10u);
  EXPECT_EQ(replay.fast_forward_stats().units_fast_forwarded, 0u);
  EXPECT_EQ(m.charged, 0);
  EXPECT_EQ(m.transfers, 6 * 4);
}

namespace {

// Rank 0's all-reduce comes at elaboration (batch 0), with a 5 us delay on rank 1 (batch 1);
// rank 1's all-reduce (batch 2) only when the delay has finished.
class LateMember : public WorkSource {
 public:
  int num_ranks() const override { return 2; }
  const std::map<std::string, std::vector<int>>& groups() const override { return groups_; }
  void begin(Emitter& out) override {
    first_[0].ops = {coll(0, OpKind::all_reduce, "world", 1'000'000)};
    trace::Op d;
    d.id = 0;
    d.kind = OpKind::delay;
    d.duration = Duration(5e-6);
    wait_[0].rank = 1;
    wait_[0].ops = {d};
    out.emit(first_);
    out.emit(wait_);
  }
  void finished(const BatchDone& d, Emitter& out) override {
    done.push_back(d);
    if (d.batch != 1) return;
    late_[0].rank = 1;
    late_[0].ops = {coll(0, OpKind::all_reduce, "world", 1'000'000)};
    out.emit(late_);
  }
  void calibration_ops(const OpVisitor&) const override {}
  std::vector<BatchDone> done;

 private:
  std::map<std::string, std::vector<int>> groups_{{"world", {0, 1}}};
  std::vector<trace::RankTrace> first_{1}, wait_{1}, late_{1};
};

}  // namespace

// A collective whose last member is emitted later is planned then; the members that arrived
// wait for it: the all-reduce runs from 5 us, T = 5 us + 2 (1 us + 5 us) = 17 us.
TEST(Replay, CollectiveMembersMayComeInLaterBatches) {
  LateMember source;
  SimpleMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", source, m, forced(CollectiveAlgorithm::ring));
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 17000.0, 1e-3);
  ASSERT_EQ(replay.collectives().size(), 1u);
  EXPECT_NEAR(ns(replay.collectives()[0].first_arrival), 0.0, 1e-3);
  EXPECT_NEAR(ns(replay.collectives()[0].last_arrival), 5000.0, 1e-3);
  ASSERT_EQ(source.done.size(), 3u);
  EXPECT_EQ(source.done[0].batch, 1u);
  EXPECT_NEAR(ns(source.done[0].end), 5000.0, 1e-3);
  EXPECT_NEAR(ns(source.done[1].end), 17000.0, 1e-3);
  EXPECT_NEAR(ns(source.done[2].end), 17000.0, 1e-3);
  EXPECT_EQ(replay.records().size(), 3u);
}

namespace {

// Emits `first` at elaboration and `then` when it has finished.
class TwoBatches : public WorkSource {
 public:
  TwoBatches(std::vector<trace::RankTrace> first, std::vector<trace::RankTrace> then)
      : first_(std::move(first)), then_(std::move(then)) {}
  int num_ranks() const override { return 2; }
  const std::map<std::string, std::vector<int>>& groups() const override { return groups_; }
  void begin(Emitter& out) override { out.emit(first_); }
  void finished(const BatchDone& d, Emitter& out) override {
    if (d.batch == 0) out.emit(then_);
  }
  void calibration_ops(const OpVisitor&) const override {}

 private:
  std::vector<trace::RankTrace> first_, then_;
  std::map<std::string, std::vector<int>> groups_{{"world", {0, 1}}};
};

trace::RankTrace rank_ops(int rank, std::vector<trace::Op> ops) {
  trace::RankTrace rt;
  rt.rank = rank;
  rt.ops = std::move(ops);
  return rt;
}

}  // namespace

// A bad batch at elaboration is an error from the constructor, naming the batch and the rank.
TEST(Replay, BadBatchAtElaborationIsAnError) {
  TwoBatches source({rank_ops(2, {gemm(0, 8, 8, 8)})}, {});
  SimpleMachine m(2, 100e9, 0, 1e12);
  try {
    Replay replay("replay", source, m, {});
    FAIL() << "expected a bad batch";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("batch 0 gives ops to rank 2; the workload has ranks 0 to 1"),
              std::string::npos)
        << e.what();
  }
}

// A bad batch emitted during the run stops it; check_finished() throws the typed error.
TEST(Replay, BadBatchDuringTheRunIsRethrownTyped) {
  TwoBatches source({rank_ops(0, {gemm(0, 8, 8, 8)})},
                    {rank_ops(1, {gemm(0, 8, 8, 8, {1}), gemm(1, 8, 8, 8, {0})})});
  SimpleMachine m(2, 100e9, 0, 1e12);
  Replay replay("replay", source, m, {});
  sc_core::sc_start();
  try {
    replay.check_finished();
    FAIL() << "expected a cycle error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: dependency cycle"), std::string::npos) << e.what();
  }
}

// A collective on a group the source does not define.
TEST(Replay, UnknownGroupIsAnError) {
  TwoBatches source({rank_ops(0, {coll(0, OpKind::all_reduce, "tp", 8)})}, {});
  SimpleMachine m(2, 100e9, 0, 1e12);
  try {
    Replay replay("replay", source, m, {});
    FAIL() << "expected an unknown group";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("uses group \"tp\", which the workload does not define"),
              std::string::npos)
        << e.what();
  }
}

// Training and inference phases key fast-forward's units by (phase, micro-batch); the optimizer
// and the gradient synchronisation, and ops with no micro-batch, belong to none. A trace's source
// declares every op, in trace order, for calibration.
TEST(Replay, PhaseUnitKeysAndTheTraceSource) {
  trace::Op o = gemm(0, 8, 8, 8);
  EXPECT_EQ(phase_unit_key(o), std::nullopt);
  o.name = "l3.m2.mlp";  // the generator's names: forward, micro-batch 2
  EXPECT_EQ(phase_unit_key(o), (UnitKey{std::int64_t(trace::Phase::forward), 2}));
  o.phase = trace::Phase::decode;
  o.micro_batch = 7;
  EXPECT_EQ(phase_unit_key(o), (UnitKey{std::int64_t(trace::Phase::decode), 7}));
  o.phase = trace::Phase::optimizer;
  EXPECT_EQ(phase_unit_key(o), std::nullopt);
  EXPECT_EQ(config::enum_name(trace::Phase::prefill), "prefill");
  EXPECT_EQ(config::enum_name(trace::Phase::decode), "decode");

  auto w = world(2);
  w.ranks[0].ops = {gemm(0, 8, 8, 8), gemm(1, 16, 8, 8)};
  w.ranks[1].ops = {gemm(0, 32, 8, 8)};
  const TraceSource source(w);
  std::vector<std::uint64_t> seen;
  std::vector<int> by;
  source.calibration_ops([&](int rank, const trace::Op& op) {
    seen.push_back(op.m);
    by.push_back(rank);
  });
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{8, 16, 32}));
  EXPECT_EQ(by, (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(source.num_ranks(), 2);
  EXPECT_EQ(&source.groups(), &w.groups);
}

// A series emitted out of order (positions 10, 0, 5): the unit at 5 follows the one at 0, which
// came in a batch where 10 already followed it, so it kept nothing to compare with: no unit
// repeats another, all is simulated.
TEST(Replay, FastForwardComparesNothingWithAUnitEmittedOutOfOrder) {
  Iterations source(3, BatchOptions{false}, {10, 0, 5});
  ChargingMachine m(2, 100e9, 1e-6, 1e12);
  Replay replay("replay", source, m, forced(CollectiveAlgorithm::ring), {},
                FastForward{true, 0.02, 0.1});
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_NEAR(ns(replay.makespan()), 3 * kIterationNs, 1e-3);
  EXPECT_EQ(replay.fast_forward_stats().units, 6u);
  EXPECT_EQ(replay.fast_forward_stats().repeating_units, 0u);
  EXPECT_EQ(m.charged, 0);
}
