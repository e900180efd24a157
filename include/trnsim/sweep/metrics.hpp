// SPDX-License-Identifier: MIT
// The headline figures that sweeps and `trnsim compare` collect from each run, and where they
// are read. This is the only place that knows the run report's layout: when the report changes
// (issue #13), change kReportFile and the pointers here.
#pragma once

#include <array>
#include <string_view>

namespace trnsim::sweep {

// The file of a run directory (`trnsim run --out DIR`) that holds the figures.
inline constexpr std::string_view kReportFile = "summary.json";
// The fully resolved config of a run directory (for the keys that differ in `trnsim compare`).
inline constexpr std::string_view kConfigFile = "config.json";

struct Metric {
  std::string_view name;     // column name in sweep.csv and compare tables
  std::string_view pointer;  // JSON pointer into kReportFile
  std::string_view unit;
};

inline constexpr std::array<Metric, 11> kMetrics{{
    {"step_time_ns", "/step_time_ns", "ns"},
    {"achieved_pflops", "/achieved_pflops", "PFLOPS"},
    {"fraction_of_peak", "/fraction_of_peak", "1"},
    {"hbm_bytes_per_s", "/hbm/bytes_per_s", "B/s"},
    {"hbm_fraction_of_peak", "/hbm/fraction_of_peak", "1"},
    {"fabric_bytes", "/fabric/bytes_delivered", "B"},
    {"packet_latency_p99_ns", "/fabric/packet_latency_ns/p99", "ns"},
    {"transfer_latency_p99_ns", "/fabric/transfer_latency_ns/p99", "ns"},
    {"energy_j", "/energy/total_j", "J"},
    {"average_power_w", "/energy/average_power_w", "W"},
    {"tflops_per_w", "/energy/tflops_per_w", "TFLOPS/W"},
}};

}  // namespace trnsim::sweep
