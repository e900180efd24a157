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
      "presets", "list the rack, cluster and chip presets --config accepts by name, and the "
                 "bundled traces --trace does");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print them as JSON: [{name, kind, path, title, description}]");
  reg.add(sub, Footprint::light, [json] {
    const auto all = list_presets();
    const auto traces = list_traces();
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto* list : {&all, &traces}) {
        for (const auto& p : *list) {
          out.push_back({{"name", p.name}, {"kind", p.kind}, {"path", p.path}, {"title", p.title},
                         {"description", p.description}});
        }
      }
      fmt::print("{}\n", out.dump(2));
      return 0;
    }
    std::size_t width = 0;
    for (const auto* list : {&all, &traces}) {
      for (const auto& p : *list) width = std::max(width, p.name.size());
    }
    // The first sentence of the description, cut to a line.
    const auto line = [](const std::string& d) {
      std::string first = d.substr(0, std::min(d.find(". "), d.size()));
      if (first.size() > 100) first = first.substr(0, 97) + "...";
      return first;
    };
    fmt::print("presets in {}/configs (give --config a name or a file):\n", bench::data_dir());
    for (const auto& p : all) fmt::print("  {:<7}  {:<{}}  {}\n", p.kind, p.name, width, line(p.description));
    fmt::print("bundled traces in {}/traces (give --trace a name or a file):\n", bench::data_dir());
    for (const auto& p : traces) fmt::print("  {:<7}  {:<{}}  {}\n", p.kind, p.name, width, p.path);
    return 0;
  });
}

}  // namespace trnsim::cli
