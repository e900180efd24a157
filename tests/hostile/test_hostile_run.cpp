// SPDX-License-Identifier: MIT
// Work estimated before a run (run::estimate_work, hand-computed), and the bound on processes
// with stacks of their own: op processes of the replay and helper threads of a machine.
// Each TEST elaborates at most one SystemC simulation (CTest runs each in its own process).
#include <gtest/gtest.h>

#include <systemc>

#include <string>

#include "chip/lowering.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/run/run.hpp"

using namespace trnsim;
using trace::OpKind;

namespace {

const std::string kInstance = std::string(TRNSIM_SOURCE_DIR) + "/configs/racks/trn2-instance.json";

trace::Op op_of(trace::OpId id, OpKind kind, std::vector<trace::OpId> deps = {}) {
  trace::Op o;
  o.id = id;
  o.kind = kind;
  o.deps = std::move(deps);
  return o;
}

// `ranks` ranks on group "world", each running `ops(rank)`.
template <class F>
trace::Workload world(int ranks, F ops) {
  trace::Workload w;
  w.name = "t";
  w.ranks.resize(std::size_t(ranks));
  for (int r = 0; r < ranks; ++r) {
    w.ranks[std::size_t(r)].rank = r;
    w.ranks[std::size_t(r)].ops = ops(r);
    w.groups["world"].push_back(r);
  }
  return w;
}

// On each of 2 ranks: a 1024^3 GEMM, then an all-reduce of `bytes` after it.
trace::Workload gemm_then_all_reduce(std::uint64_t bytes) {
  return world(2, [&](int) {
    auto g = op_of(0, OpKind::gemm);
    g.m = g.k = g.n = 1024;
    auto a = op_of(1, OpKind::all_reduce, {0});
    a.group = "world";
    a.bytes = bytes;
    return std::vector<trace::Op>{g, a};
  });
}

}  // namespace

TEST(HostileEstimate, FiguresOfASmallRunByHand) {
  const auto loaded = config::load_config(kInstance);
  // fast: flow network, op-level compute
  const auto plan = *resolve::plan(loaded, resolve::Purpose::run).rack;
  ASSERT_EQ(plan.fabric.model, "flow");
  const auto e = run::estimate_work(gemm_then_all_reduce(8 << 20), plan, loaded.config.replay);
  EXPECT_EQ(e.ops, 4u);
  EXPECT_EQ(e.dependencies, 2u);
  // The all-reduce on 2 members, per member: the 4x4 torus gives a chip 4 links, so at most 4
  // rings of 2 (n - 1) messages: 4 x 2 x 2 = 16 data messages; as many handshakes, plus
  // 2 x 8 MiB / 1 MiB pieces = 48; 96 for both members.
  EXPECT_EQ(e.messages, 96u);
  EXPECT_EQ(e.packets, 0);  // flow network
  // The op-level compute calibrates the GEMM once on the tile model: its lowering's instructions
  // (model::lowered_instructions, exact: Lowering.InstructionCountWithoutLoweringIsExact), 4
  // events each, and its program held by one calibration child (2 x sizeof(Instr) each).
  const double calibrated =
      model::lowered_instructions(model::GemmOp{1024, 1024, 1024, model::Dtype::bf16, 1}, plan.chip.params);
  EXPECT_EQ(e.calibration_shapes, 1u);
  EXPECT_EQ(e.calibration_instructions, calibrated);
  EXPECT_EQ(e.instructions, 0);  // the run itself replays profiles
  // The flow network merges a step's pieces: 16 events for each of the 2 x 16 data messages and
  // handshakes of a member, not for its pieces.
  EXPECT_EQ(e.events, 4 * 16 + 2 * 32 * 16 + 4 * calibrated);
  EXPECT_EQ(e.program_bytes, calibrated * 256);  // 256 B per instruction, one program
  // 768 B per op, 2.5 KiB more per op of the longest chain of a rank (2), 8 B per dependency.
  EXPECT_EQ(e.longest_chain, 2u);
  EXPECT_EQ(e.op_bytes, 4 * 768 + 2 * 2560 + 2 * 8);
  EXPECT_EQ(e.message_bytes, 96 * 16);
  // Each rank's 2 ops are one chain: at most 2 - 2 + 1 = 1 live at once, 4 KiB each.
  EXPECT_EQ(e.live_processes, 2u);
  EXPECT_EQ(e.process_bytes, 2.0 * 4096);
  EXPECT_EQ(e.fixed_bytes, 16.0 * 1024 * 1024);
  // The GEMM at trn2's peak: 2 x 1024^3 flops / (2 x 8 cores x 128 x 128 x 2 fp8 MACs x 2.4 GHz).
  EXPECT_NEAR(e.end_s, 1073741824.0 / (8 * 128 * 128 * 2 * 2.4e9), 1e-12);
}

