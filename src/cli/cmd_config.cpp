// SPDX-License-Identifier: MIT
// `trnsim config FILE`: the fully resolved configuration; `trnsim schema`: every field.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "presets.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::cli {

void register_config_commands(CLI::App& app, Registry& reg) {
  struct Opts {
    std::string file, out;
    std::vector<std::string> sets;
  };
  auto o = std::make_shared<Opts>();
  auto* cfg = app.add_subcommand("config", "print the fully resolved configuration as JSON");
  cfg->add_option("FILE", o->file, "preset or config file")->required();
  add_set_option(cfg, o->sets);
  auto* out_opt = cfg->add_option("--out", o->out, "write the JSON to this file instead of stdout");
  reg.add(cfg, Footprint::light, [o, out_opt]() {
    // Given but empty is an error, not stdout (docs/configuration.md §6).
    if (out_opt->count() > 0 && o->out.empty()) throw InputError("--out: an empty file name");
    const auto loaded = config::load_config(resolve_preset(o->file), o->sets);
    registry::Registry registry;
    registry::register_builtin_models(registry);
    registry::check(registry, loaded);  // the resolve step every simulation runs
    const std::string text = config::to_json(loaded.config).dump(2) + "\n";
    if (o->out.empty()) {
      fmt::print("{}", text);
    } else {
      write_file_atomic(o->out, text);
    }
    return 0;
  });

  auto* types = app.add_subcommand(
      "list-types", "list the registered model implementations of each role, with their "
                    "parameters, ports and statistics");
  auto types_json = std::make_shared<bool>(false);
  types->add_flag("--json", *types_json, "print one JSON array");
  reg.add(types, Footprint::light, [types_json]() {
    registry::Registry registry;
    registry::register_builtin_models(registry);
    nlohmann::json all = nlohmann::json::array();
    for (const auto& i : registry.all()) {
      nlohmann::json ports = nlohmann::json::array(), stats = nlohmann::json::array();
      for (const auto& p : i.ports) {
        ports.push_back({{"name", p.name}, {"interface", p.interface}, {"description", p.description}});
      }
      for (const auto& st : i.statistics) {
        stats.push_back({{"name", st.name}, {"unit", std::string(model::unit_symbol(st.unit))}, {"description", st.description}});
      }
      all.push_back({{"role", std::string(registry::role_name(i.role))}, {"name", i.name},
                     {"description", i.description}, {"block", i.block},
                     {"parameters", i.parameters}, {"ports", ports}, {"statistics", stats}});
    }
    if (*types_json) {
      fmt::print("{}\n", all.dump(2));
      return 0;
    }
    for (const auto& i : all) {
      fmt::print("{} {}\n    {}\n    block: {}\n    parameters:", i["role"].get<std::string>(),
                 i["name"].get<std::string>(), i["description"].get<std::string>(),
                 i["block"].get<std::string>());
      for (const auto& p : i["parameters"]) fmt::print(" {}", p.get<std::string>());
      fmt::print("\n    ports:\n");
      for (const auto& p : i["ports"]) {
        fmt::print("      {} ({}): {}\n", p["name"].get<std::string>(),
                   p["interface"].get<std::string>(), p["description"].get<std::string>());
      }
      fmt::print("    statistics:\n");
      for (const auto& st : i["statistics"]) {
        fmt::print("      {} [{}]: {}\n", st["name"].get<std::string>(),
                   st["unit"].get<std::string>(), st["description"].get<std::string>());
      }
    }
    return 0;
  });

  auto* schema = app.add_subcommand("schema", "list every config field: pointer, type, default");
  auto markdown = std::make_shared<bool>(false), json = std::make_shared<bool>(false);
  auto* md = schema->add_flag("--markdown", *markdown, "print a Markdown table");
  schema->add_flag("--json", *json,
                   "print them as JSON: [{pointer, type, default, description}], default null "
                   "where the field is required")
      ->excludes(md);
  reg.add(schema, Footprint::light, [markdown, json]() {
    const auto fields = config::schema_fields();
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& f : fields) {
        out.push_back({{"pointer", f.pointer}, {"type", f.type},
                       {"default", f.default_value.empty() ? nlohmann::json() : nlohmann::json(f.default_value)},
                       {"description", f.description}});
      }
      fmt::print("{}\n", out.dump(2));
    } else if (*markdown) {
      fmt::print("| pointer | type | default | description |\n|---|---|---|---|\n");
      for (const auto& f : fields) {
        fmt::print("| `{}` | {} | {} | {} |\n", f.pointer, f.type,
                   f.default_value.empty() ? "required" : "`" + f.default_value + "`",
                   f.description);
      }
    } else {
      for (const auto& f : fields) {
        fmt::print("{}  ({}{}{})\n    {}\n", f.pointer, f.type,
                   f.default_value.empty() ? "" : ", default ", f.default_value, f.description);
      }
    }
    return 0;
  });
}

}  // namespace trnsim::cli
