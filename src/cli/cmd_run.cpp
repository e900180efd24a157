// SPDX-License-Identifier: MIT
// `trnsim run`: the main job. With no arguments it simulates the default rack (Trn3 Gen2
// UltraServer, 144 chips) on the bundled DeepSeek-V3-shaped MoE training step.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "bench_common.hpp"
#include "commands.hpp"
#include "trnsim/dtype.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"
#include "trnsim/report/report.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/trace/chakra.hpp"
#include "trnsim/trace/native.hpp"

namespace trnsim::cli {

namespace {

inline constexpr const char* kDefaultTrace = "traces/deepseek-v3-moe-144.json";

struct RunOpts {
  BenchOptions common;
  std::string trace, out, size_unit = "bytes", num_ops_unit = "flops", groups;
  std::string all_gather_size = "input", matmul_dtype;  // "": from the trace
  std::uint32_t element_bytes = 2;
};

trace::Workload load_trace(const RunOpts& o, bool trace_given, bool chakra_options_given) {
  if (trace_given && o.trace.empty()) throw TraceError("--trace: an empty file name");
  const std::string path = o.trace.empty() ? data_path(kDefaultTrace) : o.trace;
  namespace fs = std::filesystem;
  auto chakra = [&](const std::string& prefix) {
    trace::ChakraOptions c;
    c.size_unit = o.size_unit == "elements" ? trace::ChakraOptions::SizeUnit::elements
                                            : trace::ChakraOptions::SizeUnit::bytes;
    c.element_bytes = o.element_bytes;
    c.num_ops_unit = o.num_ops_unit == "macs" ? trace::ChakraOptions::NumOpsUnit::macs
                                              : trace::ChakraOptions::NumOpsUnit::flops;
    c.process_groups = o.groups;
    c.all_gather_size = o.all_gather_size == "output" ? trace::ChakraOptions::AllGatherSize::output
                                                      : trace::ChakraOptions::AllGatherSize::input;
    if (!o.matmul_dtype.empty()) {
      try {
        c.matmul_dtype = parse_dtype(o.matmul_dtype);
      } catch (const InputError& e) {
        throw InputError(fmt::format("--chakra-matmul-dtype: {}", e.what()));
      }
    }
    return trace::load_chakra(prefix, c);
  };
  if (fs::is_regular_file(path)) {
    // Chakra's JSON form names its files PREFIX.<rank>.json; the rank-0 file stands for the set.
    const std::string suffix = ".0.json";
    if (path.ends_with(suffix) && trace::is_chakra_json(path)) {
      return chakra(path.substr(0, path.size() - suffix.size()));
    }
    if (chakra_options_given) {
      logger("trace")->warn("--trace {} is a native trace: the --chakra-* and --process-groups options apply "
                "only to Chakra traces and are ignored",
                path);
    }
    return trace::load_native(path);
  }
  if (fs::exists(path + ".0.et") || fs::exists(path + ".0.json")) return chakra(path);
  throw TraceError(fmt::format(
      "--trace {}: no such trace: expected a native trace file (.json) or a Chakra prefix "
      "whose files are {}.<rank>.et (or .json in Chakra's JSON form)",
      path, path));
}

}  // namespace

void register_run_command(CLI::App& app, Registry& reg) {
  auto o = std::make_shared<RunOpts>();
  auto* run = app.add_subcommand(
      "run", "simulate a workload on a rack (default: Trn3 Gen2 UltraServer, bundled MoE step)");
  add_bench_options(run, o->common);
  auto* trace_opt = run->add_option("--trace", o->trace,
                  fmt::format("native trace (.json) or Chakra prefix (PREFIX.<rank>.et); "
                              "default {}",
                              kDefaultTrace));
  auto* out_opt = run->add_option("--out", o->out,
                  "write summary.json, config.json, stats.json, ops.csv and timeline.json here");
  std::vector<CLI::Option*> chakra_opts;
  chakra_opts.push_back(run->add_option("--chakra-size-unit", o->size_unit,
                  "Chakra comm_size/tensor_size unit: bytes or elements")
      ->check(CLI::IsMember({"bytes", "elements"})));
  chakra_opts.push_back(run->add_option("--chakra-element-bytes", o->element_bytes,
                                        "bytes per element when sizes count elements")
                            ->check(CLI::Range(1, 64)));
  chakra_opts.push_back(
      run->add_option("--chakra-num-ops", o->num_ops_unit, "what Chakra num_ops counts: flops or macs")
          ->check(CLI::IsMember({"flops", "macs"})));
  chakra_opts.push_back(
      run->add_option("--chakra-all-gather-size", o->all_gather_size,
                      "what an ALL_GATHER's comm_size is: input (each rank's, as ASTRA-sim) or "
                      "output (the gathered result)")
          ->check(CLI::IsMember({"input", "output"})));
  chakra_opts.push_back(run->add_option("--chakra-matmul-dtype", o->matmul_dtype,
                                        "dtype of Chakra matmuls (default: the node's dtype "
                                        "attribute, else bf16)"));
  chakra_opts.push_back(run->add_option("--process-groups", o->groups,
                                        "Chakra process-group file (default PREFIX.json when it "
                                        "exists)"));
  reg.add(run, [o, trace_opt, out_opt, chakra_opts]() {
    // Refuse what would be ignored or fail only after the simulation.
    if (out_opt->count() > 0) OutputDir::check_writable(o->out);
    const bool chakra_given = std::any_of(chakra_opts.begin(), chakra_opts.end(),
                                          [](const CLI::Option* c) { return c->count() > 0; });
    const auto cfg = o->common.load();
    const auto workload = load_trace(*o, trace_opt->count() > 0, chakra_given);
    const run::RunData out = run::run_workload(cfg, workload);
    const report::Report rep = report::make_report(out);
    if (out_opt->count() > 0) report::write_outputs(o->out, rep, cfg);
    if (o->common.json) {
      fmt::print("{}\n", rep.summary.dump(2));
    } else {
      fmt::print("{}", rep.text);
    }
    // Wall time and kernel activity vary between runs: stderr, never the report.
    std::vector<std::string> by_kind;
    for (const auto& [k, n] : out.activations_by_kind) by_kind.push_back(fmt::format("{} {}", k, n));
    fmt::print(stderr,
               "wall time {:.2f} s (simulation {:.2f} s), {} process activations ({:.3g} per "
               "second of simulation; {}), {} SystemC delta cycles\n",
               out.wall_seconds, out.simulation_seconds, out.activations,
               out.simulation_seconds > 0 ? double(out.activations) / out.simulation_seconds : 0.0,
               fmt::join(by_kind, ", "), out.delta_cycles);
    if (out.compute_model == "op") {
      fmt::print(stderr, "op-level compute: {} distinct ops simulated in {:.2f} s for {} ops\n",
                 out.compute_shapes_simulated, out.calibration_seconds, out.compute_ops);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
