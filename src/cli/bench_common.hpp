// SPDX-License-Identifier: MIT
// Shared plumbing of the `trnsim bench ...` microbenchmarks: the common options, where default
// presets live, and running each measurement in a child process (SystemC allows one elaboration
// per process, so a sweep forks one child per point).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "trnsim/config/config.hpp"

namespace trnsim::cli {

// Directory holding configs/ and traces/: $TRNSIM_DATA_DIR, else the source tree trnsim was
// built from.
std::string data_dir();
// `name` relative to data_dir() ("configs/racks/trn3-gen2-ultraserver.json").
std::string data_path(const std::string& name);
// The default rack preset of every command that takes --config.
inline constexpr const char* kDefaultRack = "configs/racks/trn3-gen2-ultraserver.json";

struct BenchOptions {
  std::string config;  // empty: the default rack preset
  std::vector<std::string> sets;
  bool json = false;
  // Loads the config (chip or rack preset) and applies --set.
  config::LoadedConfig load() const;
  // The chip of the loaded config; ConfigError when it has none.
  static const config::ChipParams& chip_of(const config::LoadedConfig& c, const std::string& file);
};

// A byte count given to `option`: a plain integer ("268435456") or a size with a unit
// ("256MiB"); at least `min`. InputError naming the option otherwise.
std::uint64_t parse_size(const std::string& s, const char* option, std::uint64_t min = 1);

// Adds --config, --set and --json to a bench subcommand.
void add_bench_options(CLI::App* sub, BenchOptions& o);

// Runs `measure` in a forked child process and returns the JSON it produced. An InputError in
// the child is rethrown here with its message; any other failure becomes an InternalError.
nlohmann::json run_isolated(const std::function<nlohmann::json()>& measure);

// `trnsim bench`: the parent subcommand; each model family adds its benchmarks.
void register_bench_commands(CLI::App& app, Registry& reg);
void register_bench_chip(CLI::App& bench, Registry& reg);    // gemm, dma
void register_bench_hbm(CLI::App& bench, Registry& reg);     // hbm
void register_bench_fabric(CLI::App& bench, Registry& reg);  // ping, traffic
void register_bench_collective(CLI::App& bench, Registry& reg);  // collective (whole replay)
void register_bench_kernel(CLI::App& bench, Registry& reg);  // bare SystemC event loop

}  // namespace trnsim::cli
