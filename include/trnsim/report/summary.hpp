// SPDX-License-Identifier: MIT
// The columns of summary.csv (docs/report.md) and where each is read in report.json: the one
// place that knows them, so the header and the row cannot drift apart. A figure that a run does
// not have (no packet latency at the flow tier, no tokens) is an empty field.
#pragma once

#include <array>
#include <string_view>

namespace trnsim::report {

struct SummaryColumn {
  std::string_view name;     // in the header
  std::string_view pointer;  // JSON pointer into report.json
};

inline constexpr std::array<SummaryColumn, 24> kSummaryColumns{{
    {"rack", "/machine/rack"},
    {"chip", "/machine/chip"},
    {"workload", "/workload/name"},
    {"ranks", "/workload/ranks"},
    {"chips_used", "/machine/chips_used"},
    {"step_time_ns", "/performance/step_time_ns"},
    {"flops_per_s", "/performance/flops_per_s"},
    {"tensor_fraction_of_peak", "/performance/tensor_fraction_of_peak"},
    {"tokens_per_s", "/performance/tokens_per_s"},
    {"compute_ns", "/breakdown/machine/compute_ns"},
    {"overlapped_ns", "/breakdown/machine/overlapped_ns"},
    {"exposed_communication_ns", "/breakdown/machine/exposed_communication_ns"},
    {"waiting_ns", "/breakdown/machine/waiting_ns"},
    {"hbm_bytes_per_s", "/memory/bytes_per_s"},
    {"hbm_fraction_of_peak", "/memory/fraction_of_peak"},
    {"fabric_bytes_delivered", "/fabric/bytes_delivered"},
    {"message_latency_p99_ns", "/fabric/tiers/all/message_latency_ns/p99"},
    {"packet_latency_p99_ns", "/fabric/tiers/all/packet_latency_ns/p99"},
    {"hottest_link_utilisation", "/fabric/links/hottest/0/utilisation"},
    {"energy_j", "/energy/total_j"},
    {"average_power_w", "/energy/average_power_w"},
    {"peak_power_w", "/energy/peak_power_w"},
    {"flops_per_j", "/energy/flops_per_j"},
    {"tokens_per_j", "/energy/tokens_per_j"},
}};

}  // namespace trnsim::report
