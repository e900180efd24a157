// SPDX-License-Identifier: MIT
// The command line of `trnsim bench ...`: the options every benchmark (and `trnsim run`) takes,
// and the registration of each family's subcommands. The benchmarks themselves are in
// trnsim/bench/ (src/bench/).
#pragma once

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "trnsim/bench/bench.hpp"
#include "trnsim/config/config.hpp"

namespace trnsim::cli {

using bench::data_path;
using bench::kDefaultRack;

struct BenchOptions {
  bench::ConfigSource source;  // --config (resolved to a file while parsing), --set
  std::string config_given;    // --config as typed (a preset name or a path)
  bool json = false;
  config::LoadedConfig load() const { return source.load(); }
  config::LoadedConfig load(std::optional<resolve::RackPlan>& rack) const { return source.load(rack); }
};

// Adds --config, --set, --fidelity, --seed (unless the command has a seed of its own) and --json
// to a bench subcommand (or run); `presets` says which presets --config takes.
void add_bench_options(CLI::App* sub, BenchOptions& o, const char* presets = "chip or rack preset",
                       bool seed = true);

// `trnsim bench`: the parent subcommand; each model family adds its benchmarks.
void register_bench_commands(CLI::App& app, Registry& reg);
void register_bench_chip(CLI::App& bench, Registry& reg);    // gemm, dma
void register_bench_hbm(CLI::App& bench, Registry& reg);     // hbm
void register_bench_fabric(CLI::App& bench, Registry& reg);  // ping, traffic
void register_bench_collective(CLI::App& bench, Registry& reg);  // collective (whole replay)
void register_bench_kernel(CLI::App& bench, Registry& reg);  // bare SystemC event loop
void register_bench_iteration(CLI::App& bench, Registry& reg);  // an inference iteration

}  // namespace trnsim::cli
