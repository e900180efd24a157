// SPDX-License-Identifier: MIT
// Shared helpers of the chip tests: presets and a simple memory.
#pragma once

#include <fmt/format.h>

#include <systemc>

#include <functional>
#include <memory>
#include <string>

#include "chip/chip.hpp"
#include "common/block.hpp"
#include "common/driver.hpp"
#include "common/memory.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/resolve/resolve.hpp"

namespace trnsim::test {

inline config::ChipParams chip_preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  // Formatted, not concatenated: GCC 12's -Warray-bounds misreads the inlined concatenation of
  // the literals for some lengths of TRNSIM_SOURCE_DIR (a false positive, fatal with -Werror).
  const std::string file = fmt::format("{}/configs/chips/{}.json", TRNSIM_SOURCE_DIR, name);
  return *config::load_config(file, sets).config.chip;
}

// Chip options whose memory is the registry's `model` ("hbm" or "bandwidth"), as racks and
// benchmarks build it.
inline model::ChipOptions chip_options(const config::ChipParams& p, const std::string& model = "hbm",
                                       int granularity = 1) {
  static const registry::Registry registry = [] {
    registry::Registry r;
    registry::register_builtin_models(r);
    return r;
  }();
  const auto& impl = registry.get(registry::Role::memory, model, "/chip/memory/model");
  auto plan = std::make_shared<resolve::ChipPlan>(resolve::plan_chip(p, granularity));
  model::ChipOptions o;
  o.granularity = granularity;
  o.make_memory = [&impl, plan](const char* name) { return impl.memory(name, *plan); };
  return o;
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

// Runs `body` in one SystemC thread.
using Runner = model::Driver;

}  // namespace trnsim::test