// sweep --estimate's total: three runs of expected walls 3, 5 and 4 s (1, 2 and 1 s at the fast
// rate) and 1, 3 and 2 GB, in a pool.
TEST(HostileEstimate, PoolOfRunsByHand) {
  std::vector<run::EstimateReport> runs(3);
  const double shorts[] = {1, 2, 1}, longs[] = {3, 5, 4}, gb[] = {1, 3, 2};
  for (std::size_t i = 0; i < 3; ++i) {
    runs[i].events = 10.0 * double(i + 1);
    runs[i].wall_s_short = shorts[i];
    runs[i].wall_s = longs[i];
    runs[i].memory_bytes = gb[i] * 1e9;
    runs[i].memory_budget = 6e9;
  }
  runs[2].fits = false;
  // One at a time: the sums, and the largest run's memory.
  const run::PoolEstimate one = run::estimate_pool(runs, 1);
  EXPECT_EQ(one.events, 60);
  EXPECT_EQ(one.cpu_s, 12);
  EXPECT_EQ(one.cpu_s_short, 4);
  EXPECT_EQ(one.wall_s, 12);
  EXPECT_EQ(one.wall_s_short, 4);
  EXPECT_EQ(one.memory_peak_bytes, 3e9);
  EXPECT_EQ(one.beyond_budgets, 1u);
  // Two workers: run 0 on the first (0-3 s), run 1 on the second (0-5 s), run 2 on the first
  // free again (3-7 s): 7 s; at the fast rate 0-1, 0-2, 1-2: 2 s. Memory: the two largest, 3 + 2.
  const run::PoolEstimate two = run::estimate_pool(runs, 2);
  EXPECT_EQ(two.cpu_s, 12);
  EXPECT_EQ(two.wall_s, 7);
  EXPECT_EQ(two.wall_s_short, 2);
  EXPECT_EQ(two.memory_peak_bytes, 5e9);
  // More workers than runs: the longest run, every run's memory at once.
  const run::PoolEstimate many = run::estimate_pool(runs, 8);
  EXPECT_EQ(many.wall_s, 5);
  EXPECT_EQ(many.memory_peak_bytes, 6e9);
}

