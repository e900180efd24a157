// SPDX-License-Identifier: MIT
// Generators and the explicit graph, expanded into one Draft that topology.cpp validates.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "draft.hpp"
#include "trnsim/config/schema.hpp"

namespace trnsim::topo {

namespace {

// Generous cap so that a typo such as dims [4, 4, 400000] fails fast instead of exhausting memory.
constexpr std::int64_t max_nodes = 1 << 20;

// Links are counted before they are made: parallel links (`count`) multiply them, and a graph of
// more than this many would take gigabytes before any check could see it.
constexpr std::int64_t max_links = 1 << 24;

void require_link_budget(const ErrorSink& err, const std::string& where, double links) {
  if (links > double(max_links)) {
    err.fail(where, fmt::format("expands into {:.4g} links; at most {} are supported", links,
                                max_links));
  }
}

void require_at_least(const ErrorSink& err, const std::string& where, int value, int min) {
  if (value < min) err.fail(where, fmt::format("expected an integer >= {}, got {}", min, value));
}

void require_node_budget(const ErrorSink& err, const std::string& where, std::int64_t nodes) {
  if (nodes > max_nodes) {
    err.fail(where, fmt::format("expands into {} nodes; at most {} are supported", nodes,
                                max_nodes));
  }
}

DraftNode make_chip(std::uint32_t index, const std::string& where, Duration forward_latency,
                    bool forwards) {
  DraftNode n;
  n.node.name = fmt::format("chip{}", index);
  n.node.kind = NodeKind::chip;
  n.node.latency = forward_latency;
  n.node.forwards = forwards;
  n.where = where;
  n.ports_where = where;
  n.lanes_where = where;
  n.latency_where = where;
  return n;
}

DraftNode make_switch(std::string name, const SwitchClass& sc, const std::string& where) {
  DraftNode n;
  n.node.name = std::move(name);
  n.node.kind = NodeKind::switch_;
  n.node.ports = sc.ports;
  n.node.lanes = sc.lanes;
  n.node.latency = sc.latency;
  n.node.energy = sc.energy.value_or(EnergyPerBit{});
  n.node.idle_power = sc.idle_power.value_or(Power{});
  n.node.forwards = true;
  n.where = where;
  n.ports_where = where + "/ports";
  n.lanes_where = where + "/lanes";
  n.latency_where = where + "/latency";
  return n;
}

// `count` parallel links of class `lc` between nodes a and b.
void add_links(Draft& d, std::uint32_t a, std::uint32_t b, const LinkClass& lc,
               const std::string& where, const config::ChipParams* chip) {
  for (int k = 0; k < lc.count; ++k) {
    DraftLink l;
    l.a = a;
    l.b = b;
    l.bandwidth = lc.bandwidth;
    l.latency = lc.latency;
    l.lanes = lc.lanes;
    l.energy = default_link_energy(lc.energy, chip);
    l.where = where;
    d.links.push_back(std::move(l));
  }
}

void check_link_class(const ErrorSink& err, const LinkClass& lc, const std::string& where) {
  require_at_least(err, where + "/count", lc.count, 1);
  require_at_least(err, where + "/lanes", lc.lanes, 0);
}

void check_switch_class(const ErrorSink& err, const SwitchClass& sc, const std::string& where) {
  require_at_least(err, where + "/ports", sc.ports, 1);
  require_at_least(err, where + "/lanes", sc.lanes, 0);
}

}  // namespace

Draft generate_torus(const TorusGen& g, const config::ChipParams* chip, const ErrorSink& err) {
  Draft d;
  d.generator = Generator::torus;
  if (!g.dims.empty()) d.first_tier_chips = g.dims.size() >= 2 ? g.dims[0] * g.dims[1] : g.dims[0];
  d.where = "/torus";
  if (g.dims.empty()) err.fail("/torus/dims", "expected at least one dimension, got none");
  std::int64_t n = 1;
  for (std::size_t i = 0; i < g.dims.size(); ++i) {
    require_at_least(err, fmt::format("/torus/dims/{}", i), g.dims[i], 1);
    n *= g.dims[i];
    require_node_budget(err, "/torus/dims", n);
  }
  if (g.dim_links.size() != g.dims.size()) {
    err.fail("/torus/dim_links",
             fmt::format("expected {} link classes (one per dimension), got {}", g.dims.size(),
                         g.dim_links.size()));
  }
  for (std::size_t i = 0; i < g.dim_links.size(); ++i) {
    check_link_class(err, g.dim_links[i], fmt::format("/torus/dim_links/{}", i));
  }
  d.torus_dims = g.dims;
  d.torus_wrap = g.wrap;
  double links = 0;
  for (const auto& lc : g.dim_links) links += double(n) * lc.count;
  require_link_budget(err, "/torus/dim_links", links);
  // Every node is a chip and routes are computed on demand: what grows is the graph.
  err.require_graph_memory("/torus/dims", double(n), links);

  const auto chips = static_cast<std::uint32_t>(n);
  for (std::uint32_t i = 0; i < chips; ++i) {
    d.nodes.push_back(make_chip(i, "/torus", g.forward_latency, true));
    d.nodes.back().latency_where = "/torus/forward_latency";
  }
  // The first dimension varies fastest: index = x + X*(y + Y*z).
  std::vector<std::uint32_t> stride(g.dims.size(), 1);
  for (std::size_t k = 1; k < g.dims.size(); ++k) {
    stride[k] = stride[k - 1] * static_cast<std::uint32_t>(g.dims[k - 1]);
  }
  for (std::uint32_t i = 0; i < chips; ++i) {
    for (std::size_t k = 0; k < g.dims.size(); ++k) {
      const auto size = static_cast<std::uint32_t>(g.dims[k]);
      const std::uint32_t c = (i / stride[k]) % size;
      std::uint32_t next = 0;
      if (c + 1 < size) {
        next = i + stride[k];
      } else if (g.wrap && size > 2) {
        // Closing the ring; for size 2 the +1 link already joins the pair, for size 1 there is
        // nothing to join.
        next = i - (size - 1) * stride[k];
      } else {
        continue;
      }
      add_links(d, i, next, g.dim_links[k], fmt::format("/torus/dim_links/{}", k), chip);
    }
  }
  return d;
}

Draft generate_two_level(const TwoLevelGen& g, const config::ChipParams* chip,
                         const ErrorSink& err) {
  Draft d;
  d.generator = Generator::two_level;
  d.first_tier_chips = g.chips_per_server;
  d.where = "/two_level";
  require_at_least(err, "/two_level/racks", g.racks, 1);
  require_at_least(err, "/two_level/servers", g.servers, 1);
  require_at_least(err, "/two_level/chips_per_server", g.chips_per_server, 1);
  require_at_least(err, "/two_level/l1_per_server", g.l1_per_server, 1);
  require_at_least(err, "/two_level/l2_per_rack", g.l2_per_rack, 0);
  if (g.servers % g.racks != 0) {
    err.fail("/two_level/servers",
             fmt::format("expected a multiple of racks ({}) so that servers split evenly into "
                         "racks, got {}",
                         g.racks, g.servers));
  }
  if (g.inter_rack && g.racks < 2) {
    err.fail("/two_level/inter_rack",
             fmt::format("inter_rack links join racks; expected racks >= 2, got {}", g.racks));
  }
  check_link_class(err, g.chip_to_l1, "/two_level/chip_to_l1");
  check_link_class(err, g.up_link, "/two_level/up_link");
  if (g.inter_rack) check_link_class(err, *g.inter_rack, "/two_level/inter_rack");
  check_switch_class(err, g.l1, "/two_level/l1");
  if (g.l2_per_rack > 0) check_switch_class(err, g.l2, "/two_level/l2");
  require_node_budget(err, "/two_level",
                      std::int64_t(g.servers) *
                              (std::int64_t(g.chips_per_server) + g.l1_per_server) +
                          std::int64_t(g.racks) * g.l2_per_rack);
  {
    const double chips = double(g.servers) * g.chips_per_server;
    const double up_from = g.inter_server == InterServerPath::via_l1
                               ? double(g.servers) * g.l1_per_server
                               : chips;
    require_link_budget(
        err, "/two_level",
        chips * g.l1_per_server * g.chip_to_l1.count + up_from * g.l2_per_rack * g.up_link.count +
            (g.inter_rack ? chips * g.inter_rack->count : 0.0));
  }

  const auto servers = static_cast<std::uint32_t>(g.servers);
  const auto cps = static_cast<std::uint32_t>(g.chips_per_server);
  const auto l1s = static_cast<std::uint32_t>(g.l1_per_server);
  const auto l2s = static_cast<std::uint32_t>(g.l2_per_rack);
  const auto racks = static_cast<std::uint32_t>(g.racks);
  const std::uint32_t per_rack = servers / racks;

  // Node order: chips (so chip ids run server by server), then L1 switches, then L2 switches.
  auto chip_at = [&](std::uint32_t s, std::uint32_t i) { return s * cps + i; };
  auto l1_at = [&](std::uint32_t s, std::uint32_t k) { return servers * cps + s * l1s + k; };
  auto l2_at = [&](std::uint32_t r, std::uint32_t k) {
    return servers * cps + servers * l1s + r * l2s + k;
  };
  // Chips relay only when inter-rack links exist: the racks share no switch, so traffic between
  // racks crosses the inter-rack link of the source or the destination and the chip at its
  // other end. Every chip of a server reaches every switch of the server directly, so no
  // shortest route uses a chip between two switch links (tested).
  const bool relay = g.inter_rack.has_value();
  for (std::uint32_t c = 0; c < servers * cps; ++c) {
    d.nodes.push_back(make_chip(c, "/two_level", relay ? g.relay_latency : Duration{}, relay));
    d.nodes.back().latency_where = "/two_level/relay_latency";
  }
  for (std::uint32_t s = 0; s < servers; ++s) {
    for (std::uint32_t k = 0; k < l1s; ++k) {
      d.nodes.push_back(make_switch(fmt::format("l1.s{}.{}", s, k), g.l1, "/two_level/l1"));
    }
  }
  for (std::uint32_t r = 0; r < racks; ++r) {
    for (std::uint32_t k = 0; k < l2s; ++k) {
      d.nodes.push_back(make_switch(fmt::format("l2.r{}.{}", r, k), g.l2, "/two_level/l2"));
    }
  }

  for (std::uint32_t s = 0; s < servers; ++s) {
    for (std::uint32_t i = 0; i < cps; ++i) {
      for (std::uint32_t k = 0; k < l1s; ++k) {
        add_links(d, chip_at(s, i), l1_at(s, k), g.chip_to_l1, "/two_level/chip_to_l1", chip);
      }
    }
  }
  for (std::uint32_t s = 0; s < servers; ++s) {
    const std::uint32_t r = s / per_rack;
    for (std::uint32_t j = 0; j < l2s; ++j) {
      if (g.inter_server == InterServerPath::via_l1) {
        for (std::uint32_t k = 0; k < l1s; ++k) {
          add_links(d, l1_at(s, k), l2_at(r, j), g.up_link, "/two_level/up_link", chip);
        }
      } else {
        for (std::uint32_t i = 0; i < cps; ++i) {
          add_links(d, chip_at(s, i), l2_at(r, j), g.up_link, "/two_level/up_link", chip);
        }
      }
    }
  }
  if (g.inter_rack) {
    // A ring over the racks at each (server position, chip position); with two racks the ring
    // is a single link.
    const std::uint32_t ring_links = racks == 2 ? 1 : racks;
    for (std::uint32_t r = 0; r < ring_links; ++r) {
      const std::uint32_t r2 = (r + 1) % racks;
      for (std::uint32_t p = 0; p < per_rack; ++p) {
        for (std::uint32_t i = 0; i < cps; ++i) {
          add_links(d, chip_at(r * per_rack + p, i), chip_at(r2 * per_rack + p, i),
                    *g.inter_rack, "/two_level/inter_rack", chip);
        }
      }
    }
  }
  return d;
}

Draft generate_folded_clos(const FoldedClosGen& g, const config::ChipParams* chip,
                           const ErrorSink& err) {
  Draft d;
  d.generator = Generator::folded_clos;
  d.first_tier_chips = g.chips_per_leaf;
  d.where = "/folded_clos";
  require_at_least(err, "/folded_clos/leaves", g.leaves, 1);
  require_at_least(err, "/folded_clos/chips_per_leaf", g.chips_per_leaf, 1);
  require_at_least(err, "/folded_clos/spines", g.spines, 1);
  check_link_class(err, g.chip_to_leaf, "/folded_clos/chip_to_leaf");
  check_link_class(err, g.leaf_to_spine, "/folded_clos/leaf_to_spine");
  check_switch_class(err, g.leaf, "/folded_clos/leaf");
  check_switch_class(err, g.spine, "/folded_clos/spine");
  require_node_budget(err, "/folded_clos",
                      std::int64_t(g.leaves) * (std::int64_t(g.chips_per_leaf) + 1) + g.spines);
  require_link_budget(err, "/folded_clos",
                      double(g.leaves) * g.chips_per_leaf * g.chip_to_leaf.count +
                          double(g.leaves) * g.spines * g.leaf_to_spine.count);

  const auto leaves = static_cast<std::uint32_t>(g.leaves);
  const auto cpl = static_cast<std::uint32_t>(g.chips_per_leaf);
  const auto spines = static_cast<std::uint32_t>(g.spines);
  for (std::uint32_t c = 0; c < leaves * cpl; ++c) {
    d.nodes.push_back(make_chip(c, "/folded_clos", Duration{}, false));
  }
  for (std::uint32_t l = 0; l < leaves; ++l) {
    d.nodes.push_back(make_switch(fmt::format("leaf{}", l), g.leaf, "/folded_clos/leaf"));
  }
  for (std::uint32_t s = 0; s < spines; ++s) {
    d.nodes.push_back(make_switch(fmt::format("spine{}", s), g.spine, "/folded_clos/spine"));
  }
  const std::uint32_t first_leaf = leaves * cpl;
  const std::uint32_t first_spine = first_leaf + leaves;
  for (std::uint32_t c = 0; c < leaves * cpl; ++c) {
    add_links(d, c, first_leaf + c / cpl, g.chip_to_leaf, "/folded_clos/chip_to_leaf", chip);
  }
  for (std::uint32_t l = 0; l < leaves; ++l) {
    for (std::uint32_t s = 0; s < spines; ++s) {
      add_links(d, first_leaf + l, first_spine + s, g.leaf_to_spine,
                "/folded_clos/leaf_to_spine", chip);
    }
  }
  return d;
}

Draft read_explicit(const TopologySpec& spec, const config::ChipParams* chip,
                    const ErrorSink& err) {
  Draft d;
  d.generator = Generator::explicit_graph;
  d.where = "";
  require_node_budget(err, "/nodes", std::int64_t(spec.nodes.size()));
  std::map<std::string, std::uint32_t, std::less<>> index;
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeSpec& ns = spec.nodes[i];
    const std::string where = fmt::format("/nodes/{}", i);
    const auto kind = enum_name(ns.kind);
    if (ns.id.empty()) err.fail(where + "/id", "expected a non-empty node id, got \"\"");
    if (auto it = index.find(ns.id); it != index.end()) {
      err.fail(where + "/id", fmt::format("duplicate node id \"{}\" (already used by /nodes/{}); "
                                          "expected ids to be unique",
                                          ns.id, it->second));
    }
    require_at_least(err, where + "/ports", ns.ports, 0);
    require_at_least(err, where + "/lanes", ns.lanes, 0);
    if (ns.kind != NodeKind::chip) {
      if (ns.ports < 1) {
        err.fail(where + "/ports",
                 fmt::format("{} \"{}\" needs a radix: expected ports >= 1 (0, unlimited, is "
                             "allowed for chips only), got {}",
                             kind, ns.id, ns.ports));
      }
    }
    if (ns.latency.si < 0) {
      err.fail(where + "/latency",
               fmt::format("node \"{}\": expected a latency >= 0, got {}", ns.id,
                           format(ns.latency)));
    }
    index.emplace(ns.id, static_cast<std::uint32_t>(i));
    ids.push_back(ns.id);

    DraftNode n;
    n.node.name = ns.id;
    n.node.kind = ns.kind;
    n.node.ports = ns.ports;
    n.node.lanes = ns.lanes;
    n.node.latency = ns.latency;
    n.node.energy = ns.energy.value_or(EnergyPerBit{});
    n.node.idle_power = ns.idle_power.value_or(Power{});
    // An explicit chip forwards only when it says how long forwarding takes.
    n.node.forwards = ns.kind != NodeKind::chip || ns.latency.si > 0;
    n.where = where;
    n.ports_where = where + "/ports";
    n.lanes_where = where + "/lanes";
    n.latency_where = where + "/latency";
    d.nodes.push_back(std::move(n));
  }

