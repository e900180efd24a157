// SPDX-License-Identifier: MIT
// `trnsim presets`: the rack and chip presets that --config accepts by name.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "presets.hpp"
#include "trnsim/bench/bench.hpp"

namespace trnsim::cli {

void register_presets_command(CLI::App& app, Registry& reg) {
  auto* sub = app.add_subcommand(
      "presets", "list the rack, cluster and chip presets --config accepts by name");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print them as JSON: [{name, kind, path, title}]");
  reg.add(sub, [json] {
    const auto all = list_presets();
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& p : all) {
        out.push_back({{"name", p.name}, {"kind", p.kind}, {"path", p.path}, {"title", p.title}});
      }
      fmt::print("{}\n", out.dump(2));
      return 0;
    }
    fmt::print("presets in {}/configs (give --config a name or a file):\n", bench::data_dir());
    std::size_t width = 0;
    for (const auto& p : all) width = std::max(width, p.name.size());
    for (const auto& p : all) {
      fmt::print("  {:<7}  {:<{}}  {}\n", p.kind, p.name, width, p.title);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
