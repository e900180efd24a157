// SPDX-License-Identifier: MIT
// The figures of a run that mean the same at every fidelity tier (docs/models/fidelity.md,
// "What each figure means at each tier"), each a field of report.json (fields.hpp): the one place
// that lists them. report.json's "figures" holds each with its value; `trnsim compare` of two
// runs sets them side by side, row by row, whatever tier each ran at. A figure that exists at one
// tier only (`only_at`) is null at the other, and every output says so instead of a number.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "trnsim/report/fields.hpp"

namespace trnsim::report {

struct Figure {
  std::string_view name;     // its row in `trnsim compare`
  std::string_view pointer;  // JSON pointer into report.json
  std::string_view unit;
  // "": every tier; "detailed": only the detailed tier has it (the packet network's packets and
  // credits), null elsewhere.
  std::string_view only_at = "";
};

// The figure of the field `key` (fields.hpp), at every tier or `only_at` one.
constexpr Figure figure(std::string_view key, std::string_view only_at = "") {
  const Field& f = field(key);
  return {f.key, f.pointer, f.unit, only_at};
}

inline constexpr std::array<Figure, 26> kFigures{{
    figure("step_time_ns"),
    figure("flops_per_s"),
    figure("tensor_fraction_of_peak"),
    figure("compute_ns"),
    figure("overlapped_ns"),
    figure("exposed_communication_ns"),
    figure("waiting_ns"),
    figure("waiting_for_peers_ns"),
    figure("hbm_bytes_per_s"),
    figure("fabric_messages"),
    figure("fabric_messages_simulated"),
    figure("fabric_bytes_delivered"),
    figure("message_latency_p50_ns"),
    figure("message_latency_p99_ns"),
    figure("message_latency_across_servers_p50_ns"),
    figure("packet_latency_p50_ns", "detailed"),
    figure("packet_latency_p99_ns", "detailed"),
    figure("link_mean_utilisation"),
    figure("link_hottest_utilisation"),
    figure("credit_stall_ns", "detailed"),
    figure("engine_busiest_utilisation"),
    figure("core_busiest_utilisation"),
    figure("energy_j"),
    figure("average_power_w"),
    figure("peak_power_w"),
    figure("tflops_per_w"),
}};

// What a one-tier figure says where it does not exist: "— (detailed tier only)".
inline std::string one_tier_text(std::string_view only_at) {
  return std::string("\u2014 (") + std::string(only_at) + " tier only)";
}

}  // namespace trnsim::report
