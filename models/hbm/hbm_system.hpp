// SPDX-License-Identifier: MIT
// The HBM of one chip as DMA engines see it: the stacks behind one MemoryPort, with the address
// interleaved across stacks, channels and pseudo-channels (map in HbmGeometry::decode and
// docs/models/hbm.md).
//
// access() splits a request into runs (its bursts inside each interleave unit), reserves each on
// its stack, and returns when the last data beat has crossed the bus plus controller_latency.
// Any size >= 1 byte is accepted: partial bursts round up to whole bursts. Addresses must lie in
// [0, capacity); a request that does not is an InputError (no wrap-around).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "common/block.hpp"
#include "common/memory.hpp"
#include "trnsim/resolve/hbm_geometry.hpp"
#include "hbm/hbm_stack.hpp"

namespace trnsim::model {

// The statistics of the HBM model (registry entry "hbm"; its stacks count their own).
struct HbmSystemStats {
  static constexpr StatKey requests{"requests", StatUnit::count, "requests served"};
  static constexpr StatKey bytes_read =
      MemoryStats::bytes_read.described("bytes requested by reads");
  static constexpr StatKey bytes_written =
      MemoryStats::bytes_written.described("bytes requested by writes");
  static constexpr StatKey achieved_bandwidth{"achieved_bandwidth", StatUnit::bytes_per_second,
    "requested bytes / (last completion - first arrival)"};
  static constexpr std::array all{requests, bytes_read, bytes_written, achieved_bandwidth};
};

class HbmSystem : public Block, public MemoryPort {
 public:
  // Built from the geometry the resolve step derived (ChipPlan::hbm): nothing is derived again.
  HbmSystem(const sc_core::sc_module_name& name, const HbmGeometry& geometry);

  sc_core::sc_time access(const MemRequest& r) override { return access_at(r, now()); }
  // access() for a request arriving at `arrival` instead of now(); arrivals must not decrease
  // from call to call. Lets tests drive the model without running the kernel.
  sc_core::sc_time access_at(const MemRequest& r, const sc_core::sc_time& arrival);

  // Counts refreshes up to `t` and passes all actions counted so far to the stacks' meters.
  // Call it with the end of the run before collect_stats()/collect_energy(); access() does so
  // itself every few calls, so without it only the tail of the run is missing.
  void account_until(const sc_core::sc_time& t) override;

  const HbmGeometry& geometry() const { return geo_; }
  int stacks() const { return int(stacks_.size()); }
  HbmStack& stack(int i) { return *stacks_[std::size_t(i)]; }
  Bandwidth peak() const { return Bandwidth(geo_.peak_bytes_per_s()); }
  // The latest completion returned so far (zero before the first access).
  const sc_core::sc_time& last_completion() const { return last_completion_; }
  // Clock <-> sc_time of the derived command clock.
  std::int64_t clock_at_or_after(const sc_core::sc_time& t) const;
  sc_core::sc_time time_of_clock(std::int64_t ck) const;

 private:
  HbmGeometry geo_;
  std::vector<std::unique_ptr<HbmStack>> stacks_;
  sc_core::sc_time controller_latency_;
  sc_core::sc_time first_arrival_ = sc_core::SC_ZERO_TIME, last_completion_ = sc_core::SC_ZERO_TIME;
  bool any_ = false;
  std::int64_t horizon_ck_ = 0;
  unsigned since_account_ = 0;
  Stat& s_requests_;
  Stat& s_bytes_read_;
  Stat& s_bytes_written_;
  Stat& s_bandwidth_;
};

}  // namespace trnsim::model