TEST(HostileEstimate, RackTermPerChipAndLink) {
  // trn2-instance: a 4x4 torus with wrap, 16 chips and 2 links a chip (+x, +y), 32 links.
  auto w = gemm_then_all_reduce(8 << 20);
  for (const bool detailed : {false, true}) {
    const auto loaded = config::load_config(
        kInstance, {detailed ? "sim.fidelity=detailed" : "sim.fidelity=fast"});
    const auto plan = *resolve::plan(loaded, resolve::Purpose::run).rack;
    const auto e = run::estimate_work(w, plan, loaded.config.replay);
    EXPECT_EQ(e.chips, 16u);
    EXPECT_EQ(e.links, 32u);
    // fast (flow network): 20 KiB a chip, 20 KiB a link; detailed (packet): 368 KiB, 19 KiB.
    const double rack = detailed ? 16 * 368 * 1024 + 32 * 19 * 1024 : 16 * 20 * 1024 + 32 * 20 * 1024;
    EXPECT_EQ(e.rack_bytes, rack) << (detailed ? "detailed" : "fast");
    EXPECT_EQ(e.memory_bytes(), e.fixed_bytes + e.op_bytes + e.message_bytes + e.packet_bytes +
                                    e.process_bytes + e.program_bytes + rack);
  }
  // A 10x10 torus: 100 chips and 200 links at the fast fidelity, 100 x 20 KiB + 200 x 20 KiB.
  const auto big = config::load_config(kInstance, {"rack.topology.torus.dims=[10,10]"});
  const auto e = run::estimate_work(w, *resolve::plan(big, resolve::Purpose::run).rack,
                                    big.config.replay);
  EXPECT_EQ(e.chips, 100u);
  EXPECT_EQ(e.links, 200u);
  EXPECT_EQ(e.rack_bytes, 100 * 20 * 1024 + 200 * 20 * 1024);
}

TEST(HostileEstimate, PacketFabricCountsPacketsAndHops) {
  const auto loaded = config::load_config(kInstance, {"sim.fidelity=detailed"});
  const auto plan = *resolve::plan(loaded, resolve::Purpose::run).rack;
  ASSERT_EQ(plan.fabric.model, "packet");
  auto w = world(2, [](int r) {
    auto s = op_of(0, r == 0 ? OpKind::send : OpKind::recv);
    s.peer = 1 - r;
    s.bytes = 1 << 20;
    return std::vector<trace::Op>{s};
  });
  const auto e = run::estimate_work(w, plan, loaded.config.replay);
  // One send of 1 MiB: its packets plus one for a partial last packet.
  const double packets = std::ceil(double(1 << 20) / double(plan.fabric.packet_bytes)) + 1;
  EXPECT_EQ(e.messages, 1u);
  EXPECT_EQ(e.packets, packets);
  EXPECT_EQ(e.events, 2 * 16 + 4 * (plan.fabric.diameter + 1) * packets);
  EXPECT_EQ(e.packet_bytes, 32 * packets);
}

