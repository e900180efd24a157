// SPDX-License-Identifier: MIT
// build_topology(): pick the source of the graph, validate it completely, then compute routes.
#include "trnsim/topology/topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "draft.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::topo {

void ErrorSink::fail(std::string_view rel, std::string_view message) const {
  const std::string ptr = pointer(rel);
  if (origin_.provenance) throw TopologyError(config::located(*origin_.provenance, ptr, message));
  throw TopologyError(fmt::format("<topology>:{}: {}", ptr.empty() ? "/" : ptr, message));
}

void ErrorSink::require_memory(std::string_view rel, double bytes, std::string_view what,
                               std::string_view change) const {
  const std::uint64_t budget = origin_.memory_budget ? origin_.memory_budget : default_memory_budget();
  if (bytes > double(budget)) {
    fail(rel, fmt::format("{} need about {:.3g} GB, more than the memory budget of {:.3g} GB "
                          "(/sim/memory_budget); {}, or raise the budget with --set "
                          "sim.memory_budget=",
                          what, bytes / 1e9, double(budget) / 1e9, change));
  }
}

void ErrorSink::require_route_memory(std::string_view rel, double nodes, double chips) const {
  const double bytes = nodes * chips * double(sizeof(int) + sizeof(std::uint32_t) + sizeof(LinkId));
  require_memory(rel, bytes,
                 fmt::format("route tables for {:.0f} nodes and {:.0f} chips", nodes, chips),
                 "use fewer chips");
}

void ErrorSink::require_graph_memory(std::string_view rel, double nodes, double links) const {
  require_memory(rel, nodes * kGraphNodeBytes + links * kGraphLinkBytes,
                 fmt::format("{:.0f} nodes and {:.0f} links", nodes, links), "use smaller dims");
}

std::optional<NodeId> Topology::find(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) return NodeId{static_cast<std::uint32_t>(i)};
  }
  return std::nullopt;
}

NodeId Topology::other_end(LinkId l, NodeId from) const {
  const Link& k = link(l);
  if (k.a == from) return k.b;
  if (k.b == from) return k.a;
  throw InternalError(fmt::format("link {} does not touch node {}", l.v, from.v));
}

std::vector<LinkId> Topology::path(ChipId from, ChipId to, std::uint64_t flow) const {
  std::vector<LinkId> out;
  NodeId at = chip_node(from);
  const NodeId dst = chip_node(to);
  while (at != dst) {
    const LinkId l = routes_.next_hop(at, to, flow);
    out.push_back(l);
    at = other_end(l, at);
  }
  return out;
}

class TopologyBuilder {
 public:
  TopologyBuilder(const TopologySpec& spec, const config::ChipParams* chip,
                  const SpecOrigin& origin)
      : spec_(&spec), chip_(chip), err_(origin) {}
  // From a graph already expanded (a cluster of racks): checked and routed alike.
  TopologyBuilder(Draft draft, const config::ChipParams* chip, const SpecOrigin& origin)
      : chip_(chip), err_(origin), draft_(std::move(draft)), given_(true) {}

  Topology build() {
    if (!given_) draft_ = expand();
    // Before the graph is checked or assembled (that took 2 s and 935 MB for 1024 x 1024).
    const bool on_demand = routed_on_demand(draft_);
    if (!on_demand) {
      double chips = 0;
      for (const DraftNode& dn : draft_.nodes) chips += dn.node.kind == NodeKind::chip ? 1 : 0;
      err_.require_route_memory("", double(draft_.nodes.size()), chips);
    }
    check_nodes();
    check_links();
    assign_ports();
    check_lanes();
    check_chips_and_connectivity();
    Topology t = assemble();
    t.routes_ = RouteBuilder::build(t, on_demand);
    check_routable(t);
    return t;
  }

 private:
  Draft expand() const { return expand_spec(*spec_, chip_, err_); }

  std::string describe(const DraftLink& l, std::size_t i) const {
    return fmt::format("link {} ({} - {})", i, draft_.nodes[l.a].node.name,
                       draft_.nodes[l.b].node.name);
  }

  void check_nodes() const {
    for (const DraftNode& dn : draft_.nodes) {
      if (dn.node.kind != NodeKind::chip && !(dn.node.latency.si > 0)) {
        err_.fail(dn.latency_where,
                  fmt::format("{} \"{}\" needs a traversal latency: expected a duration > 0, got "
                              "{}",
                              enum_name(dn.node.kind), dn.node.name, format(dn.node.latency)));
      }
    }
  }

