// SPDX-License-Identifier: MIT
// The columns of summary.csv (docs/report.md), each a field of report.json (fields.hpp): the one
// place that lists them, so the header and the row cannot drift apart. A figure that a run does
// not have (no packet latency at the flow tier, no tokens) is an empty field.
#pragma once

#include <array>
#include <string_view>

#include "trnsim/report/fields.hpp"

namespace trnsim::report {

struct SummaryColumn {
  std::string_view name;     // in the header
  std::string_view pointer;  // JSON pointer into report.json
};

// The column `name` of the field `key` (by default the field of the same name).
constexpr SummaryColumn summary_column(std::string_view name, std::string_view key = {}) {
  return {name, field(key.empty() ? name : key).pointer};
}

inline constexpr std::array<SummaryColumn, 24> kSummaryColumns{{
    summary_column("rack"),
    summary_column("chip"),
    summary_column("workload"),
    summary_column("ranks"),
    summary_column("chips_used"),
    summary_column("step_time_ns"),
    summary_column("flops_per_s"),
    summary_column("tensor_fraction_of_peak"),
    summary_column("tokens_per_s"),
    summary_column("compute_ns"),
    summary_column("overlapped_ns"),
    summary_column("exposed_communication_ns"),
    summary_column("waiting_ns"),
    summary_column("hbm_bytes_per_s"),
    summary_column("hbm_fraction_of_peak"),
    summary_column("fabric_bytes_delivered"),
    summary_column("message_latency_p99_ns"),
    summary_column("packet_latency_p99_ns"),
    summary_column("hottest_link_utilisation", "link_hottest_utilisation"),
    summary_column("energy_j"),
    summary_column("average_power_w"),
    summary_column("peak_power_w"),
    summary_column("flops_per_j"),
    summary_column("tokens_per_j"),
}};

}  // namespace trnsim::report
