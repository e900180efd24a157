// SPDX-License-Identifier: MIT
// `trnsim compare A B`: two run or sweep directories side by side (headline figures, their
// difference and ratio, the configuration keys that differ).
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "trnsim/sweep/compare.hpp"

namespace trnsim::cli {

void register_compare_command(CLI::App& app, Registry& reg) {
  struct Opts {
    std::string a, b;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmp = app.add_subcommand(
      "compare", "compare two run directories (trnsim run --out) or two sweep directories");
  cmp->add_option("A", o->a, "first directory")->required();
  cmp->add_option("B", o->b, "second directory")->required();
  cmp->add_flag("--json", o->json, "print one JSON object instead of tables");
  reg.add(cmp, Footprint::light, [o]() {
    const auto c = sweep::compare(o->a, o->b);
    if (o->json) {
      fmt::print("{}\n", c.dump(2));
    } else {
      fmt::print("{}", sweep::compare_text(c));
    }
    return 0;
  });
}

}  // namespace trnsim::cli