  void check_links() const {
    for (std::size_t i = 0; i < draft_.links.size(); ++i) {
      const DraftLink& l = draft_.links[i];
      if (!(l.bandwidth.si > 0)) {
        err_.fail(l.where + "/bandwidth",
                  fmt::format("{}: expected a bandwidth > 0, got {}", describe(l, i),
                              format(l.bandwidth)));
      }
      if (!(l.latency.si >= 0)) {
        err_.fail(l.where + "/latency", fmt::format("{}: expected a latency >= 0, got {}",
                                                    describe(l, i), format(l.latency)));
      }
    }
  }

  // Explicit ports first (in range, not taken twice), then the radix, then the remaining link ends
  // get the lowest free port so that explicit ports never collide with defaulted ones.
  void assign_ports() {
    const std::size_t n = draft_.nodes.size();
    std::vector<std::vector<std::int64_t>> owner(n);  // port -> link index, -1 when free
    std::vector<int> degree(n, 0);
    auto claim = [&](std::uint32_t node, int port, std::size_t link, const char* key) {
      const DraftNode& dn = draft_.nodes[node];
      const std::string where = fmt::format("{}/{}", draft_.links[link].where, key);
      if (port < 0) {
        err_.fail(where, fmt::format("expected a port >= 0 of node \"{}\", got {}", dn.node.name,
                                     port));
      }
      if (dn.node.ports > 0 && port >= dn.node.ports) {
        err_.fail(where, fmt::format("port {} of node \"{}\" does not exist; expected a port in "
                                     "0..{} (ports = {})",
                                     port, dn.node.name, dn.node.ports - 1, dn.node.ports));
      }
      auto& own = owner[node];
      if (std::size_t(port) >= own.size()) own.resize(std::size_t(port) + 1, -1);
      if (own[std::size_t(port)] >= 0) {
        err_.fail(where, fmt::format("port {} of node \"{}\" is already used by link {}; "
                                     "expected each port to carry one link",
                                     port, dn.node.name, own[std::size_t(port)]));
      }
      own[std::size_t(port)] = std::int64_t(link);
    };
    for (std::size_t i = 0; i < draft_.links.size(); ++i) {
      const DraftLink& l = draft_.links[i];
      ++degree[l.a];
      ++degree[l.b];
      if (l.a_port) claim(l.a, *l.a_port, i, "a_port");
      if (l.b_port) claim(l.b, *l.b_port, i, "b_port");
    }
    for (std::size_t v = 0; v < n; ++v) {
      const Node& node = draft_.nodes[v].node;
      if (node.ports > 0 && degree[v] > node.ports) {
        err_.fail(draft_.nodes[v].ports_where,
                  fmt::format("{} \"{}\" has {} links but a radix of {}", enum_name(node.kind),
                              node.name, degree[v], node.ports));
      }
    }
    std::vector<std::size_t> next_free(n, 0);
    auto take = [&](std::uint32_t node, std::size_t link) {
      auto& own = owner[node];
      std::size_t& p = next_free[node];
      while (p < own.size() && own[p] >= 0) ++p;
      if (p >= own.size()) own.resize(p + 1, -1);
      own[p] = std::int64_t(link);
      return static_cast<int>(p);
    };
    for (std::size_t i = 0; i < draft_.links.size(); ++i) {
      DraftLink& l = draft_.links[i];
      if (!l.a_port) l.a_port = take(l.a, i);
      if (!l.b_port) l.b_port = take(l.b, i);
    }
  }

  // A chip's budget is its own `lanes` when set, else the chip's SerDes lanes (chip.link.lanes).
  void check_lanes() const {
    std::vector<std::int64_t> used(draft_.nodes.size(), 0);
    for (const DraftLink& l : draft_.links) {
      used[l.a] += l.lanes;
      used[l.b] += l.lanes;
    }
    for (std::size_t v = 0; v < draft_.nodes.size(); ++v) {
      const DraftNode& dn = draft_.nodes[v];
      int budget = dn.node.lanes;
      std::string source = "lanes";
      std::string where = dn.lanes_where;
      if (budget == 0 && dn.node.kind == NodeKind::chip && chip_) {
        budget = chip_->link.lanes;
        source = "chip.link.lanes";
        where = dn.where;
      }
      if (budget > 0 && used[v] > budget) {
        err_.fail(where, fmt::format("{} \"{}\" needs {} lanes for its links but has a budget of "
                                     "{} ({})",
                                     enum_name(dn.node.kind), dn.node.name, used[v], budget,
                                     source));
      }
    }
  }

