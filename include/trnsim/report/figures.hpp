// SPDX-License-Identifier: MIT
// The figures of a run that mean the same at every fidelity tier (docs/models/fidelity.md,
// "What each figure means at each tier"), and where each is read in report.json: the one place
// that lists them. report.json's "figures" holds each with its value; `trnsim compare` of two
// runs sets them side by side, row by row, whatever tier each ran at. A figure that exists at one
// tier only (`only_at`) is null at the other, and every output says so instead of a number.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace trnsim::report {

struct Figure {
  std::string_view name;     // its row in `trnsim compare`
  std::string_view pointer;  // JSON pointer into report.json
  std::string_view unit;
  // "": every tier; "detailed": only the detailed tier has it (the packet network's packets and
  // credits), null elsewhere.
  std::string_view only_at = "";
};

inline constexpr std::array<Figure, 26> kFigures{{
    {"step_time_ns", "/performance/step_time_ns", "ns"},
    {"flops_per_s", "/performance/flops_per_s", "FLOPS"},
    {"tensor_fraction_of_peak", "/performance/tensor_fraction_of_peak", "1"},
    {"compute_ns", "/breakdown/machine/compute_ns", "ns"},
    {"overlapped_ns", "/breakdown/machine/overlapped_ns", "ns"},
    {"exposed_communication_ns", "/breakdown/machine/exposed_communication_ns", "ns"},
    {"waiting_ns", "/breakdown/machine/waiting_ns", "ns"},
    {"waiting_for_peers_ns", "/breakdown/machine/waiting_for_peers_ns", "ns"},
    {"hbm_bytes_per_s", "/memory/bytes_per_s", "B/s"},
    {"fabric_messages", "/fabric/messages", "count"},
    {"fabric_messages_simulated", "/fabric/messages_simulated", "count"},
    {"fabric_bytes_delivered", "/fabric/bytes_delivered", "B"},
    {"message_latency_p50_ns", "/fabric/tiers/all/message_latency_ns/p50", "ns"},
    {"message_latency_p99_ns", "/fabric/tiers/all/message_latency_ns/p99", "ns"},
    {"message_latency_across_servers_p50_ns",
     "/fabric/tiers/across_servers/message_latency_ns/p50", "ns"},
    {"packet_latency_p50_ns", "/fabric/tiers/all/packet_latency_ns/p50", "ns", "detailed"},
    {"packet_latency_p99_ns", "/fabric/tiers/all/packet_latency_ns/p99", "ns", "detailed"},
    {"link_mean_utilisation", "/fabric/links/mean_utilisation", "1"},
    {"link_hottest_utilisation", "/fabric/links/hottest/0/utilisation", "1"},
    {"credit_stall_ns", "/fabric/credit_stall_ns", "ns", "detailed"},
    {"engine_busiest_utilisation", "/busiest_engines/0/utilisation", "1"},
    {"core_busiest_utilisation", "/busiest_cores/0/utilisation", "1"},
    {"energy_j", "/energy/total_j", "J"},
    {"average_power_w", "/energy/average_power_w", "W"},
    {"peak_power_w", "/energy/peak_power_w", "W"},
    {"tflops_per_w", "/energy/tflops_per_w", "TFLOPS/W"},
}};

// What a one-tier figure says where it does not exist: "— (detailed tier only)".
inline std::string one_tier_text(std::string_view only_at) {
  return std::string("\u2014 (") + std::string(only_at) + " tier only)";
}

}  // namespace trnsim::report
