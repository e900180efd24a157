// SPDX-License-Identifier: MIT
// The memory system as DMA engines see it. Implemented by the HBM model (models/hbm) and the
// bandwidth model (models/chip/memory.hpp); a DMA engine never needs to know banks or channels.
#pragma once

#include <systemc>

#include <cstdint>
#include <memory>
#include <string>

#include "common/stat_key.hpp"

namespace trnsim::model {

// What every memory implementation counts (each describes it in its own words): the report reads
// a chip's memory traffic through these, whichever model it is.
struct MemoryStats {
  static constexpr StatKey bytes_read{"bytes_read", StatUnit::bytes, "bytes read"};
  static constexpr StatKey bytes_written{"bytes_written", StatUnit::bytes, "bytes written"};
};

struct MemRequest {
  std::uint64_t addr = 0;   // chip-physical byte address
  std::uint64_t bytes = 0;  // request size; callers split large transfers into chunks
  bool write = false;
};

class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  // Called from a SystemC process at now(): reserves the memory resources (channels, banks,
  // buses) the request needs, first come first served, and returns the time its last byte is
  // transferred (>= now()). It does not wait; the caller waits for the returned time.
  virtual sc_core::sc_time access(const MemRequest& r) = 0;
  // Counts what the model accounts lazily (refresh, background energy) up to `t`; call it with
  // the end of the run before collecting statistics and energy.
  virtual void account_until(const sc_core::sc_time& t) { (void)t; }
};

// A memory implementation as a chip owns it: the block (in the SystemC hierarchy, with its
// statistics) and its port, and how it describes itself in results.
struct MemoryBlock {
  std::unique_ptr<sc_core::sc_module> block;
  MemoryPort* port = nullptr;
  std::string description;
};

}  // namespace trnsim::model