  void check_chips_and_connectivity() const {
    const bool any_chip = std::any_of(draft_.nodes.begin(), draft_.nodes.end(), [](const auto& d) {
      return d.node.kind == NodeKind::chip;
    });
    if (!any_chip) err_.fail(draft_.where, "expected at least one chip, got none");

    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
    Graph g(draft_.nodes.size());
    for (const DraftLink& l : draft_.links) boost::add_edge(l.a, l.b, g);
    std::vector<int> component(draft_.nodes.size());
    if (boost::connected_components(g, component.data()) > 1) {
      for (std::size_t v = 1; v < component.size(); ++v) {
        if (component[v] == component[0]) continue;
        err_.fail(draft_.nodes[v].where,
                  fmt::format("node \"{}\" is not connected to node \"{}\"; expected a connected "
                              "graph",
                              draft_.nodes[v].node.name, draft_.nodes[0].node.name));
      }
    }
  }

  Topology assemble() {
    Topology t;
    t.generator_ = draft_.generator;
    t.torus_dims_ = draft_.torus_dims;
    t.torus_wrap_ = draft_.torus_wrap;
    t.first_tier_chips_ = draft_.first_tier_chips;
    t.nodes_.reserve(draft_.nodes.size());
    for (DraftNode& dn : draft_.nodes) {
      if (dn.node.kind == NodeKind::chip) {
        dn.node.chip = ChipId{static_cast<std::uint32_t>(t.chip_nodes_.size())};
        t.chip_nodes_.push_back(NodeId{static_cast<std::uint32_t>(t.nodes_.size())});
      }
      t.nodes_.push_back(std::move(dn.node));
    }
    t.links_.reserve(draft_.links.size());
    t.incident_.assign(t.nodes_.size(), {});
    for (std::size_t i = 0; i < draft_.links.size(); ++i) {
      const DraftLink& dl = draft_.links[i];
      Link l;
      l.a = NodeId{dl.a};
      l.b = NodeId{dl.b};
      l.a_port = *dl.a_port;
      l.b_port = *dl.b_port;
      l.bandwidth = dl.bandwidth;
      l.latency = dl.latency;
      l.lanes = dl.lanes;
      l.energy = dl.energy;
      t.links_.push_back(l);
      t.incident_[dl.a].push_back(LinkId{static_cast<std::uint32_t>(i)});
      t.incident_[dl.b].push_back(LinkId{static_cast<std::uint32_t>(i)});
    }
    for (std::size_t v = 0; v < t.incident_.size(); ++v) {
      const NodeId node{static_cast<std::uint32_t>(v)};
      auto port_at = [&](LinkId l) {
        const Link& k = t.links_[l.v];
        return k.a == node ? k.a_port : k.b_port;
      };
      std::sort(t.incident_[v].begin(), t.incident_[v].end(),
                [&](LinkId x, LinkId y) { return port_at(x) < port_at(y); });
    }
    return t;
  }

  // Connected is not enough when chips do not forward: a chip reachable only through another
  // chip that does not forward has no route.
  void check_routable(const Topology& t) const {
    if (t.routes().on_demand()) return;  // a torus: every node forwards, and it is connected
    for (std::uint32_t s = 0; s < t.chip_count(); ++s) {
      for (std::uint32_t d = 0; d < t.chip_count(); ++d) {
        if (t.routes().hops(t.chip_node(ChipId{s}), ChipId{d}) >= 0) continue;
        err_.fail(draft_.where,
                  fmt::format("chip \"{}\" cannot reach chip \"{}\": every path passes through a "
                              "chip that does not forward (an explicit chip forwards when its "
                              "latency is > 0)",
                              t.node(t.chip_node(ChipId{s})).name,
                              t.node(t.chip_node(ChipId{d})).name));
      }
    }
  }

  const TopologySpec* spec_ = nullptr;
  const config::ChipParams* chip_;
  ErrorSink err_;
  Draft draft_;
  bool given_ = false;
};

Topology build_topology(const TopologySpec& spec, const config::ChipParams* chip,
                        const SpecOrigin& origin) {
  return TopologyBuilder(spec, chip, origin).build();
}

Topology build_from_draft(Draft draft, const config::ChipParams* chip, const SpecOrigin& origin) {
  return TopologyBuilder(std::move(draft), chip, origin).build();
}

}  // namespace trnsim::topo
