// SPDX-License-Identifier: MIT
// `trnsim topo FILE`: summary figures of a rack topology; `--dot` writes Graphviz.
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::cli {

void register_topo_command(CLI::App& app, Registry& reg) {
  struct Opts {
    std::string file, dot;
    std::vector<std::string> sets;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand("topo", "validate a rack topology and print its figures");
  sub->add_option("FILE", o->file, "rack preset or config file")->required();
  add_set_option(sub, o->sets);
  sub->add_option("--dot", o->dot, "write the topology as Graphviz to this file");
  sub->add_flag("--json", o->json, "print the figures as one JSON object");
  reg.add(sub, [o]() {
    const auto loaded = config::load_config(o->file, o->sets);
    if (!loaded.config.rack) {
      throw ConfigError(fmt::format("{}:/rack: missing: a topology needs a rack section "
                                    "(this looks like a chip preset)",
                                    o->file));
    }
    const auto topo = topo::build_topology(loaded.config.rack->topology,
                                           loaded.config.chip ? &*loaded.config.chip : nullptr,
                                           {&loaded.provenance, "/rack/topology",
                                            config::memory_budget(loaded.config.sim)});
    const auto s = topo::summarize(topo);
    if (!o->dot.empty()) write_file_atomic(o->dot, topo::to_dot(topo));
    if (o->json) {
      config::Json j = {{"rack", loaded.config.rack->name},
                        {"chips", s.chips},
                        {"switches", s.switches},
                        {"nics", s.nics},
                        {"links", s.links},
                        {"diameter_hops", s.diameter_hops},
                        {"diameter_switch_hops", s.diameter_switch_hops},
                        {"mean_hops", s.mean_hops},
                        {"bisection_bytes_per_s", s.bisection.si},
                        {"bisection_cuts_tried", s.bisection_cuts_tried},
                        {"injection_min_bytes_per_s", s.injection_min.si},
                        {"injection_max_bytes_per_s", s.injection_max.si}};
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("rack                 {}\n", loaded.config.rack->name);
    fmt::print("chips                {}\n", s.chips);
    fmt::print("switches             {}\n", s.switches);
    if (s.nics) fmt::print("nics                 {}\n", s.nics);
    fmt::print("links                {}\n", s.links);
    fmt::print("diameter             {} hops ({} switches)\n", s.diameter_hops,
               s.diameter_switch_hops);
    fmt::print("mean distance        {:.3f} hops\n", s.mean_hops);
    fmt::print("bisection bandwidth  {} per direction (min over {} balanced cuts)\n",
               format(s.bisection), s.bisection_cuts_tried);
    if (s.injection_min == s.injection_max) {
      fmt::print("injection per chip   {} per direction\n", format(s.injection_min));
    } else {
      fmt::print("injection per chip   {} to {} per direction\n", format(s.injection_min),
                 format(s.injection_max));
    }
    return 0;
  });
}

}  // namespace trnsim::cli
