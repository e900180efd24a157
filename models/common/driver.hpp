// SPDX-License-Identifier: MIT
// A top-level module whose one thread runs `body`: how a benchmark or a calibration drives a
// block from outside the replay.
#pragma once

#include <systemc>

#include <functional>
#include <utility>

namespace trnsim::model {

struct Driver : sc_core::sc_module {
  SC_HAS_PROCESS(Driver);
  Driver(const sc_core::sc_module_name& n, std::function<void()> body)
      : sc_core::sc_module(n), body_(std::move(body)) {
    SC_THREAD(run);
  }
  void run() { body_(); }
  std::function<void()> body_;
};

}  // namespace trnsim::model
