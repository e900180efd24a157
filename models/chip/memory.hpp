// SPDX-License-Identifier: MIT
// The chip's memory path as the cores see it: HBM stacks behind a die crossing.
#pragma once

#include <array>
#include <systemc>

#include <cstdint>
#include <vector>

#include "common/block.hpp"
#include "common/memory.hpp"
#include "trnsim/params/chip.hpp"
#include "trnsim/resolve/plan.hpp"

namespace trnsim::model {

// Stack holding `addr`: addresses interleave across stacks every interleave_bytes (the same
// field the HBM model uses for its address map).
int hbm_stack_of(const config::HbmParams& p, std::uint64_t addr);

// The bytes of [addr, addr + bytes) that each stack holds. Every memory access of a rack run
// comes here: no allocation, whole interleave rounds in one step, and shifts and masks instead of
// divisions where the interleave and the stack count are powers of two (every shipped chip), the
// same quotients either way.
class StackSplit {
 public:
  static constexpr std::size_t kMaxStacks = std::size_t(resolve::kMaxHbmStacks);
  using PerStack = std::array<std::uint64_t, kMaxStacks>;
  // InternalError beyond kMaxStacks stacks (the resolve step checks /chip/hbm/stacks).
  explicit StackSplit(const config::HbmParams& p);
  PerStack split(std::uint64_t addr, std::uint64_t bytes) const;

 private:
  std::uint64_t div_il(std::uint64_t x) const { return il_shift_ >= 0 ? x >> il_shift_ : x / il_; }
  std::uint64_t div_round(std::uint64_t x) const {
    return round_shift_ >= 0 ? x >> round_shift_ : x / round_;
  }
  std::size_t mod_n(std::uint64_t x) const {
    return std::size_t(n_mask_ != 0 || n_ == 1 ? x & n_mask_ : x % n_);
  }
  std::uint64_t il_ = 1, n_ = 1, round_ = 1, n_mask_ = 0;
  int il_shift_ = -1, round_shift_ = -1;  // >= 0 where a power of two
};

// The statistics of the bandwidth memory model (registry entry "bandwidth").
struct BandwidthMemoryStats {
  static constexpr StatKey bytes_read = MemoryStats::bytes_read;
  static constexpr StatKey bytes_written = MemoryStats::bytes_written;
  static constexpr std::array all{bytes_read, bytes_written};
};

// The "bandwidth" memory model (/chip/memory/model, /replay/chip_memory; the default of rack
// replays): each stack is one Timeline at bandwidth / stacks, and every
// access pays controller_latency + tRCD + tCL (reads) or + tCWL (writes). No banks, rows,
// refresh or bus turnaround; its energy is (read|write + phy + controller) per bit.
class BandwidthMemory : public Block, public MemoryPort {
 public:
  BandwidthMemory(const sc_core::sc_module_name& name, const config::HbmParams& p);
  sc_core::sc_time access(const MemRequest& r) override;
  // An access's energy is counted when it is reserved, though a stack may serve it later (a
  // flow transfer reserves all its bytes when it starts): less the share of each reservation
  // that lies after `t`.
  Energy dynamic_unmetered(const PowerModel& power, const sc_core::sc_time& t) const override;
  bool has_unmetered() const override { return true; }

 private:
  // A stack's reservation whose end may lie ahead: its span and what its bytes were counted at.
  struct Ahead {
    sc_core::sc_time start, end;
    bool write = false;
    double bytes = 0;
  };
  // The time a stack takes for `bytes`: a slice's few sizes recur on every access, so the
  // last few are kept (the same value as computing it).
  sc_core::sc_time stack_time(std::uint64_t bytes);
  config::HbmParams p_;
  StackSplit split_;
  std::vector<Timeline> stacks_;
  // In the order reserved; pruned from the front (ahead_front_) as time passes, and of every
  // ended entry (in order) once it holds ahead_compact_at_: an entry far ahead (a flow's memory
  // pass) kept thousands of ended ones behind it, which every power sample walked. Ended
  // entries add nothing to dynamic_unmetered() (called at now or later), so the sum is the same.
  // A vector, not a deque: a deque allocated and freed a block every few accesses.
  std::vector<Ahead> ahead_;
  std::size_t ahead_front_ = 0;
  std::size_t ahead_compact_at_ = 256;
  struct TimeMemo {
    std::uint64_t bytes = ~std::uint64_t(0);
    sc_core::sc_time time;
  };
  std::array<TimeMemo, 8> time_memo_{};
  Stat& read_;
  Stat& written_;
  Bandwidth stack_bw_;
  sc_core::sc_time read_latency_, write_latency_;
  EnergyPerBit read_energy_, write_energy_;
  ActionMeter* read_meter_ = nullptr;  // created on first use
  ActionMeter* write_meter_ = nullptr;
};

// The statistics of the die crossing.
struct DieCrossingStats {
  static constexpr StatKey bytes{"bytes", StatUnit::bytes, "bytes that crossed between dies"};
  static constexpr std::array all{bytes};
};

// The links between the dies: one Timeline per direction at die_to_die_bandwidth, plus
// die_to_die_latency and die_to_die_energy per bit for every byte that crosses.
class DieCrossing : public Block {
 public:
  DieCrossing(const sc_core::sc_module_name& name, const config::ChipParams& p);
  // Reserves the crossing from die `from` to die `to` for `bytes` at now(); returns the time the
  // last byte has arrived.
  sc_core::sc_time cross(int from, int to, std::uint64_t bytes);

 private:
  int dies_;
  Bandwidth bw_;
  Duration latency_;
  EnergyPerBit energy_;
  std::vector<Timeline> dir_;
  Stat& bytes_;
  sc_core::sc_time latency_sc_;
  ActionMeter* meter_ = nullptr;  // die_to_die, created on first use
};

// The memory as the cores of one die see it: bytes held by stacks of another die cross the
// die boundary (reads from the remote die, writes to it).
class DieMemoryPort : public MemoryPort {
 public:
  DieMemoryPort(int die, const config::ChipParams& p, MemoryPort& hbm, DieCrossing& d2d);
  sc_core::sc_time access(const MemRequest& r) override;

 private:
  int die_;
  const config::ChipParams& p_;
  StackSplit split_;
  MemoryPort& hbm_;
  DieCrossing& d2d_;
};

}  // namespace trnsim::model
