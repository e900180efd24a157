// SPDX-License-Identifier: MIT
// One Trainium chip: `cores` NeuronCores on `dies` dies (cores split evenly, core i on die
// i / (cores / dies)), the HBM stacks (stacks / dies per die) behind a die crossing, and the
// lowering of trace-level ops to engine programs.
//
// For the replay engine: execute() runs one op from a SystemC thread and blocks until it is
// done; several threads may execute ops on the same chip at once, and they then contend for
// SBUF/PSUM, engines, DMA engines, HBM and the die crossing.
// For the fabric: dma() moves bytes between this chip's HBM and an external MemoryPort (a link's
// network interface) with the DMA engines of one core; see docs/models/chip.md.
#pragma once

#include <array>
#include <systemc>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chip/chip_model.hpp"
#include "chip/compute_op.hpp"
#include "chip/lowering.hpp"
#include "chip/memory.hpp"
#include "chip/op_profile.hpp"
#include "common/block.hpp"
#include "neuron_core/neuron_core.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

// The threads that run NeuronCore programs, shared by the tile chips of one simulation
// (/sim/core_workers; Chip::start_program). Each core may always have one; the rest of the limit
// goes, first come first served, to cores that run several programs at once. A chip adds its
// cores to `cores` when built: its owner refuses the simulation when they exceed `limit`.
struct CoreWorkerBudget {
  std::uint64_t limit = 0;  // 0: no bound
  std::uint64_t cores = 0;  // cores of the chips that share it
  std::uint64_t extra = 0;  // workers beyond the first of their core
  bool may_add_extra() const { return limit == 0 || cores + extra < limit; }
};

struct ChipOptions {
  // Builds the chip's memory as a child module of the given name: the registry's implementation
  // of the memory role chosen in the config (src/registry/registry.cpp).
  std::function<MemoryBlock(const char* name)> make_memory;
  // An HBM owned by someone else (tests); the chip then owns none and make_memory is not used.
  MemoryPort* memory = nullptr;
  // Event granularity of compute and DMA (/sim/compute_granularity): 1 = one matmul instruction
  // and one DMA window per step (fine); G > 1 groups up to G matmuls of a tile's contraction into
  // one instruction and lets a DMA engine move up to G windows per wake-up. docs/models/chip.md.
  int granularity = 1;
  // The op-level model's profiles (op_chip.hpp); the tile model uses them only to account
  // fast-forwarded ops (ChipModel::fast_forward) and to time the rest of headed ops.
  std::shared_ptr<const OpTable> calibration;
  // Fast-forward inside an op (/sim/fast_forward_op_head, with fast-forward on): < 1 simulates
  // only the head of each op (op_head()) and times the rest from `calibration`; 1 simulates every
  // tile.
  double op_head = 1;
  // The threads that run core programs, shared with the simulation's other chips; null: no bound.
  std::shared_ptr<CoreWorkerBudget> workers;
};

// The statistics of the tile model's chip (registry entry "tile").
struct ChipStats {
  static constexpr StatKey ops = ChipModelStats::ops;
  static constexpr StatKey ops_extrapolated{"ops_extrapolated", StatUnit::count,
    "ops of which only the head was simulated (fast-forward inside an op)"};
  static constexpr StatKey flops = ChipModelStats::flops;
  static constexpr StatKey hbm_bytes = ChipModelStats::hbm_bytes;
  static constexpr std::array all{ops, ops_extrapolated, flops, hbm_bytes};
};

class Chip : public ChipModel {
 public:
  Chip(const sc_core::sc_module_name& name, const config::ChipParams& p, ChipOptions opt = {});
  ~Chip() override;

  // From a SystemC thread: lowers `op`, runs it on the cores and blocks until its last store.
  OpStats execute(const ComputeOp& op, const std::string& name = "op") override;
  OpStats fast_forward(const ComputeOp& op, const ComputeOp& counterpart, const std::string& name,
                       const sc_core::sc_time& duration) override;

  // From a SystemC thread: one DMA of `bytes` between this chip's HBM at `hbm_addr` and
  // `external` (the fabric's port) using `engines` DMA engines of `core`; `to_external` picks
  // the direction. Blocks until the last byte is written; returns that time.
  sc_core::sc_time dma(int core, std::uint64_t hbm_addr, std::uint64_t bytes, MemoryPort& external,
                       bool to_external, int engines = 16);

