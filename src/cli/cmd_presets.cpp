// SPDX-License-Identifier: MIT
// `trnsim presets`: the rack and chip presets that --config accepts by name.
#include <fmt/format.h>

#include "commands.hpp"
#include "presets.hpp"
#include "trnsim/bench/bench.hpp"

namespace trnsim::cli {

void register_presets_command(CLI::App& app, Registry& reg) {
  auto* sub = app.add_subcommand("presets", "list the rack and chip presets --config accepts by name");
  reg.add(sub, [] {
    const auto all = list_presets();
    fmt::print("presets in {}/configs (give --config a name or a file):\n", bench::data_dir());
    std::size_t width = 0;
    for (const auto& p : all) width = std::max(width, p.name.size());
    for (const auto& p : all) {
      fmt::print("  {:<4}  {:<{}}  {}\n", p.kind, p.name, width, p.title);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