  auto resolve = [&](const std::string& id, const std::string& where, std::size_t link) {
    if (auto it = index.find(id); it != index.end()) return it->second;
    const auto near = config::nearest_key(id, ids);
    err.fail(where, fmt::format("link {} names unknown node \"{}\"; expected the id of a node in "
                                "nodes{}",
                                link, id,
                                near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
  };
  for (std::size_t i = 0; i < spec.links.size(); ++i) {
    const LinkSpec& ls = spec.links[i];
    const std::string where = fmt::format("/links/{}", i);
    DraftLink l;
    l.a = resolve(ls.a, where + "/a", i);
    l.b = resolve(ls.b, where + "/b", i);
    if (l.a == l.b) {
      err.fail(where + "/b", fmt::format("link {} connects node \"{}\" to itself; expected two "
                                         "different nodes",
                                         i, ls.a));
    }
    l.a_port = ls.a_port;
    l.b_port = ls.b_port;
    l.bandwidth = ls.bandwidth;
    l.latency = ls.latency;
    l.lanes = ls.lanes;
    l.energy = default_link_energy(ls.energy, chip);
    l.where = where;
    l.explicit_link = true;
    require_at_least(err, where + "/lanes", ls.lanes, 0);
    d.links.push_back(std::move(l));
  }
  return d;
}

Draft expand_spec(const TopologySpec& spec, const config::ChipParams* chip, const ErrorSink& err) {
  std::vector<std::string> sources;
  if (spec.torus) sources.emplace_back("torus");
  if (spec.two_level) sources.emplace_back("two_level");
  if (spec.folded_clos) sources.emplace_back("folded_clos");
  const bool has_explicit = !spec.nodes.empty() || !spec.links.empty();
  if (has_explicit) sources.emplace_back("explicit nodes/links");
  if (sources.size() != 1) {
    err.fail("", fmt::format("expected exactly one of the generators torus, two_level, "
                             "folded_clos, or explicit nodes and links; got {}",
                             sources.empty() ? std::string("none")
                                             : fmt::format("{}", fmt::join(sources, " and "))));
  }
  if (spec.torus) return generate_torus(*spec.torus, chip, err);
  if (spec.two_level) return generate_two_level(*spec.two_level, chip, err);
  if (spec.folded_clos) return generate_folded_clos(*spec.folded_clos, chip, err);
  return read_explicit(spec, chip, err);
}

}  // namespace trnsim::topo
