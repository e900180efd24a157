// SPDX-License-Identifier: MIT
// The chip: lowering fits SBUF/PSUM, errors name the op, concurrent ops contend, idle power.
#include <gtest/gtest.h>

#include <array>
#include <memory>

#include "chip/chip.hpp"
#include "chip/op_profile.hpp"
#include "test_support.hpp"
#include "trnsim/error.hpp"

// libsystemc's own main() needs sc_main; GoogleTest's main() is the one that runs.
int sc_main(int, char**) { return 1; }

namespace trnsim::model {
namespace {

using test::chip_options;
using test::chip_preset;
using test::Runner;

TEST(Lowering, GemmTilesFitSbufAndPsum) {
  const auto p = chip_preset("trn2");
  for (Dtype d : {Dtype::bf16, Dtype::fp8, Dtype::fp32}) {
    for (std::uint64_t s : {128u, 1000u, 8192u, 65536u}) {
      const GemmPlan plan = plan_gemm(s, s, s, 1, d, p, "g");
      EXPECT_LE(plan.sbuf_bytes_per_partition, 224u * 1024) << s;
      EXPECT_LE(plan.psum_banks, 8);
      EXPECT_GE(plan.mb, 1u);
      EXPECT_GE(plan.kb, 1u);
    }
  }
  // FP8 double-row contracts 256 rows per instruction; one PSUM bank holds 512 FP32.
  const GemmPlan fp8 = plan_gemm(8192, 8192, 8192, 1, Dtype::fp8, p, "g");
  EXPECT_EQ(fp8.tk, 256u);
  EXPECT_EQ(fp8.tn, 512u);
  EXPECT_TRUE(fp8.full_k);
  // A contraction too long for SBUF is blocked over K with one bank per accumulating tile.
  const GemmPlan longk = plan_gemm(1024, 1u << 22, 1024, 1, Dtype::bf16, p, "g");
  EXPECT_FALSE(longk.full_k);
  EXPECT_EQ(std::uint64_t(longk.psum_banks), longk.mb * longk.nb);
}

// Which operand stays in SBUF: the one that makes the other re-stream least. Trn2 BF16, 224 KiB
// per partition; a whole-K A tile (128 rows) is 16 KiB per partition, a B tile (512 columns)
// 64 KiB; 4 output staging tiles take 4 KiB.
TEST(Lowering, GemmKeepsResidentTheOperandThatSavesTraffic) {
  const auto p = chip_preset("trn2");
  constexpr double MiB = 1024.0 * 1024;
  // 8192 x 8192 x 1024: B resident, both of its tiles in one slot (128 KiB) beside two 16 KiB
  // A tiles streaming: B 16 MiB once, A 128 MiB once, C 16 MiB. Keeping A resident instead
  // fits only 2 A tiles (2 x 2 x 16 KiB beside two 64 KiB B slots), re-reading B 32 times.
  const GemmPlan wide = plan_gemm(8192, 8192, 1024, 1, Dtype::bf16, p, "g");
  EXPECT_TRUE(wide.full_k);
  EXPECT_FALSE(wide.a_resident);
  EXPECT_EQ(wide.nb, 2u);
  EXPECT_EQ(wide.mb, 1u);
  EXPECT_EQ(wide.resident_buffers, 1);
  EXPECT_EQ(wide.sbuf_bytes_per_partition, 128u * 1024 + 2 * 16 * 1024 + 4096);
  EXPECT_DOUBLE_EQ(wide.hbm_bytes, (16 + 128 + 16) * MiB);
  // 128 x 8192 x 8192: the one A tile stays (2 MiB once) and B streams once (128 MiB) + C 2 MiB;
  // B resident would re-read A for each of its 16 blocks.
  const GemmPlan narrow = plan_gemm(128, 8192, 8192, 1, Dtype::bf16, p, "g");
  EXPECT_TRUE(narrow.a_resident);
  EXPECT_EQ(narrow.mb, 1u);
  EXPECT_EQ(narrow.resident_buffers, 1);
  EXPECT_DOUBLE_EQ(narrow.hbm_bytes, (2 + 128 + 2) * MiB);
}

// K = 16384 BF16 fits neither whole-K plan (a B tile alone is 128 KiB per partition), so K is
// blocked. Traffic in MiB for Mb x Nb output tiles in PSUM (A 512, B 64, C 64):
// 1 x 4: 512 + 64 x 128; 2 x 4: 512 + 64 x 64; 4 x 2: 512 x 2 + 64 x 32 = 3072; 8 x 1: the same
// (a tie keeps 4 x 2). K blocks: 2 x 4 x 256 B + 2 x 2 x 1 KiB = 6 KiB per K tile fit 36 of the
// 128 K tiles beside the staging; 4 equal blocks of 32.
TEST(Lowering, LongKBlocksSplitPsumForLeastTraffic) {
  const auto p = chip_preset("trn2");
  const GemmPlan plan = plan_gemm(16384, 16384, 2048, 1, Dtype::bf16, p, "g");
  EXPECT_FALSE(plan.full_k);
  EXPECT_EQ(plan.mb, 4u);
  EXPECT_EQ(plan.nb, 2u);
  EXPECT_EQ(plan.kb, 32u);
  EXPECT_EQ(plan.psum_banks, 8);
  EXPECT_EQ(plan.sbuf_bytes_per_partition, 32u * 6144 + 4096);
  EXPECT_DOUBLE_EQ(plan.hbm_bytes, (3072.0 + 64) * 1024 * 1024);
}

// The chip's core grid follows the plans: 8192^3 BF16 on Trn2's 8 cores is cheapest as 1 x 8
// (each core: 8192 x 8192 x 1024, the `wide` plan above), 8 x (16 + 128 + 16) MiB in all; a
// 2 x 4 grid (4096 x 8192 x 2048 per core) at best keeps one 64 KiB B tile resident and re-reads
// its 64 MiB of A four times: 8 x (32 + 4 x 64 + 16) MiB.
TEST(Lowering, GemmGridReadsTheLeast) {
  const auto p = chip_preset("trn2");
  HbmAllocator hbm;
  const auto steps = lower(GemmOp{8192, 8192, 8192, Dtype::bf16, 1}, "g", p, hbm);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(steps[0].hbm_bytes, 8 * (16 + 128 + 16) * 1024.0 * 1024);
  for (const auto& prog : steps[0].per_core) {
    ASSERT_NE(prog, nullptr);
    EXPECT_EQ(prog->sbuf_bytes_per_partition, 128u * 1024 + 2 * 16 * 1024 + 4096);
  }
}

TEST(Lowering, OpThatCannotFitNamesTheOp) {
  const auto p = chip_preset("trn2", {"chip.core.sbuf.bytes_per_partition=1KiB"});
  try {
    plan_gemm(4096, 4096, 4096, 1, Dtype::bf16, p, "layer7.mlp.up");
    FAIL() << "expected WorkloadError";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("layer7.mlp.up"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes_per_partition"), std::string::npos);
  }
}

TEST(Lowering, UnsupportedDtypeIsInputError) {
  const auto p = chip_preset("trn2");
  EXPECT_THROW(plan_gemm(128, 128, 128, 1, Dtype::mxfp8, p, "g"), InputError);
}

// The count the run's estimate uses is the lowering's own, for every plan shape: whole K with A
// or B resident, K blocked, batches over cores, a skinny grid, every element kind, attention, a
// copy, and coarse granularity.
TEST(Lowering, InstructionCountWithoutLoweringIsExact) {
  const auto p = chip_preset("trn2");
  const std::vector<ComputeOp> ops = {
      GemmOp{8192, 8192, 1024, Dtype::bf16, 1}, GemmOp{1024, 8192, 8192, Dtype::bf16, 1},
      GemmOp{1024, 1u << 22, 1024, Dtype::bf16, 1}, GemmOp{300, 700, 900, Dtype::fp8, 5},
      GemmOp{1000, 1, 1, Dtype::bf16, 1}, GemmOp{128, 128, 128, Dtype::fp32, 37},
      ElementOp{ElementKind::elementwise, 1000000, Dtype::bf16, 3},
      ElementOp{ElementKind::softmax, 777777, Dtype::fp32, 1},
      ElementOp{ElementKind::norm, 5, Dtype::bf16, 1},
      ElementOp{ElementKind::reduction, 1u << 20, Dtype::bf16, 1},
      AttentionOp{2, 4, 1000, 3000, 128, Dtype::bf16}, MemcpyOp{(5u << 20) + 1}};
  for (int granularity : {1, 4}) {
    for (const auto& op : ops) {
      HbmAllocator hbm;
      double built = 0;
      for (const auto& step : lower(op, "x", p, hbm, granularity)) {
        built += double(step.instructions);
        // A GEMM's queues are reserved from the same counts, per engine, before they are built:
        // each ends exactly full (a short count would have grown it, a long one left room).
        if (std::holds_alternative<ElementOp>(op) || std::holds_alternative<MemcpyOp>(op)) continue;
        if (step.per_core.front() && step.per_core.front()->op_name.ends_with("/softmax")) continue;
        for (const auto& prog : step.per_core) {
          if (!prog) continue;
          for (const auto& q : prog->queues) EXPECT_EQ(q.capacity(), q.size()) << op_key(op);
        }
      }
      EXPECT_EQ(lowered_instructions(op, p, granularity), built) << op_key(op) << " g" << granularity;
    }
  }
  // A copy of 5 MiB + 1 B is six 1 MiB DMAs; 1000 x 1 x 1 is 8 row tiles over 8 cores, each a
  // matmul, an eviction, a store and one DMA of A and of B: 40.
  EXPECT_EQ(lowered_instructions(MemcpyOp{(5u << 20) + 1}, p), 6);
  EXPECT_EQ(lowered_instructions(GemmOp{1000, 1, 1, Dtype::bf16, 1}, p), 40);
}

// Planning a GEMM takes constant time in its size: m = 2^64 - 1 used to scan 1.4e17 block sizes.
TEST(Lowering, PlanOfAHugeGemmIsImmediate) {
  const auto p = chip_preset("trn2");
  const GemmPlan huge = plan_gemm(std::uint64_t(1) << 40, 128, 128, 1, Dtype::bf16, p, "g");
  EXPECT_GE(huge.mb, 1u);
  EXPECT_LE(huge.sbuf_bytes_per_partition, 224u * 1024);
  EXPECT_GT(lowered_instructions(GemmOp{std::uint64_t(1) << 40, 128, 128, Dtype::bf16, 1}, p), 1e10);
}

TEST(Sram, FootprintBeyondCapacityIsErrorNamingOp) {
  const auto p = chip_preset("trn2");
  Sram sbuf("sbuf", p.core.sbuf, Sram::Unit::bytes_per_partition);
  try {
    sbuf.check_fits(300 * 1024, "attn.qk");
    FAIL();
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("attn.qk"), std::string::npos);
  }
}

// Two GEMMs launched together on one chip: they share SBUF, engines, DMA and HBM, so the pair
// takes much longer than one alone (power ramp off so that warm-up does not blur it).
TEST(Chip, ConcurrentOpsContend) {
  const auto p = chip_preset("trn2", {"chip.core.tensor.power_ramp.enabled=false"});
  Chip chip("chip", p, chip_options(p));
  double alone = 0, first = 0, second = 0;
  const GemmOp g{2048, 2048, 2048, Dtype::bf16, 1};
  sc_core::sc_event go;
  Runner a("a", [&] {
    alone = chip.execute(g, "alone").time_s;
    go.notify(sc_core::SC_ZERO_TIME);
    first = chip.execute(g, "first").time_s;
  });
  Runner b("b", [&] {
    sc_core::wait(go);
    second = chip.execute(g, "second").time_s;
  });
  sc_core::sc_start();
  ASSERT_GT(alone, 0);
  // Each op gets fresh HBM addresses, whose banks (under the address hash) and refresh phase
  // differ from the lone run's: a GEMM that ends up running alone moves by about 1 %.
  EXPECT_GE(std::min(first, second), alone * 0.98);
  EXPECT_GT(std::max(first, second), alone * 1.5);
  EXPECT_LT(std::max(first, second), alone * 2.5);
}

// The threads that run core programs are bounded (ChipOptions::workers, /sim/core_workers): each
// core may have one, further ones while the budget lasts; a program that finds its core's workers
// busy and the budget spent waits in order for one. A 128^3 GEMM is one tile: one program, on
// core 0. With a budget of 8 threads for the 8 cores, three GEMMs started at the same time, one
// delta cycle apart, run one after another in that order, each from the end of the one before
// (the memory is a bandwidth timeline, idle again between them), so they end 1, 2 and 3 times
// the GEMM's time alone after they started. Unbounded, each has a worker of its own, and the
// three end at the same times: they wait for the in-order engine queues of core 0 instead.
void three_gemms_at_once(std::uint64_t budget, OpStats& alone, std::array<OpStats, 3>& three,
                         std::size_t& workers, std::uint64_t& waited) {
  const auto p = chip_preset("trn2", {"chip.core.tensor.power_ramp.enabled=false"});
  auto opt = chip_options(p, "bandwidth");
  opt.workers = std::make_shared<CoreWorkerBudget>();
  opt.workers->limit = budget;
  auto chip = std::make_unique<Chip>("chip", p, opt);
  const GemmOp g{128, 128, 128, Dtype::bf16, 1};
  sc_core::sc_event go;
  Runner a("a", [&] {
    alone = chip->execute(g, "alone");
    go.notify(sc_core::SC_ZERO_TIME);
  });
  Runner b("b", [&] {
    sc_core::wait(go);
    three[0] = chip->execute(g, "b");
  });
  Runner c("c", [&] {
    sc_core::wait(go);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    three[1] = chip->execute(g, "c");
  });
  Runner d("d", [&] {
    sc_core::wait(go);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    three[2] = chip->execute(g, "d");
  });
  sc_core::sc_start();
  workers = chip->workers();
  waited = chip->programs_waited();
  EXPECT_EQ(chip->most_workers_on_a_core(), workers);  // all on core 0
}

TEST(Chip, ProgramsWaitInOrderForTheirCoresWorker) {
  OpStats alone;
  std::array<OpStats, 3> three;
  std::size_t workers = 0;
  std::uint64_t waited = 0;
  three_gemms_at_once(8, alone, three, workers, waited);
  EXPECT_EQ(alone.cores_used, 1);
  EXPECT_EQ(workers, 1u);  // never more than the bound
  EXPECT_EQ(waited, 2u);   // the second and the third program
  const sc_core::sc_time t = sc_core::sc_time::from_seconds(alone.time_s);
  ASSERT_GT(t, sc_core::SC_ZERO_TIME);
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(three[std::size_t(i)].start_s, alone.end_s) << i;
    EXPECT_EQ(sc_core::sc_time::from_seconds(three[std::size_t(i)].end_s),
              sc_core::sc_time::from_seconds(alone.end_s) + t * double(i + 1))
        << i;
  }
}

TEST(Chip, UnboundedProgramsEachHaveAWorker) {
  OpStats alone;
  std::array<OpStats, 3> three;
  std::size_t workers = 0;
  std::uint64_t waited = 0;
  three_gemms_at_once(0, alone, three, workers, waited);  // 0: no bound
  EXPECT_EQ(workers, 3u);
  EXPECT_EQ(waited, 0u);
  const sc_core::sc_time t = sc_core::sc_time::from_seconds(alone.time_s);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sc_core::sc_time::from_seconds(three[std::size_t(i)].end_s),
              sc_core::sc_time::from_seconds(alone.end_s) + t * double(i + 1))
        << i;
  }
}

