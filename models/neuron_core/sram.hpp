// SPDX-License-Identifier: MIT
// SBUF and PSUM of one NeuronCore: enforced capacity and access energy.
// SBUF capacity is counted in bytes per partition (every tile spans the 128 partitions), PSUM
// capacity in banks (one accumulation group per bank). An op acquires its whole footprint when
// it starts and releases it when it ends; a footprint larger than the capacity is a WorkloadError
// naming the op, a footprint that only collides with a concurrent op waits for it.
#pragma once

#include <array>
#include <systemc>

#include <cstdint>
#include <string>

#include "common/block.hpp"
#include "trnsim/params/chip.hpp"

namespace trnsim::model {

// The statistics of SBUF or PSUM (peak_in_use in the unit the SRAM is allocated in).
struct SramStats {
  static constexpr StatKey bytes_read{"bytes_read", StatUnit::bytes, "bytes read"};
  static constexpr StatKey bytes_written{"bytes_written", StatUnit::bytes, "bytes written"};
  static constexpr StatKey peak_banks{"peak_in_use", StatUnit::banks,
                                      "largest footprint held at once"};
  static constexpr StatKey peak_bytes{"peak_in_use", StatUnit::bytes_per_partition,
                                      "largest footprint held at once"};
  static constexpr std::array all{bytes_read, bytes_written, peak_banks, peak_bytes};
};

class Sram : public Block {
 public:
  enum class Unit { bytes_per_partition, banks };
  Sram(const sc_core::sc_module_name& name, const config::SramParams& p, Unit unit);

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t in_use() const { return used_; }
  // Throws WorkloadError when `units` exceed the capacity (naming `op`); otherwise waits (from a
  // SystemC thread) until they are free and takes them.
  void acquire(std::uint64_t units, const std::string& op);
  void release(std::uint64_t units);
  // Throws WorkloadError naming `op` when `units` can never fit.
  void check_fits(std::uint64_t units, const std::string& op) const;

  void count_read(double bytes) {
    if (!read_meter_) read_meter_ = &meter(read_action_, per_byte(p_.read_energy));
    read_meter_->count(bytes);
    read_ += bytes;
  }
  void count_write(double bytes) {
    if (!write_meter_) write_meter_ = &meter(write_action_, per_byte(p_.write_energy));
    write_meter_->count(bytes);
    written_ += bytes;
  }

 private:
  config::SramParams p_;
  Unit unit_;
  std::uint64_t capacity_ = 0, used_ = 0;
  Action read_action_, write_action_;  // sbuf_* or psum_*, by the unit
  ActionMeter* read_meter_ = nullptr;  // created on first use
  ActionMeter* write_meter_ = nullptr;
  sc_core::sc_event freed_;
  Stat& read_;
  Stat& written_;
  Stat& peak_;
};

}  // namespace trnsim::model
