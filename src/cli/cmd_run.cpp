// SPDX-License-Identifier: MIT
// `trnsim run`: reserved for the simulator, which later issues build. Until then it says so and
// fails; it does not pretend to simulate.
#include <fmt/format.h>

#include "commands.hpp"

namespace trnsim::cli {

void register_run_command(CLI::App& app, Registry& reg) {
  auto* run = app.add_subcommand("run", "simulate a workload on a rack (not implemented yet)");
  run->allow_extras();
  reg.add(run, []() {
    fmt::print(stderr,
               "trnsim: run: the simulator is not implemented yet (chip, fabric and replay "
               "models are still being built); nothing was simulated\n");
    return 1;
  });
}

}  // namespace trnsim::cli
