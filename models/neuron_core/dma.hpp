// SPDX-License-Identifier: MIT
// The DMA engines of one NeuronCore. A DMA instruction is split evenly over `engines` engines
// (each engine serves 8 of the 128 SBUF partitions); each engine share sits in one of the
// engine's queues, queues are served round-robin at packet boundaries (DMAO), and a share is
// moved packet by packet: a packet reserves the engine for packet_bytes / engine_bandwidth and
// the memory (HBM through the chip, or an external port) for its bytes. The instruction's
// semaphore is incremented when the last packet of the last share has arrived.
//
// Granularity: one simulation wake-up moves up to `outstanding_packets` packets (the engine's
// window of requests in flight). Their memory requests are issued at the wake-up time, i.e. up
// to one window early compared with a packet-by-packet model; engine occupancy and memory
// bandwidth are exact.
// Coarse granularity G > 1 (/sim/compute_granularity): one wake-up moves up to G windows. A
// packet whose window slot frees only later is issued at that (virtual) time: it books the
// memory at the wake-up and takes the memory's response time of the wake-up, shifted to its
// issue time. So per-packet engine occupancy, window and latency stay as in fine mode; memory
// bandwidth is booked up to G windows early (arbitration order changes, bytes do not).
// G is capped at kMaxWindowsPerWakeup, now 1 (DMA stays fine): the HBM serves bookings first
// come first served in call order, so engines booking windows ahead queue behind each other's
// future traffic. Measured with a cap of 4 (8192^3 mxfp8 +0.6 %, but 4096^3 +11 %, 29 M-element
// elementwise +8 %, softmax +23 %) and 16 (8192^3 +48 %); see docs/models/chip.md.
#pragma once

#include <systemc>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/block.hpp"
#include "common/fifo.hpp"
#include "common/memory.hpp"
#include "common/wake_calendar.hpp"
#include "neuron_core/program.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

class Sram;

// One DMA instruction in flight.
struct DmaTransfer {
  const Instr* instr = nullptr;
  int shares_left = 0;
  sc_core::sc_time last_done = sc_core::SC_ZERO_TIME;
};

struct DmaShare {
  DmaTransfer* xfer = nullptr;
  std::uint64_t addr = 0;  // of the next packet
  std::uint64_t left = 0;  // bytes not yet moved
  sc_core::sc_time ready;  // descriptors are available from this time
  // The latest completion of this share's packets so far, folded into its transfer's last_done
  // when the share ends: the transfer (another cache line) is touched once per share, not once
  // per packet. The maximum over the shares is the same.
  sc_core::sc_time last_done = sc_core::SC_ZERO_TIME;
  // Where the instruction reads and writes: a memory (HBM or an external port), else SBUF when
  // the flag says so. Copied from the instruction so that a packet's issue touches only the
  // engine's queue (the instruction was two dependent cache misses per packet in a rack run).
  MemoryPort* src_memory = nullptr;
  MemoryPort* dst_memory = nullptr;
  bool src_sbuf = false, dst_sbuf = false;
};

// A share is one cache line of its queue.
static_assert(sizeof(DmaShare) <= 64);

// The statistics of one DMA engine.
struct DmaEngineStats {
  static constexpr StatKey bytes{"bytes", StatUnit::bytes, "bytes moved"};
  static constexpr StatKey packets{"packets", StatUnit::count, "packets moved"};
  static constexpr std::array all{bytes, packets};
};

// One DMA engine: its queues, request window and timeline. It has no process of its own: the
// chip's WakeCalendar calls wake() at the engine's wake time.
class DmaEngine : public Block, public WakeClient {
 public:
  static constexpr int kMaxWindowsPerWakeup = 1;
  // When the engine next needs to run: at `at` (kNever: not until new work), and whether new
  // work may wake it earlier (it sleeps on new work) or not (it waits for a window slot).
  struct Wake {
    sc_core::sc_time at;
    bool on_work = true;
  };
  static const sc_core::sc_time kNever;

  // Registers with `calendar`, which runs the engine at its wake times.
  // A share names the memories it reads and writes (DmaShare::src_memory, dst_memory).
  DmaEngine(const sc_core::sc_module_name& name, const config::DmaParams& p, Sram& sbuf,
            std::uint64_t& wakeups, WakeCalendar& calendar, int granularity = 1);
  // Queues a share (waking the engine at its ready time if it sleeps on new work).
  void enqueue(int queue, const DmaShare& s);
  // The calendar's call: issues what the engine can now and files its next wake time.
  void wake() override;
  const Timeline& timeline() const { return tl_; }
  // Keeps the engine busy for `d` from now, or after the packets it has already booked: the rest
  // of an op timed from its profile (Chip::run_rest). Returns the end of the occupation.
  sc_core::sc_time occupy(const sc_core::sc_time& d) {
    return tl_.reserve(sc_core::sc_time_stamp(), d);
  }

