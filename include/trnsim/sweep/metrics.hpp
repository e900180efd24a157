// SPDX-License-Identifier: MIT
// The headline figures that sweeps and `trnsim compare` collect from each run, each a field of
// report.json (report/fields.hpp, the one place that knows its layout), and the files of a run
// directory: when report.json's file name changes, change kReportFile here.
#pragma once

#include <array>
#include <span>
#include <string_view>

#include "trnsim/report/fields.hpp"

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

// What a serving sweep's points keep of what `trnsim serve --out` writes (report.json,
// summary.csv, requests.csv, timeline.json).
inline constexpr std::array<std::string_view, 2> kServeRunFiles{"report.json", "summary.csv"};

struct Metric {
  std::string_view name;     // column name in sweep.csv and compare tables
  std::string_view pointer;  // JSON pointer into kReportFile
  std::string_view unit;
};

// The column `name` of the report field `key` (by default the field of the same name).
constexpr Metric metric(std::string_view name, std::string_view key = {}) {
  const report::Field& f = report::field(key.empty() ? name : key);
  return {name, f.pointer, f.unit};
}

inline constexpr std::array<Metric, 13> kMetrics{{
    metric("step_time_ns"),
    metric("flops_per_s"),
    metric("fraction_of_peak", "tensor_fraction_of_peak"),
    metric("exposed_communication_ns"),
    metric("hbm_bytes_per_s"),
    metric("hbm_fraction_of_peak"),
    metric("fabric_bytes", "fabric_bytes_delivered"),
    metric("message_latency_p99_ns"),
    metric("packet_latency_p99_ns"),
    metric("energy_j"),
    metric("average_power_w"),
    metric("peak_power_w"),
    metric("tflops_per_w"),
}};

// The figures of a serving run (`trnsim serve --out`, docs/serving.md#outputs): the points of a
// serving sweep, and `trnsim compare` of two serving runs. The throughput-interactivity curve is
// output_tokens_per_s_per_chip against tokens_per_s_per_user_p50.
inline constexpr std::array<Metric, 21> kServeMetrics{{
    metric("ttft_p50_s"),
    metric("ttft_p90_s"),
    metric("ttft_p99_s"),
    metric("tpot_p50_s"),
    metric("tpot_p90_s"),
    metric("tpot_p99_s"),
    metric("e2e_p50_s"),
    metric("e2e_p90_s"),
    metric("e2e_p99_s"),
    metric("queueing_p99_s"),
    metric("output_tokens_per_s"),
    metric("output_tokens_per_s_per_chip"),
    metric("tokens_per_s_per_user_p50"),
    metric("tokens_per_s_per_user_mean"),
    metric("goodput_fraction"),
    metric("goodput_requests_per_s"),
    metric("output_tokens_per_s_per_mw"),
    metric("joules_per_output_token"),
    metric("mean_power_w", "serve_mean_power_w"),
    metric("requests", "serve_requests"),
    metric("preemptions", "serve_preemptions"),
}};

// What a run directory's report.json holds: a training step (`trnsim run`) or a serving run.
enum class RunKind { run, serve };
inline constexpr std::string_view kind_name(RunKind k) { return k == RunKind::serve ? "serving" : "training"; }

// The metrics of a kind of run.
inline constexpr std::span<const Metric> metrics_of(RunKind k) {
  if (k == RunKind::serve) return kServeMetrics;
  return kMetrics;
}

}  // namespace trnsim::sweep
