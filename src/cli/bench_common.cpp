// SPDX-License-Identifier: MIT
#include "bench_common.hpp"

#include <fmt/format.h>

#include "presets.hpp"
#include "trnsim/error.hpp"

namespace trnsim::cli {

void add_bench_options(CLI::App* sub, BenchOptions& o) {
  sub->add_option("--config", o.source.path,
                  fmt::format("chip or rack preset: a file or a name from `trnsim presets` "
                              "(default {})",
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
