// SPDX-License-Identifier: MIT
// NeuronCore engines against hand-computed cycle counts (one elaboration per TEST).
#include <gtest/gtest.h>

#include <cmath>

#include "neuron_core/neuron_core.hpp"
#include "test_support.hpp"

namespace trnsim::model {
namespace {

using test::chip_preset;
using test::FixedMemory;
using test::Runner;

Instr matmul(std::uint32_t k, std::uint32_t m, std::uint32_t n, Dtype d, bool new_stationary) {
  Instr in;
  in.kind = Instr::Kind::matmul;
  in.k = k;
  in.m = m;
  in.n = n;
  in.dtype = d;
  in.new_stationary = new_stationary;
  return in;
}

// 128x128x512 BF16 on one core, power ramp off: exposed LoadStationary (32 cycles) +
// max(N=512, min_ii=64) cycles + 64 cycles of drain before the result is visible, at 2.4 GHz.
// Energy: 128*128*512 MACs at 0.65 pJ + SBUF reads of the stationary (128x128 BF16) and moving
// (128x512 BF16) tiles at 0.085 pJ/bit + PSUM writes of 128x512 FP32 at 0.024 pJ/bit.
TEST(NeuronCore, MatmulCyclesAndEnergy) {
  auto p = chip_preset("trn2", {"chip.core.tensor.power_ramp.enabled=false"});
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  sc_core::sc_time end;
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    prog.push(EngineId::tensor, matmul(128, 128, 512, Dtype::bf16, true)).signal(prog.done);
    prog.done_target = 1;
    end = core.run(prog);
  });
  sc_core::sc_start();
  EXPECT_NEAR(end.to_seconds() * 1e9, (32.0 + 512.0 + 64.0) / 2.4, 1e-3);
  const double macs = 128.0 * 128 * 512;
  const double expected = macs * 0.65e-12 + (128.0 * 128 * 2 + 128.0 * 512 * 2) * 8 * 0.085e-12 +
                          128.0 * 512 * 4 * 8 * 0.024e-12;
  EXPECT_NEAR(collect_energy(TablePower{}, Duration(0), &core).dynamic.si, expected, expected * 1e-9);
  EXPECT_DOUBLE_EQ(core.tensor().macs(), macs);
}

// FP8 on Trn2 is double-row: a 256-row contraction with N=512 takes 512 cycles, not 1024; the
// 64-cycle minimum initiation interval applies to small N.
TEST(NeuronCore, Fp8DoubleRowAndMinII) {
  auto p = chip_preset("trn2", {"chip.core.tensor.power_ramp.enabled=false",
                                "chip.core.tensor.fixed_overhead_cycles=0",
                                "chip.core.tensor.stationary_load_cycles=0"});
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  sc_core::sc_time end;
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    prog.push(EngineId::tensor, matmul(256, 128, 512, Dtype::fp8, true));
    prog.push(EngineId::tensor, matmul(256, 128, 16, Dtype::fp8, false)).signal(prog.done);
    prog.done_target = 1;
    end = core.run(prog);
  });
  sc_core::sc_start();
  EXPECT_NEAR(end.to_seconds() * 1e9, (512.0 + 64.0) / 2.4, 1e-3);
}

// One DMA engine moving 32 KiB HBM->SBUF: DGE (600 ns) + first packet's memory latency
// (100 ns + 2 KiB at 1 TB/s) + 32 KiB at 23 GB/s engine rate (packets stream behind it).
TEST(NeuronCore, DmaOneEngineFixedCostsPlusBandwidth) {
  auto p = chip_preset("trn2");
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  sc_core::sc_time end;
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    Instr in;
    in.kind = Instr::Kind::dma;
    in.bytes = 32768;
    in.engines = 1;
    in.src = DmaEndpoint::hbm;
    in.dst = DmaEndpoint::sbuf;
    prog.push(EngineId::sync, in).signal(prog.done);
    prog.done_target = 1;
    end = core.run(prog);
  });
  sc_core::sc_start();
  const double expected_ns = 600 + 100 + 2048 / 1e12 * 1e9 + 32768 / 23e9 * 1e9;
  EXPECT_NEAR(end.to_seconds() * 1e9, expected_ns, 0.05);
}

// A trigger blocked on another engine's semaphore pays the start latency (1.3 us) from the
// moment the semaphore is set; the DGE's 600 ns runs inside it.
TEST(NeuronCore, DmaCrossEngineStartLatency) {
  auto p = chip_preset("trn2");
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  sc_core::sc_time end;
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    Semaphore* s = prog.new_semaphore();
    Instr v;
    v.kind = Instr::Kind::element;
    v.elements = 512 * 100;  // 100 cycles + 100 overhead at 0.96 GHz
    prog.push(EngineId::vector, v).signal(s);
    Instr in;
    in.kind = Instr::Kind::dma;
    in.bytes = 2048;
    in.engines = 1;
    prog.push(EngineId::sync, in).wait(s, 1).signal(prog.done);
    prog.done_target = 1;
    end = core.run(prog);
  });
  sc_core::sc_start();
  const double vec_ns = 200 / 0.96;
  const double expected_ns = vec_ns + 1300 + 100 + 2048 / 1e12 * 1e9 + 2048 / 23e9 * 1e9;
  EXPECT_NEAR(end.to_seconds() * 1e9, expected_ns, 0.05);
}

// Vector then Scalar through a semaphore: the Scalar instruction starts when Vector ends.
TEST(NeuronCore, SemaphoresOrderEngines) {
  auto p = chip_preset("trn2");
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  sc_core::sc_time end;
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    Semaphore* s = prog.new_semaphore();
    Instr a;
    a.kind = Instr::Kind::element;
    a.elements = 512 * 1000;  // Vector: 100 + 1000 cycles at 0.96 GHz
    a.inputs = 1;
    Instr b = a;
    b.elements = 128 * 1000;  // Scalar: 100 + 1000 cycles at 1.2 GHz
    prog.push(EngineId::scalar, b).wait(s, 1).signal(prog.done);
    prog.push(EngineId::vector, a).signal(s);
    prog.done_target = 1;
    end = core.run(prog);
  });
  sc_core::sc_start();
  EXPECT_NEAR(end.to_seconds() * 1e9, 1100 / 0.96 + 1100 / 1.2, 1e-3);
}

// Ten back-to-back 512-cycle matmuls from an idle engine under the power ramp: the rate rises
// linearly from 50 % to 100 % over 3 us, so the work W = 10 * 512 / 2.4 GHz takes d with
// 0.5 d + d^2 / (4 * 3 us) = W (all within the ramp).
TEST(NeuronCore, PowerRampStretchesShortBurst) {
  auto p = chip_preset("trn2", {"chip.core.tensor.fixed_overhead_cycles=0",
                                "chip.core.tensor.stationary_load_cycles=0"});
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  sc_core::sc_time end;
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    for (int i = 0; i < 10; ++i) {
      auto& in = prog.push(EngineId::tensor, matmul(128, 128, 512, Dtype::bf16, false));
      if (i == 9) in.signal(prog.done);
    }
    prog.done_target = 1;
    end = core.run(prog);
  });
  sc_core::sc_start();
  const double w = 10 * 512 / 2.4e9, t = 3e-6;
  const double d = (-0.5 + std::sqrt(0.25 + 4 * (0.5 / (2 * t)) * w)) / (2 * (0.5 / (2 * t)));
  EXPECT_GT(d, w * 1.3);
  EXPECT_NEAR(end.to_seconds(), d, 1e-11);
}

}  // namespace
}  // namespace trnsim::model
