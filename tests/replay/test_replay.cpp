// SPDX-License-Identifier: MIT
// The replay engine on a machine simple enough to compute by hand: each chip has one egress port
// of bandwidth B and a fixed latency L per transfer; compute takes flops / rate.
// Each TEST elaborates one SystemC simulation (CTest runs each in its own process).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <functional>
#include <map>
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
