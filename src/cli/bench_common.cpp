// SPDX-License-Identifier: MIT
#include "bench_common.hpp"

#include <fmt/format.h>

#include "presets.hpp"
#include "trnsim/error.hpp"

namespace trnsim::cli {

void add_bench_options(CLI::App* sub, BenchOptions& o, const char* presets, bool seed) {
  sub->add_option("--config", o.source.path,
                  fmt::format("{}: a file or a name from `trnsim presets` (default {})", presets,
                              kDefaultRack))
      ->transform(CLI::Validator(
          [&o](std::string& v) -> std::string {
            o.config_given = v;
            try {
              v = resolve_preset(v);
            } catch (const InputError& e) {
              return e.what();
            }
            return {};
          },
          "PRESET|FILE"));
  add_set_option(sub, o.source.sets);
  // Plain flags for the two settings users change most; they apply after --set.
  sub->add_option_function<std::string>(
         "--fidelity", [&o](const std::string& v) { o.source.sets.push_back("sim.fidelity=" + v); },
         "fast (flow network, op-level compute) or detailed (packets, tiles); as --set "
         "sim.fidelity=... (default: fast for run, detailed for the benchmarks)")
      ->check(CLI::IsMember({"fast", "detailed"}))
      ->type_name("TIER");
  if (seed) {
    sub->add_option_function<std::uint64_t>(
         "--seed", [&o](const std::uint64_t& v) { o.source.sets.push_back(fmt::format("sim.seed={}", v)); },
         "seed of every random choice; as --set sim.seed=N (default 1)")
        ->type_name("N");
  }
  sub->add_flag("--json", o.json, "print one JSON object instead of a table");
}

void register_bench_commands(CLI::App& app, Registry& reg) {
  auto* bench = app.add_subcommand("bench", "microbenchmarks of the chip and fabric models");
  bench->require_subcommand(1);
  register_bench_chip(*bench, reg);
  register_bench_hbm(*bench, reg);
  register_bench_fabric(*bench, reg);
  register_bench_collective(*bench, reg);
  register_bench_kernel(*bench, reg);
  register_bench_iteration(*bench, reg);
}

}  // namespace trnsim::cli