 private:
  bool ready_work(const sc_core::sc_time& now, sc_core::sc_time& next_ready) const;
  Wake issue(const sc_core::sc_time& now);

  config::DmaParams p_;
  int granularity_ = 1;
  Sram& sbuf_;
  std::uint64_t& wakeups_;
  std::vector<Fifo<DmaShare>> queues_;
  // front_ready_[q]: `ready` of queues_[q].front(), kept beside nonempty_ so that an engine
  // checks its queues without touching them (two cache misses per wake-up in a rack run).
  std::array<sc_core::sc_time, 64> front_ready_{};
  std::uint64_t nonempty_ = 0;  // bit q set: queues_[q] holds a share (queues_per_engine <= 64)
  int rr_ = 0;
  Timeline tl_;
  // Completion times of the packets in flight: in the engine itself up to 16
  // packets (the default window is 8), else on the heap. A separate vector was a cache miss at
  // every wake-up in a rack run.
  class Window {
   public:
    explicit Window(std::size_t n) : n_(n) {
      if (n > kInline) heap_.assign(n, sc_core::SC_ZERO_TIME);
      data_ = n > kInline ? heap_.data() : inline_.data();
    }
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;
    sc_core::sc_time& operator[](std::size_t i) { return data_[i]; }
    std::size_t size() const { return n_; }

   private:
    static constexpr std::size_t kInline = 16;
    std::size_t n_;
    sc_core::sc_time* data_ = nullptr;
    std::array<sc_core::sc_time, kInline> inline_{};
    std::vector<sc_core::sc_time> heap_;
  };
  std::size_t window_pos_ = 0;
  Window window_;
  sc_core::sc_time resume_at_ = sc_core::SC_ZERO_TIME;  // earliest next issue after going idle
  Wake wake_{kNever, true};
  WakeCalendar& calendar_;
  int calendar_id_ = 0;
  Stat& bytes_;
  Stat& packets_;
  ActionMeter* meter_ = nullptr;  // of Action::dma, created on the first packet
};

// The statistics of a core's DMA system (its engines count their own).
struct DmaSystemStats {
  static constexpr StatKey instructions{"instructions", StatUnit::count,
                                        "DMA instructions triggered"};
  static constexpr StatKey dge_busy{"dge_busy", StatUnit::seconds,
                                    "descriptor generation time, both DGEs"};
  static constexpr std::array all{instructions, dge_busy};
};

// The DMA side of a core: the descriptor generation engines (DGE), the fixed start latency and
// the DMA engines. A DMA instruction triggered by an engine queue at `ready`:
//   DGE  : one of `kDges` units is occupied for descriptor_cost (its throughput limit);
//   start: max(DGE done, ready + start_latency) when the trigger waited on another engine's
//          semaphore (DMAG's ~1.3 us semaphore-to-start), else DGE done;
//   then each engine share is moved packet by packet (DmaEngine).
// Event granularity: the engines have no processes; a WakeCalendar (one per chip, shared by
// all its cores; common/wake_calendar.hpp) runs each engine at its wake time, engines due at the
// same time in a fixed order.
class DmaSystem : public Block {
 public:
  static constexpr int kDges = 2;  // hardware DGE per NeuronCore (NKI2)
  // `calendar`: shared by every DMA engine of the chip (null: the system makes its own).
  DmaSystem(const sc_core::sc_module_name& name, const config::DmaParams& p, MemoryPort& hbm,
            Sram& sbuf, std::uint64_t& wakeups, int granularity = 1,
            WakeCalendar* calendar = nullptr);
  ~DmaSystem() override;
  // Called by an engine queue at simulated time <= ready; returns when the trigger engine is
  // free again (it stalls while both DGEs are busy).
  sc_core::sc_time trigger(const Instr& in, const sc_core::sc_time& ready, bool waited);
  DmaEngine& engine(int i) { return *engines_[std::size_t(i)]; }
  int engines() const { return int(engines_.size()); }
  // Fixed costs of the last triggered instruction (for `trnsim bench dma`).
  struct Breakdown {
    sc_core::sc_time trigger, dge_start, dge_end, start;
  };
  const Breakdown& last() const { return last_; }

 private:
  config::DmaParams p_;
  MemoryPort& hbm_;  // the engines' memory
  std::unique_ptr<WakeCalendar> own_calendar_;
  std::vector<DmaEngine*> engines_;
  std::array<Timeline, kDges> dge_;
  Breakdown last_{};
  Stat& instructions_;
  Stat& dge_busy_;
};

}  // namespace trnsim::model