// A GEMM reports its useful FLOPs, stays below the Tensor peak and moves at least A + B + C.
TEST(Chip, GemmBoundedByPeakAndCountsTraffic) {
  const auto p = chip_preset("trn2");
  Chip chip("chip", p, chip_options(p));
  OpStats st;
  Runner r("r", [&] { st = chip.execute(GemmOp{1024, 1024, 1024, Dtype::bf16, 1}, "g"); });
  sc_core::sc_start();
  EXPECT_DOUBLE_EQ(st.flops, 2.0 * 1024 * 1024 * 1024);
  const double peak = 8 * 128 * 128 * 2 * 2.4e9;
  EXPECT_LT(st.flops / st.time_s, peak);
  EXPECT_GE(st.hbm_bytes, 3.0 * 1024 * 1024 * 2);
}

// An idle chip draws its static power (plus the fallback HBM stacks' background power).
TEST(Chip, IdlePowerIsStaticPower) {
  const auto p = chip_preset("trn3");
  Chip chip("chip", p, chip_options(p, "bandwidth"));
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));
  const auto e = collect_energy(TablePower{}, Duration(10e-6), &chip);
  EXPECT_DOUBLE_EQ(e.dynamic.si, 0.0);
  EXPECT_NEAR(e.total().si / 10e-6, 105.0 + 4 * 1.5, 1e-9);
}

// Element-wise families and attention run to completion and count their FLOPs.
TEST(Chip, ElementOpsAndAttentionRun) {
  const auto p = chip_preset("trn3");
  Chip chip("chip", p, chip_options(p));
  OpStats sm, at;
  Runner r("r", [&] {
    sm = chip.execute(ElementOp{ElementKind::softmax, 1u << 20, Dtype::bf16, 1}, "softmax");
    at = chip.execute(AttentionOp{1, 8, 1024, 1024, 128, Dtype::bf16}, "attn");
  });
  sc_core::sc_start();
  EXPECT_GT(sm.time_s, 0);
  EXPECT_DOUBLE_EQ(sm.flops, 4.0 * (1u << 20));
  EXPECT_DOUBLE_EQ(at.flops, 2 * (2.0 * 8 * 1024 * 1024 * 128) + 4.0 * 8 * 1024 * 1024);
}

}  // namespace
}  // namespace trnsim::model
