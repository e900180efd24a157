// SPDX-License-Identifier: MIT
// `trnsim topo FILE`: summary figures of a rack topology; `--dot` writes Graphviz.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "commands.hpp"
#include "presets.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/topology/cluster.hpp"
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
  reg.add(sub, Footprint::light, [o]() {
    const auto loaded = config::load_config(resolve_preset(o->file), o->sets);
    if (!loaded.config.rack) {
      throw ConfigError(fmt::format("{}:/rack: missing: a topology needs a rack section "
                                    "(this looks like a chip preset)",
                                    o->file));
    }
    // The resolve step as `trnsim config` runs it: topo refuses what every command refuses.
    const auto topo = std::move(*resolve::plan(loaded, resolve::Purpose::config).topology);
    const auto s = topo::summarize(topo);
    if (!o->dot.empty()) write_file_atomic(o->dot, topo::to_dot(topo));
    // A cluster's scale-out network, by rule (docs/scaling.md): nothing per chip is built.
    std::optional<topo::ScaleOut> so;
    config::Json cj;
    if (const auto& cl = loaded.config.cluster) {
      so.emplace(cl->scale_out, cl->ultraservers, int(s.chips),
                 topo::SpecOrigin{&loaded.provenance, "/rack/topology", 0}, cl->failed_link);
      cj = {{"ultraservers", cl->ultraservers}, {"chips", so->nics()},
            {"diameter_hops", 2 * so->tiers()}, {"tiers", config::Json::array()}};
      for (int k = 1; k <= so->tiers(); ++k) {
        const auto& t = so->tier(k);
        cj["tiers"].push_back({{"name", cl->scale_out.tiers[std::size_t(k - 1)].name},
                               {"down_ports", t.down},
                               {"up_ports", t.up},
                               {"nics_per_group", t.span},
                               {"switches", t.switches},
                               {"up_share_per_nic_bytes_per_s", t.share_per_nic}});
      }
    }
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
      if (const auto& chip = loaded.config.chip) {
        // Memory of the rack (the capacity claims read it): stacks x capacity per stack.
        const double per_chip = double(chip->hbm.stacks) * chip->hbm.capacity_per_stack.si;
        j["hbm_bytes_per_chip"] = per_chip;
        j["hbm_bytes"] = per_chip * double(s.chips);
      }
      if (so) j["cluster"] = cj;
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
    if (so) {
      fmt::print("cluster              {} UltraServers, {} chips, one {} NIC each\n",
                 so->ultraservers(), so->nics(), format(so->params().nic_bandwidth));
      for (int k = 1; k <= so->tiers(); ++k) {
        const auto& t = so->tier(k);
        fmt::print("  tier {} {:<10}     {} switches, {} ports down{}\n", k,
                   so->params().tiers[std::size_t(k - 1)].name, t.switches, t.down,
                   k < so->tiers() ? fmt::format(", {} up ({} per NIC going up)", t.up,
                                                 format(Bandwidth(t.share_per_nic)))
                                   : std::string(" (top)"));
      }
      fmt::print("  diameter           {} links between UltraServers ({} switches)\n",
                 2 * so->tiers(), 2 * so->tiers() - 1);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
