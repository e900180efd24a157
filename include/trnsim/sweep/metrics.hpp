// SPDX-License-Identifier: MIT
// The headline figures that sweeps and `trnsim compare` collect from each run, and where they
// are read. This is the only place that knows the run report's layout (docs/report.md): when
// report.json changes, change kReportFile and the pointers here.
#pragma once

#include <array>
#include <string_view>

namespace trnsim::sweep {

// The file of a run directory (`trnsim run --out DIR`) that holds the figures.
inline constexpr std::string_view kReportFile = "report.json";
// The fully resolved config of a run directory (for the keys that differ in `trnsim compare`).
inline constexpr std::string_view kConfigFile = "config.json";
// What a run directory may hold (report::output_file_names()), and what a sweep's points keep
// unless the sweep file's "run_files" says otherwise: the figures, the config and the host's
// costs, not ops.csv and timeline.json (95 MB a point on the default workload) or stats.json.
inline constexpr std::array<std::string_view, 7> kRunFiles{
    "report.json", "summary.csv", "host.json", "config.json", "stats.json", "ops.csv", "timeline.json"};
inline constexpr std::array<std::string_view, 4> kDefaultRunFiles{"report.json", "summary.csv", "host.json",
                                                                  "config.json"};

struct Metric {
  std::string_view name;     // column name in sweep.csv and compare tables
  std::string_view pointer;  // JSON pointer into kReportFile
  std::string_view unit;
};

inline constexpr std::array<Metric, 13> kMetrics{{
    {"step_time_ns", "/performance/step_time_ns", "ns"},
    {"flops_per_s", "/performance/flops_per_s", "FLOPS"},
    {"fraction_of_peak", "/performance/tensor_fraction_of_peak", "1"},
    {"exposed_communication_ns", "/breakdown/machine/exposed_communication_ns", "ns"},
    {"hbm_bytes_per_s", "/memory/bytes_per_s", "B/s"},
    {"hbm_fraction_of_peak", "/memory/fraction_of_peak", "1"},
    {"fabric_bytes", "/fabric/bytes_delivered", "B"},
    {"message_latency_p99_ns", "/fabric/tiers/all/message_latency_ns/p99", "ns"},
    {"packet_latency_p99_ns", "/fabric/tiers/all/packet_latency_ns/p99", "ns"},
    {"energy_j", "/energy/total_j", "J"},
    {"average_power_w", "/energy/average_power_w", "W"},
    {"peak_power_w", "/energy/peak_power_w", "W"},
    {"tflops_per_w", "/energy/tflops_per_w", "TFLOPS/W"},
}};

}  // namespace trnsim::sweep
