// SPDX-License-Identifier: MIT
// Coarse event granularity (/sim/compute_granularity) against the fine mode: two Trainium3
// chips with their own HBM run the same op from t = 0, one fine (1) and one coarse (16); the op
// times must agree within the bounds measured and recorded in docs/models/chip.md.
// Valid since the chip's DMA engines wake through a per-chip WakeCalendar: before, each chip's
// timing depended on the other chip's events (test_two_chips.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "chip/chip.hpp"
#include "test_support.hpp"

namespace trnsim::model {
namespace {

using test::chip_options;
using test::chip_preset;
using test::Runner;

struct Pair {
  OpStats fine, coarse;
  std::uint64_t fine_events = 0, coarse_events = 0;
};

Pair run_both(const ComputeOp& op) {
  const auto p = chip_preset("trn3");
  Chip fine("fine", p, chip_options(p)), coarse("coarse", p, chip_options(p, "hbm", 16));
  Pair r;
  Runner a("a", [&] { r.fine = fine.execute(op, "op"); });
  Runner b("b", [&] { r.coarse = coarse.execute(op, "op"); });
  sc_core::sc_start();
  r.fine_events = fine.wakeups();
  r.coarse_events = coarse.wakeups();
  return r;
}

double rel(const Pair& r) { return (r.coarse.time_s - r.fine.time_s) / r.fine.time_s; }

void check(const ComputeOp& op, double bound) {
  const Pair r = run_both(op);
  std::printf("fine %.3f us %llu events, coarse %.3f us %llu events, error %+.3f %%\n",
              r.fine.time_s * 1e6, (unsigned long long)r.fine_events, r.coarse.time_s * 1e6,
              (unsigned long long)r.coarse_events, 100 * rel(r));
  EXPECT_LE(std::abs(rel(r)), bound);
  // Same work either way: the coarse mode groups instructions, it does not drop any.
  EXPECT_EQ(r.fine.flops, r.coarse.flops);
  EXPECT_EQ(r.fine.hbm_bytes, r.coarse.hbm_bytes);
  EXPECT_LE(r.coarse.instructions, r.fine.instructions);
}

TEST(Granularity, Gemm512) { check(GemmOp{512, 512, 512, Dtype::mxfp8, 1}, 0.02); }
TEST(Granularity, Gemm4096) { check(GemmOp{4096, 4096, 4096, Dtype::mxfp8, 1}, 0.02); }
TEST(Granularity, Gemm8192) { check(GemmOp{8192, 8192, 8192, Dtype::mxfp8, 1}, 0.02); }
TEST(Granularity, GemmSkinny) { check(GemmOp{65536, 7168, 2048, Dtype::mxfp8, 1}, 0.02); }
TEST(Granularity, GemmBf16) { check(GemmOp{4096, 4096, 4096, Dtype::bf16, 1}, 0.02); }
TEST(Granularity, Elementwise) {
  check(ElementOp{ElementKind::elementwise, 29360128, Dtype::bf16, 2}, 0.02);
}
TEST(Granularity, Softmax) { check(ElementOp{ElementKind::softmax, 16u << 20, Dtype::bf16, 1}, 0.02); }

// Grouped matmuls are exact on the Tensor engine: 16 K steps in one instruction take the time
// of 16 instructions (here 512 moving columns at 4 MACs/PE/cycle = 512 cycles each, LoadStationary
// 32 cycles hidden but the first), power ramp disabled: (32 + 16 x 512 + 64) / 2.4 GHz.
TEST(Granularity, GroupedMatmulTakesTheTimeOfItsParts) {
  auto p = chip_preset("trn3", {"chip.core.tensor.power_ramp.enabled=false"});
  test::FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  Program prog;
  prog.done = prog.new_semaphore();
  Instr mm;
  mm.kind = Instr::Kind::matmul;
  mm.dtype = Dtype::mxfp8;
  mm.k = 16 * 512;
  mm.m = 128;
  mm.n = 512;
  mm.reps = 16;
  prog.push(EngineId::tensor, mm).signal(prog.done);
  prog.done_target = 1;
  sc_core::sc_time end;
  Runner r("r", [&] { end = core.run(prog); });
  sc_core::sc_start();
  // The first LoadStationary (32 cycles) has no matmul to hide behind; + 64 cycles drain.
  const double expect = (32 + 16 * 512 + 64) / 2.4e9;
  EXPECT_NEAR(end.to_seconds(), expect, 1e-12);
  EXPECT_DOUBLE_EQ(core.tensor().macs(), 16.0 * 512 * 128 * 512);
}

}  // namespace
}  // namespace trnsim::model
