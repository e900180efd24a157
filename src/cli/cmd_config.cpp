// SPDX-License-Identifier: MIT
// `trnsim config FILE`: the fully resolved configuration; `trnsim schema`: every field.
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "trnsim/build/registry.hpp"
#include "trnsim/config/config.hpp"
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
  cfg->add_option("--out", o->out, "write the JSON to this file instead of stdout");
  reg.add(cfg, [o]() {
    const auto loaded = config::load_config(o->file, o->sets);
    build::Registry registry;
    build::register_builtin_models(registry);
    build::check(registry, loaded);  // the resolve step every simulation runs
    const std::string text = config::to_json(loaded.config).dump(2) + "\n";
    if (o->out.empty()) {
      fmt::print("{}", text);
    } else {
      write_file_atomic(o->out, text);
    }
    return 0;
  });

  auto* schema = app.add_subcommand("schema", "list every config field: pointer, type, default");
  auto markdown = std::make_shared<bool>(false);
  schema->add_flag("--markdown", *markdown, "print a Markdown table");
  reg.add(schema, [markdown]() {
    const auto fields = config::schema_fields();
    if (*markdown) {
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