TEST(HostileEstimate, EachBudgetNamesItsSetting) {
  const auto loaded = config::load_config(kInstance);
  const auto plan = *resolve::plan(loaded, resolve::Purpose::run).rack;
  auto message = [&](const trace::Workload& w, config::SimParams sim) {
    try {
      run::check_estimate(run::estimate_work(w, plan, loaded.config.replay), sim, "workload t");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  config::SimParams sim;
  EXPECT_EQ(message(gemm_then_all_reduce(8 << 20), sim), "");
  // A 1 PiB all-reduce: 2 x (32 + 2^31) pieces of 16 B, 68.7 GB.
  const std::string big = message(gemm_then_all_reduce(std::uint64_t(1) << 50), sim);
  EXPECT_NE(big.find("workload t: the run needs about 68.7 GB of memory (start-up: 0.0168 GB; 4 "
                     "ops: 8.21e-06 GB; 4.295e+09 collective pieces and sends: 68.7 GB; 0 packets: "
                     "0 GB; 2 op processes: "),
            std::string::npos)
      << big;
  EXPECT_NE(big.find("(/sim/memory_budget)"), std::string::npos) << big;
  sim.work_budget = 1500;
  const std::string work = message(gemm_then_all_reduce(8 << 20), sim);
  EXPECT_NE(work.find("workload t: the run needs about 1.82e+03 simulation events (4 ops, 96 "
                      "collective pieces and sends, 0 packets, 0 tile-model instructions, 184 "
                      "more to calibrate 1 distinct ops), more than the work budget of 1.5e+03 "
                      "events (/sim/work_budget); its largest op, rank 0 op 0, lowers to 184 "
                      "tile-model instructions (split it, or make it smaller); or raise it with "
                      "--set sim.work_budget="),
            std::string::npos)
      << work;
  // 10 chained delays of 10^6 s: 10^7 s, past the 2^63 ps = 9.223e6 s a run simulates.
  auto delays = world(1, [](int) {
    std::vector<trace::Op> ops;
    for (trace::OpId i = 0; i < 10; ++i) {
      ops.push_back(op_of(i, OpKind::delay, i ? std::vector<trace::OpId>{i - 1} : std::vector<trace::OpId>{}));
      ops.back().duration = Duration(1e6);
    }
    return ops;
  });
  EXPECT_EQ(message(delays, {}),
            "workload t: rank 0's longest chain of ops alone takes at least 1e+07 s (its delays, "
            "and its compute at the chip's peak rate), beyond the 9.223e+06 s a run simulates "
            "(2^63 ticks of the kernel's 1 ps)");
  // Side by side, the same delays are no chain.
  for (auto& op : delays.ranks[0].ops) op.deps.clear();
  EXPECT_EQ(message(delays, {}), "");
}

// A machine that uses the default start_transfer and start_reduce (a helper thread each):
// every transfer takes 1 us on a link of its own.
class HelperMachine : public replay::Machine {
 public:
  int chip_count() const override { return 8; }
  void compute(int, const trace::Op&) override {}
  void reduce(int, std::uint64_t, trace::DType) override {}
  void transfer(int, int, std::uint64_t bytes, std::uint64_t) override {
    sc_core::wait(1, sc_core::SC_US);
    ++transfers;
    moved += bytes;
  }
  std::uint64_t transfers = 0, moved = 0;
};

TEST(HostileProcesses, HelperThreadsOfManyLargeCollectivesAreBounded) {
  // 520 independent 16 MiB ring all-reduces on 8 ranks: 4,160 ops ready at once, and 2 pieces
  // of 1 MiB in every step of every member (8,320 sends at the start).
  constexpr int kColl = 520;
  auto w = world(8, [](int) {
    std::vector<trace::Op> ops;
    for (int i = 0; i < kColl; ++i) {
      ops.push_back(op_of(trace::OpId(i), OpKind::all_reduce));
      ops.back().group = "world";
      ops.back().bytes = 16 << 20;
    }
    return ops;
  });
  config::ReplayParams p;
  p.collectives.algorithm = config::CollectiveAlgorithm::ring;
  p.collectives.sync_bytes = Bytes(0);
  HelperMachine m;
  replay::Replay replay("replay", w, m, p);
  sc_core::sc_start();
  replay.check_finished();
  EXPECT_EQ(replay.records().size(), 8u * kColl);
  // Ring all-reduce on 8 members: 2 x 7 steps of 16 MiB / 8 = 2 MiB, 2 pieces each: 28 pieces
  // per member and collective.
  EXPECT_EQ(m.transfers, std::uint64_t(kColl) * 8 * 28);
  EXPECT_EQ(m.moved, std::uint64_t(kColl) * 8 * 14 * (2 << 20));
  EXPECT_EQ(replay.peak_live_ops(), 4096u);  // the bound was reached, and held
  EXPECT_EQ(m.peak_helper_processes(), replay::Machine::kMaxHelperProcesses);
}

TEST(HostileProcesses, TheRackRunsCollectivesWithoutHelperThreads) {
  // 2,050 independent 1 MiB all-reduces on 2 ranks of the trn2 instance (4,100 ops).
  const auto loaded = config::load_config(kInstance);
  auto w = world(2, [](int) {
    std::vector<trace::Op> ops;
    for (int i = 0; i < 2050; ++i) {
      ops.push_back(op_of(trace::OpId(i), OpKind::all_reduce));
      ops.back().group = "world";
      ops.back().bytes = 1 << 20;
    }
    return ops;
  });
  const auto d = run::run_workload(loaded, w);
  EXPECT_EQ(d.records.size(), 4100u);
  EXPECT_EQ(d.collectives.size(), 2050u);
  EXPECT_EQ(d.peak_op_processes, 4096u);
  EXPECT_EQ(d.peak_helper_processes, 0u);
}

// 2 ranks of 6 independent 128^3 GEMMs each (one tile: a program on core 0 of the rank's chip).
static trace::Workload six_small_gemms_per_rank() {
  return world(2, [](int) {
    std::vector<trace::Op> ops;
    for (int i = 0; i < 6; ++i) {
      ops.push_back(op_of(trace::OpId(i), OpKind::gemm));
      ops.back().m = ops.back().k = ops.back().n = 128;
    }
    return ops;
  });
}

// The tile chips' worker threads are bounded (/sim/core_workers, shared by the rack's chips: one
// for each core that runs a program, further ones while the budget lasts). The instance has 16
// chips x 8 cores: 130 threads leave 2 beyond one per core. 6 independent 128^3 GEMMs per rank
// (one tile each, a program on core 0 of its chip) start together, rank 0's first (issue order):
// its chip's core 0 gets its own worker and the 2 others, rank 1's its own; the other 8 programs
// wait, and every op still ends.
TEST(HostileProcesses, CoreWorkersAreBoundedAndProgramsWaitForThem) {
  auto w = six_small_gemms_per_rank();
  const auto bounded =
      config::load_config(kInstance, {"sim.fidelity=detailed", "sim.core_workers=130"});
  const auto d = run::run_workload(bounded, w);
  EXPECT_EQ(d.records.size(), 12u);
  EXPECT_EQ(d.core_workers, 4u);
  EXPECT_EQ(d.programs_waited_for_workers, 8u);
  EXPECT_EQ(d.most_core_workers, 3u);
}

TEST(HostileProcesses, CoreWorkersBelowTheirBoundAreOnePerProgramAtOnce) {
  auto w = six_small_gemms_per_rank();
  // The default, 16,384, does not bind here: one worker per program at once.
  const auto free = config::load_config(kInstance, {"sim.fidelity=detailed"});
  const auto d = run::run_workload(free, w);
  EXPECT_EQ(d.records.size(), 12u);
  EXPECT_EQ(d.core_workers, 12u);
  EXPECT_EQ(d.most_core_workers, 6u);
  EXPECT_EQ(d.programs_waited_for_workers, 0u);
}

TEST(HostileEstimate, BoundsTheMessagesARunSends) {
  // Every collective kind at a small and a large size, and a send, on 8 ranks of the instance.
  // The packet network: it gets one transfer per piece (the flow network merges the pieces a
  // step sends together, so it starts fewer).
  const auto loaded = config::load_config(kInstance, {"rack.fabric.model=packet"});
  const auto plan = *resolve::plan(loaded, resolve::Purpose::run).rack;
  auto w = world(8, [](int r) {
    std::vector<trace::Op> ops;
    trace::OpId id = 0;
    for (OpKind k : {OpKind::all_reduce, OpKind::all_gather, OpKind::reduce_scatter,
                     OpKind::all_to_all, OpKind::broadcast, OpKind::barrier}) {
      for (std::uint64_t bytes : {std::uint64_t(64) << 10, std::uint64_t(48) << 20}) {
        ops.push_back(op_of(id, k, id ? std::vector<trace::OpId>{id - 1} : std::vector<trace::OpId>{}));
        ops.back().group = "world";
        ops.back().bytes = k == OpKind::barrier ? 0 : bytes;
        ++id;
      }
    }
    ops.push_back(op_of(id, r % 2 ? OpKind::recv : OpKind::send, {id - 1}));
    ops.back().peer = r ^ 1;
    ops.back().bytes = 3 << 20;
    return ops;
  });
  const auto e = run::estimate_work(w, plan, loaded.config.replay);
  const auto d = run::run_workload(loaded, w);
  const double sent = double(d.network.transfers_started);  // one rank per chip: no local copies
  EXPECT_LE(sent, double(e.messages));
  EXPECT_GE(sent, double(e.messages) / 4) << "the bound is loose";
  EXPECT_GT(sent, 1000);
}
