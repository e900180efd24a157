// SPDX-License-Identifier: MIT
// Each subcommand registers itself on the CLI11 app and returns the action to run once parsing
// succeeded. Actions throw trnsim errors; main() maps them to exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trnsim::cli {

using Action = std::function<int()>;

// What a command's process holds, which main() reads before running it. A command that
// elaborates models or forks children that do (hundreds of MB allocated) is re-executed once
// with malloc on huge pages (exec_with_huge_page_malloc, trnsim/isolate.hpp); a light one
// (config, topo, trace, compare, presets) starts and ends in milliseconds and is left as it is.
enum class Footprint : std::uint8_t { light, builds_models };

// Registers `sub` with its footprint and its action in `actions` (run when `sub` was given).
struct Registry {
  struct Entry {
    CLI::App* sub;
    Footprint footprint;
    Action action;
  };
  std::vector<Entry> actions;
  std::vector<std::string> argv;  // the command line, for the report's identity
  void add(CLI::App* sub, Footprint footprint, Action action) {
    actions.push_back({sub, footprint, std::move(action)});
  }
};

// Adds the repeatable `--set path=value` option.
CLI::Option* add_set_option(CLI::App* sub, std::vector<std::string>& sets);

void register_config_commands(CLI::App& app, Registry& reg);
void register_topo_command(CLI::App& app, Registry& reg);
void register_run_command(CLI::App& app, Registry& reg);
void register_sweep_command(CLI::App& app, Registry& reg);    // cmd_sweep.cpp
void register_compare_command(CLI::App& app, Registry& reg);  // cmd_compare.cpp
void register_presets_command(CLI::App& app, Registry& reg);  // cmd_presets.cpp
void register_trace_command(CLI::App& app, Registry& reg);    // cmd_trace.cpp
void register_claims_command(CLI::App& app, Registry& reg);   // cmd_claims.cpp
void register_solve_command(CLI::App& app, Registry& reg);    // cmd_solve.cpp
void register_serve_command(CLI::App& app, Registry& reg);    // cmd_serve.cpp

}  // namespace trnsim::cli
