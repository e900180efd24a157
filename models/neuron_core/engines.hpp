// SPDX-License-Identifier: MIT
// The compute engines of a NeuronCore. Each engine is one SC_METHOD process (no stack, no context
// switch) that pops instructions from its in-order queue, waits on the instruction's semaphores, occupies the engine for the
// instruction's duration and increments the instruction's semaphores when it ends. Any engine
// may also trigger a DMA (a DMA instruction in its queue), as Neuron sequencers do.
//
// The engines' resources are private, so an engine runs ahead of simulated time: it computes
// when each instruction starts and ends and records its semaphore increments at those future
// times; it yields only when a semaphore it needs has not been signalled yet or its queue is
// empty. Timing is identical to waiting for every instruction; events are per blocking point.
#pragma once

#include <systemc>

#include <algorithm>
#include <array>
#include <cstdint>

#include "common/block.hpp"
#include "common/fifo.hpp"
#include "neuron_core/program.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

class DmaSystem;
class Sram;

// The statistics of every engine of a NeuronCore.
struct EngineStats {
  static constexpr StatKey instructions{"instructions", StatUnit::count,
                                        "instructions executed (DMA triggers too)"};
  static constexpr StatKey busy{"busy", StatUnit::seconds, "time spent executing instructions"};
  static constexpr std::array all{instructions, busy};
};

class Engine : public Block {
 public:
  SC_HAS_PROCESS(Engine);
  Engine(const sc_core::sc_module_name& name, EngineId id, DmaSystem& dma,
         std::uint64_t& wakeups);
  void enqueue(const Instr* in) {
    queue_.push(in);
    work_.notify(sc_core::SC_ZERO_TIME);
  }
  EngineId id() const { return id_; }
  // Time the engine was busy executing instructions (DMA triggers excluded).
  sc_core::sc_time busy() const { return busy_; }
  std::optional<double> utilisation(Duration elapsed) const override {
    if (!(elapsed.si > 0)) return std::nullopt;
    return busy_stat_.value / elapsed.si;
  }
  const sc_core::sc_time& free_at() const { return free_at_; }
  // Counts `busy` as busy time without holding the engine: an op fast-forwarded from its
  // profile (Chip::fast_forward), whose time the replay already took from its counterpart.
  void count_busy(const sc_core::sc_time& busy) {
    busy_ += busy;
    busy_stat_.value = busy_.to_seconds();
  }
  // Holds the engine for `hold` from now, or from the end of the instructions it has already
  // started, counting `busy` of it as busy time: the rest of an op timed from its profile
  // (Chip::run_rest). Returns the end of the hold.
  sc_core::sc_time occupy(const sc_core::sc_time& hold, const sc_core::sc_time& busy) {
    free_at_ = std::max(free_at_, sc_core::sc_time_stamp()) + hold;
    busy_ += busy;
    busy_stat_.value = busy_.to_seconds();
    return free_at_;
  }

 protected:
  // Executes a compute instruction that may start at `start`; returns its end.
  virtual sc_core::sc_time execute(const Instr& in, const sc_core::sc_time& start,
                                   const sc_core::sc_time& operands_ready) = 0;
  // Delay between the end of an instruction and the time its results are visible to others.
  virtual sc_core::sc_time result_latency() const { return sc_core::SC_ZERO_TIME; }

 private:
  // One activation: runs instructions until the queue is empty or a semaphore is missing.
  void run();

  EngineId id_;
  DmaSystem& dma_;
  std::uint64_t& wakeups_;
  Fifo<const Instr*> queue_;
  sc_core::sc_event work_;
  sc_core::sc_time free_at_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
  Stat& instructions_;
  Stat& busy_stat_;
};

// The Tensor engine's statistics besides EngineStats.
struct TensorEngineStats {
  static constexpr StatKey macs{"macs", StatUnit::count, "multiply-accumulates performed"};
  static constexpr StatKey matmuls{"matmuls", StatUnit::count, "matmul instructions"};
  static constexpr StatKey throttled{"throttled", StatUnit::seconds,
                                     "extra time spent under the power ramp"};
  static constexpr std::array all{macs, matmuls, throttled};
};

// rows x cols systolic array. A matmul instruction contracts up to rows * k_factor logical rows
// (k_factor = MACs per PE per cycle, >= 1: FP8 double-row, MX quad) against a moving tile of n
// columns and occupies the array for max(n * k_factor / macs, matmul_min_ii) cycles (FP32 at
// 0.25 MACs/cycle: 4n). A new stationary tile is loaded in the background (LoadStationary,
// stationary_load_cycles) while the previous matmul runs. Results are visible in PSUM
// fixed_overhead_cycles after the instruction ends (pipeline drain).
// Power ramp (dI/dt throttle, NEX): after the engine was idle for longer than dip_window (or at
// its first instruction) it runs at start_fraction of its rate, rising linearly to full rate
// over ramp_time; instruction durations integrate this rate exactly.
class TensorEngine : public Engine {
 public:
  TensorEngine(const sc_core::sc_module_name& name, const config::TensorEngineParams& p,
               DmaSystem& dma, Sram& sbuf, Sram& psum, std::uint64_t& wakeups);
  double macs() const { return macs_.value; }

 protected:
  sc_core::sc_time execute(const Instr& in, const sc_core::sc_time& start,
                           const sc_core::sc_time& operands_ready) override;
  sc_core::sc_time result_latency() const override { return drain_; }

 private:
  // Wall time to do `work` (seconds at full rate) starting at `start` under the power ramp.
  double ramped_duration(double start, double work);

  config::TensorEngineParams p_;
  Sram& sbuf_;
  Sram& psum_;
  sc_core::sc_time drain_;
  double ls_free_ = 0;          // LoadStationary port free (seconds)
  double prev_start_ = 0;       // start of the previous matmul (seconds)
  double last_end_ = -1;        // end of the previous matmul (seconds), -1: never ran
  double ramp_start_ = 0;       // when the throttle last (re-)engaged
  Stat& macs_;
  Stat& matmuls_;
  Stat& throttled_;
  std::array<ActionMeter*, 8> mac_meters_{};  // per dtype, created on first use
};

// The Vector, Scalar and GpSimd engines' statistics besides EngineStats.
struct ElementEngineStats {
  static constexpr StatKey elements{"elements", StatUnit::count, "elements processed"};
  static constexpr std::array all{elements};
};

// Vector, Scalar and GpSimd: an instruction on E elements with I inputs occupies the engine for
// fixed_overhead_cycles + ceil(E / elements_per_cycle) * max(1, I) cycles (NKI cost model:
// N cycles for one input, 2N for two), at the 16-bit or 32-bit rate.
class ElementEngine : public Engine {
 public:
  ElementEngine(const sc_core::sc_module_name& name, EngineId id,
                const config::ElementEngineParams& p, DmaSystem& dma, Sram& sbuf, Sram& psum,
                std::uint64_t& wakeups);
  double elements() const { return elements_.value; }

 protected:
  sc_core::sc_time execute(const Instr& in, const sc_core::sc_time& start,
                           const sc_core::sc_time& operands_ready) override;

 private:
  config::ElementEngineParams p_;
  Sram& sbuf_;
  Sram& psum_;
  Stat& elements_;
  Action action_;                 // vector_, scalar_ or gpsimd_elements, by the engine
  ActionMeter* meter_ = nullptr;  // created on first use
};

}  // namespace trnsim::model
