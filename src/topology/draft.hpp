// SPDX-License-Identifier: MIT
// Internal to trnsim_topology: the graph as generated or read, before validation, with the JSON
// pointer each value came from so that every check can name the key to fix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trnsim/topology/topology.hpp"

namespace trnsim::topo {

using config::enum_name;

// Bytes per node and per link of a generated graph while it is checked and routed (see
// require_graph_memory).
inline constexpr double kGraphNodeBytes = 600;
inline constexpr double kGraphLinkBytes = 300;

// Throws TopologyError "<file>:<pointer>: <message>".
class ErrorSink {
 public:
  explicit ErrorSink(const SpecOrigin& origin) : origin_(origin) {}
  // `rel` is relative to the topology object ("/links/3/b"); "" is the object itself.
  std::string pointer(std::string_view rel) const { return origin_.pointer + std::string(rel); }
  [[noreturn]] void fail(std::string_view rel, std::string_view message) const;
  // Route tables hold, per node and destination chip, a distance, an offset and at least one
  // next hop (4 B each): a 32x32x32 torus needs 12.9 GB. Fails at `rel` when `nodes` x `chips`
  // of them exceed /sim/memory_budget; generators call it with their counts before expanding.
  void require_route_memory(std::string_view rel, double nodes, double chips) const;
  // A torus keeps no per-pair table; what grows is the graph: per node and per link what the
  // draft, the checked topology and the routes' incidence hold (kGraphNodeBytes, kGraphLinkBytes,
  // measured on `trnsim topo` of tori). Fails at `rel` when they exceed /sim/memory_budget.
  void require_graph_memory(std::string_view rel, double nodes, double links) const;

 private:
  // Fails at `rel` when `bytes` exceed /sim/memory_budget: "<what> need about …; <change>, or
  // raise the budget".
  void require_memory(std::string_view rel, double bytes, std::string_view what,
                      std::string_view change) const;

  const SpecOrigin& origin_;
};

struct DraftNode {
  Node node;
  std::string where;          // the node's own pointer (relative), for messages about it
  std::string ports_where;    // where its radix was set
  std::string lanes_where;    // where its lane budget was set
  std::string latency_where;  // where its latency was set
};

struct DraftLink {
  std::uint32_t a = 0, b = 0;  // node indices
  std::optional<int> a_port, b_port;
  Bandwidth bandwidth{};
  Duration latency{};
  int lanes = 0;
  EnergyPerBit energy{};
  std::string where;  // the link's pointer (explicit) or its generator link class
  bool explicit_link = false;  // written in "links": its a, b and ports have their own pointers
};

struct Draft {
  Generator generator = Generator::explicit_graph;
  std::vector<int> torus_dims;
  bool torus_wrap = false;
  int first_tier_chips = 0;  // chips of one first-tier group (server, leaf, torus plane); 0: none
  std::vector<DraftNode> nodes;  // chips are numbered in this order
  std::vector<DraftLink> links;
  std::string where;  // generator pointer (relative), e.g. "/torus"
};

// The one generator `spec` names (or its explicit graph), checked and expanded.
Draft expand_spec(const TopologySpec& spec, const config::ChipParams* chip, const ErrorSink& err);

// Each generator checks its own parameters and expands into nodes and links.
Draft generate_torus(const TorusGen& g, const config::ChipParams* chip, const ErrorSink& err);
Draft generate_two_level(const TwoLevelGen& g, const config::ChipParams* chip,
                         const ErrorSink& err);
Draft generate_folded_clos(const FoldedClosGen& g, const config::ChipParams* chip,
                           const ErrorSink& err);
Draft read_explicit(const TopologySpec& spec, const config::ChipParams* chip,
                    const ErrorSink& err);

// Checks `draft` as build_topology() checks an expanded spec, and routes it.
Topology build_from_draft(Draft draft, const config::ChipParams* chip, const SpecOrigin& origin);

// Fills the route tables of `t` (nodes, links and incidence already set).
// Whether `d`'s routes follow from coordinates (RouteTable::on_demand): a generated torus whose
// every node is a forwarding chip, so that chip i is node i. Such a graph needs no per-pair table,
// and so no route-table memory check (its generator checked the graph's memory).
inline bool routed_on_demand(const Draft& d) {
  return d.generator == Generator::torus && !d.torus_dims.empty() &&
         std::all_of(d.nodes.begin(), d.nodes.end(), [](const DraftNode& dn) {
           return dn.node.kind == NodeKind::chip && dn.node.forwards;
         });
}

class RouteBuilder {
 public:
  // `on_demand`: routed_on_demand() of the draft `t` was assembled from.
  static RouteTable build(const Topology& t, bool on_demand);
};

// Link energy default: the chip's link energy, else 0.
inline EnergyPerBit default_link_energy(const std::optional<EnergyPerBit>& given,
                                        const config::ChipParams* chip) {
  if (given) return *given;
  return chip ? chip->link.energy : EnergyPerBit{};
}

}  // namespace trnsim::topo
