// SPDX-License-Identifier: MIT
// The headline values of report.json (docs/report.md): each with its JSON pointer and unit, listed
// once. summary.csv's columns (summary.hpp), the figures compared across tiers (figures.hpp) and the
// metrics of sweeps and `trnsim compare` (sweep/metrics.hpp) name fields here by key, so that
// report.json's layout is known in this file only: when a value moves, change its pointer here.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string_view>

namespace trnsim::report {

struct Field {
  std::string_view key;
  std::string_view pointer;  // JSON pointer into report.json
  std::string_view unit;     // "" for text
};

inline constexpr std::array<Field, 56> kFields{{
    {"rack", "/machine/rack", ""},
    {"chip", "/machine/chip", ""},
    {"workload", "/workload/name", ""},
    {"ranks", "/workload/ranks", "count"},
    {"chips_used", "/machine/chips_used", "count"},
    {"step_time_ns", "/performance/step_time_ns", "ns"},
    {"flops_per_s", "/performance/flops_per_s", "FLOPS"},
    {"tensor_fraction_of_peak", "/performance/tensor_fraction_of_peak", "1"},
    {"tokens_per_s", "/performance/tokens_per_s", "tokens/s"},
    {"compute_ns", "/breakdown/machine/compute_ns", "ns"},
    {"overlapped_ns", "/breakdown/machine/overlapped_ns", "ns"},
    {"exposed_communication_ns", "/breakdown/machine/exposed_communication_ns", "ns"},
    {"waiting_ns", "/breakdown/machine/waiting_ns", "ns"},
    {"waiting_for_peers_ns", "/breakdown/machine/waiting_for_peers_ns", "ns"},
    {"hbm_bytes_per_s", "/memory/bytes_per_s", "B/s"},
    {"hbm_fraction_of_peak", "/memory/fraction_of_peak", "1"},
    {"fabric_messages", "/fabric/messages", "count"},
    {"fabric_messages_simulated", "/fabric/messages_simulated", "count"},
    {"fabric_bytes_delivered", "/fabric/bytes_delivered", "B"},
    {"message_latency_p50_ns", "/fabric/tiers/all/message_latency_ns/p50", "ns"},
    {"message_latency_p99_ns", "/fabric/tiers/all/message_latency_ns/p99", "ns"},
    {"message_latency_across_servers_p50_ns",
     "/fabric/tiers/across_servers/message_latency_ns/p50", "ns"},
    {"packet_latency_p50_ns", "/fabric/tiers/all/packet_latency_ns/p50", "ns"},
    {"packet_latency_p99_ns", "/fabric/tiers/all/packet_latency_ns/p99", "ns"},
    {"link_mean_utilisation", "/fabric/links/mean_utilisation", "1"},
    {"link_hottest_utilisation", "/fabric/links/hottest/0/utilisation", "1"},
    {"credit_stall_ns", "/fabric/credit_stall_ns", "ns"},
    {"engine_busiest_utilisation", "/busiest_engines/0/utilisation", "1"},
    {"core_busiest_utilisation", "/busiest_cores/0/utilisation", "1"},
    {"energy_j", "/energy/total_j", "J"},
    {"average_power_w", "/energy/average_power_w", "W"},
    {"peak_power_w", "/energy/peak_power_w", "W"},
    {"flops_per_j", "/energy/flops_per_j", "FLOP/J"},
    {"tokens_per_j", "/energy/tokens_per_j", "tokens/J"},
    {"tflops_per_w", "/energy/tflops_per_w", "TFLOPS/W"},
    // report.json of `trnsim serve` (docs/serving.md#outputs): the figures are under /results.
    {"serve_requests", "/results/requests/measured", "count"},
    {"serve_preemptions", "/results/requests/preemptions", "count"},
    {"ttft_p50_s", "/results/ttft_s/p50", "s"},
    {"ttft_p90_s", "/results/ttft_s/p90", "s"},
    {"ttft_p99_s", "/results/ttft_s/p99", "s"},
    {"tpot_p50_s", "/results/tpot_s/p50", "s"},
    {"tpot_p90_s", "/results/tpot_s/p90", "s"},
    {"tpot_p99_s", "/results/tpot_s/p99", "s"},
    {"e2e_p50_s", "/results/e2e_s/p50", "s"},
    {"e2e_p90_s", "/results/e2e_s/p90", "s"},
    {"e2e_p99_s", "/results/e2e_s/p99", "s"},
    {"queueing_p99_s", "/results/queueing_s/p99", "s"},
    {"output_tokens_per_s", "/results/throughput/output_tokens_per_s", "tokens/s"},
    {"output_tokens_per_s_per_chip", "/results/throughput/output_tokens_per_s_per_chip", "tokens/s"},
    {"tokens_per_s_per_user_p50", "/results/throughput/tokens_per_s_per_user/p50", "tokens/s"},
    {"tokens_per_s_per_user_mean", "/results/throughput/tokens_per_s_per_user/mean", "tokens/s"},
    {"goodput_fraction", "/results/goodput/fraction", "1"},
    {"goodput_requests_per_s", "/results/goodput/requests_per_s", "requests/s"},
    {"joules_per_output_token", "/results/energy/joules_per_output_token", "J"},
    {"output_tokens_per_s_per_mw", "/results/energy/output_tokens_per_s_per_mw", "tokens/s/MW"},
    {"serve_mean_power_w", "/results/energy/mean_power_w", "W"},
}};

// No two fields share a key or a pointer.
constexpr bool fields_distinct() {
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    for (std::size_t j = i + 1; j < kFields.size(); ++j) {
      if (kFields[i].key == kFields[j].key || kFields[i].pointer == kFields[j].pointer) return false;
    }
  }
  return true;
}
static_assert(fields_distinct(), "two report fields share a key or a pointer");

// The field with key `key`. Used in constant expressions, where an unknown key does not compile.
constexpr const Field& field(std::string_view key) {
  for (const Field& f : kFields) {
    if (f.key == key) return f;
  }
  throw std::logic_error("no report field with this key");
}

}  // namespace trnsim::report