  // From a SystemC thread: one DMA instruction between HBM and SBUF of `core`, triggered by
  // the Sync queue (`cross_engine`: the trigger waited on another engine's semaphore).
  // Returns the fixed-cost breakdown of the transfer (for `trnsim bench dma`).
  struct DmaResult {
    double trigger_s = 0, dge_start_s = 0, dge_end_s = 0, start_s = 0, end_s = 0;
  };
  DmaResult dma_sbuf(int core, std::uint64_t bytes, bool to_sbuf, int engines, bool cross_engine);

  const config::ChipParams& params() const override { return p_; }
  int cores() const override { return int(cores_.size()); }
  NeuronCore& core(int i) { return *cores_[std::size_t(i)]; }
  int die_of_core(int i) const;
  MemoryPort& memory() override { return *memory_; }
  // The memory block the chip owns (null for an external memory).
  sc_core::sc_module* memory_block() { return owned_memory_.get(); }
  // How the memory implementation describes itself ("HbmSystem", the bandwidth model, "external").
  const std::string& memory_model() const { return memory_model_; }
  // Simulation wake-ups of all the chip's threads so far.
  std::uint64_t wakeups() const;
  HbmAllocator& hbm_allocator() { return alloc_; }
  // Threads that run core programs, over all cores (never ended, so also the peak), the most on
  // one core, and the programs that waited for one (ChipOptions::workers).
  std::size_t workers() const;
  std::size_t most_workers_on_a_core() const;
  std::uint64_t programs_waited() const { return programs_waited_; }
  // Passes the HBM model's pending energy (refresh, ...) up to `t`; call before collecting energy.
  void account_until(const sc_core::sc_time& t) override;

 private:
  // Fast-forward inside an op (op_head()): `h` is the simulated head (of profile `ph`); the rest
  // of the op (profile `pr`) runs for the difference of the two calibrated times (run_rest), and
  // its energy is the difference of the profiles. Returns the whole op.
  OpStats extend_head(const OpProfile& pr, const OpProfile& ph, const OpStats& h);
  // The rest of a headed op, `duration` alone on `cores_used` cores: pieces that hold the used
  // cores' compute engines, occupy their DMA engines for the bytes and issue the HBM traffic,
  // each ending no earlier than those engines are free (chip.cpp).
  void run_rest(const OpProfile& rest, const sc_core::sc_time& duration, int cores_used);
  // Lowers `op` and runs it on the cores until its last store.
  OpStats run_lowered(const ComputeOp& op, const std::string& name);

  config::ChipParams p_;
  int granularity_ = 1;
  double op_head_ = 1;
  std::shared_ptr<const OpTable> table_;  // profiles for fast_forward(), may be null
  std::unique_ptr<sc_core::sc_module> owned_memory_;
  MemoryPort* memory_ = nullptr;
  std::string memory_model_;
  std::unique_ptr<DieCrossing> d2d_;
  // Orders the wake-ups of all the chip's DMA engines (they share HBM and die links), so that a
  // chip's timing does not depend on other chips in the simulation (wake_calendar.hpp).
  std::unique_ptr<WakeCalendar> dma_calendar_;
  std::vector<std::unique_ptr<DieMemoryPort>> die_ports_;
  std::vector<std::unique_ptr<NeuronCore>> cores_;
  HbmAllocator alloc_;
  // Threads that run core programs, kept for reuse: spawning one per core per op and freeing its
  // stack (munmap, a TLB flush) was a tenth of a rack run's time. A worker runs one program at a
  // time; a core has as many workers as it ever ran programs at once, as far as the budget
  // allows, beyond which programs wait for one of them in the order they were started (chip.cpp).
  struct Job {
    int left = 0;  // programs of the step still running
    sc_core::sc_event done;
  };
  struct Worker {
    NeuronCore* core = nullptr;
    Program* prog = nullptr;  // assigned program; null while idle
    Job* job = nullptr;
    sc_core::sc_event go;
  };
  struct Pending {
    Program* prog = nullptr;
    Job* job = nullptr;
  };
  struct CoreWorkers {
    std::vector<std::unique_ptr<Worker>> all;
    // Programs that found every worker busy: a queue in a vector taken from `next` (a deque's
    // destructor misleads AddressSanitizer after SystemC's stack switches, engine.cpp).
    std::vector<Pending> waiting;
    std::size_t next = 0;
  };
  void start_program(int core, Program& prog, Job& job);
  void worker_loop(Worker& w, CoreWorkers& pool);
  std::vector<CoreWorkers> workers_;  // per core
  std::shared_ptr<CoreWorkerBudget> budget_;  // may be null: no bound
  std::uint64_t programs_waited_ = 0;
  std::uint64_t own_wakeups_ = 0;
  Stat& ops_;
  Stat& heads_;
  Stat& flops_;
  Stat& hbm_bytes_;
};

}  // namespace trnsim::model
