// SPDX-License-Identifier: MIT
// Shared helpers of the chip tests: presets and a simple memory.
#pragma once

#include <systemc>

#include <functional>
#include <string>

#include "common/block.hpp"
#include "common/memory.hpp"
#include "trnsim/config/config.hpp"

namespace trnsim::test {

inline config::ChipParams chip_preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  return *config::load_config(std::string(TRNSIM_SOURCE_DIR) + "/configs/chips/" + name + ".json", sets)
              .config.chip;
}

// Fixed latency after a bandwidth Timeline: access done = reserve(now, bytes / bw) + latency.
class FixedMemory : public model::MemoryPort {
 public:
  FixedMemory(Duration latency, Bandwidth bw) : latency_(latency), bw_(bw) {}
  sc_core::sc_time access(const model::MemRequest& r) override {
    return tl_.reserve(sc_core::sc_time_stamp(),
                       model::to_sc(transfer_time(Bytes(double(r.bytes)), bw_))) +
           model::to_sc(latency_);
  }

 private:
  Duration latency_;
  Bandwidth bw_;
  model::Timeline tl_;
};

// Runs `body` in one SystemC thread and simulates until everything is done.
struct Runner : sc_core::sc_module {
  SC_HAS_PROCESS(Runner);
  Runner(const sc_core::sc_module_name& n, std::function<void()> body)
      : sc_core::sc_module(n), body_(std::move(body)) {
    SC_THREAD(run);
  }
  void run() { body_(); }
  std::function<void()> body_;
};

}  // namespace trnsim::test
