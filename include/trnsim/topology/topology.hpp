// SPDX-License-Identifier: MIT
// The validated rack topology: nodes, links and route tables, computed once before any SystemC
// module exists, then read-only.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "trnsim/params/chip.hpp"
#include "trnsim/params/topology.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {
class Provenance;
}

namespace trnsim::topo {

// Distinct id types so that a node index is never used as a link or chip index.
struct NodeId {
  std::uint32_t v = 0;
  auto operator<=>(const NodeId&) const = default;
};
struct LinkId {
  std::uint32_t v = 0;
  auto operator<=>(const LinkId&) const = default;
};
struct ChipId {
  std::uint32_t v = 0;
  auto operator<=>(const ChipId&) const = default;
};

struct Node {
  std::string name;
  NodeKind kind = NodeKind::chip;
  int ports = 0;  // radix; 0 = unlimited
  int lanes = 0;  // lane budget; 0 = unchecked
  Duration latency{};  // switch traversal / chip forwarding
  EnergyPerBit energy{};
  Power idle_power{};
  std::optional<ChipId> chip;  // set for chips: chips are numbered 0..N-1 in node order
  // Whether routes may pass through this node. Switches and NICs always forward; chips forward
  // when they come from the torus generator, or are explicit chips with a nonzero latency.
  bool forwards = false;
};

struct Link {
  NodeId a, b;
  int a_port = 0, b_port = 0;
  Bandwidth bandwidth{};  // per direction
  Duration latency{};
  int lanes = 0;
  EnergyPerBit energy{};
};

// Shortest-path routes (in hops) from every node to every chip. Where several next hops are
// equally short, all are kept (sorted by link id) for load spreading; next_hop() picks one of
// them deterministically from a flow id. Paths never pass through a node that does not forward
// (Node::forwards), except as their first node.
//
// A generated torus (every node a forwarding chip) keeps no per-pair table: the hops between two
// chips are the sum over dimensions of their ring (or, without wrap, line) distance, and the next
// hops are the links to neighbours one hop nearer, found when asked. That is what the table of a
// breadth-first search holds for such a graph, in memory that grows with the links rather than
// with chips squared (a 100 x 100 torus took 3 GB of tables).
using NextHops = boost::container::small_vector<LinkId, 8>;

class RouteTable {
 public:
  RouteTable() = default;
  std::size_t node_count() const { return nodes_; }
  std::size_t chip_count() const { return chips_; }
  // Links on the shortest route; -1 when `to` cannot be reached from `from` (only possible for
  // switches and NICs hanging off non-forwarding chips; every chip pair is checked to be routable).
  int hops(NodeId from, ChipId to) const;
  NextHops next_hops(NodeId at, ChipId to) const;
  // One of next_hops(at, to), chosen as alternatives[mix(flow, at) % n] with a fixed integer hash
  // so that a flow keeps its path across calls, runs and platforms. Throws InternalError when
  // there is no next hop (at is the destination, or it is unreachable).
  LinkId next_hop(NodeId at, ChipId to, std::uint64_t flow = 0) const;
  // The most hops on the shortest route between two chips (0 for one chip).
  int diameter() const { return diameter_; }
  // Whether routes are computed on demand (a torus) rather than looked up in a table.
  bool on_demand() const { return !torus_dims_.empty(); }
  // Bytes held: the tables, or the torus's own copy of its incidence.
  std::size_t bytes() const;

 private:
  friend class RouteBuilder;
  // Destination-major so that the table is filled one BFS (one destination chip) at a time.
  std::size_t idx(NodeId n, ChipId c) const { return std::size_t(c.v) * nodes_ + n.v; }
  int torus_hops(std::uint32_t from, std::uint32_t to) const;
  // A table's next hops from `at` to `to`; throws InternalError when the table has no entry.
  std::span<const LinkId> table_span(NodeId at, ChipId to) const;
  std::size_t nodes_ = 0, chips_ = 0;
  int diameter_ = 0;
  std::vector<int> dist_;
  std::vector<std::uint32_t> offset_;  // CSR layout of next hops: [offset_[i], offset_[i+1])
  std::vector<LinkId> next_;
  // On demand (torus): dimension sizes (first varies fastest), wrap, and per node its links and
  // their far ends in CSR layout.
  std::vector<std::uint32_t> torus_dims_;
  bool torus_wrap_ = false;
  std::vector<std::uint32_t> inc_offset_;
  std::vector<LinkId> inc_link_;
  std::vector<std::uint32_t> inc_other_;
};

// The generator a topology came from, with what summarize() needs to pick natural cuts.
enum class Generator { explicit_graph, torus, two_level, folded_clos };

class Topology {
 public:
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeId n) const { return nodes_.at(n.v); }
  const Link& link(LinkId l) const { return links_.at(l.v); }
  std::size_t chip_count() const { return chip_nodes_.size(); }
  NodeId chip_node(ChipId c) const { return chip_nodes_.at(c.v); }
  std::optional<NodeId> find(std::string_view name) const;
  // Links attached to a node, in port order.
  std::span<const LinkId> incident(NodeId n) const { return incident_.at(n.v); }
  NodeId other_end(LinkId l, NodeId from) const;
  const RouteTable& routes() const { return routes_; }
  // The links of the route from chip `from` to chip `to` for flow id `flow`.
  std::vector<LinkId> path(ChipId from, ChipId to, std::uint64_t flow = 0) const;

  Generator generator() const { return generator_; }
  // Chips of one first-tier group as the generator built it (a server of a two-level rack, a
  // leaf of a folded Clos, a plane of a torus): the local size of hierarchical collectives.
  // 0 for an explicit graph.
  int first_tier_chips() const { return first_tier_chips_; }
  // Torus dimensions (empty unless generator() is torus); chip index = x + X*(y + Y*z).
  const std::vector<int>& torus_dims() const { return torus_dims_; }
  // Whether the torus closes its rings (false: a mesh).
  bool torus_wrap() const { return torus_wrap_; }

 private:
  friend class TopologyBuilder;
  Generator generator_ = Generator::explicit_graph;
  int first_tier_chips_ = 0;
  std::vector<int> torus_dims_;
  bool torus_wrap_ = false;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<NodeId> chip_nodes_;
  std::vector<std::vector<LinkId>> incident_;
  RouteTable routes_;
};

// Where topology errors point: the provenance of the loaded config and the JSON pointer of the
// topology object ("/rack/topology").
// With it, the memory the route tables may take (config::memory_budget(); 0: the machine's share).
struct SpecOrigin {
  const config::Provenance* provenance = nullptr;
  std::string pointer = "/rack/topology";
  std::uint64_t memory_budget = 0;
};

// Expands a generator (or takes the explicit graph), validates it completely (unique ids, links
// whose endpoints exist, ports not used twice, radix and lane budgets respected, the graph
// connected) and computes the route tables. `chip` supplies chip link defaults (energy, lanes).
// Throws TopologyError naming the file, JSON pointer and node or link.
Topology build_topology(const TopologySpec& spec, const config::ChipParams* chip,
                        const SpecOrigin& origin);

struct TopologySummary {
  std::size_t chips = 0, switches = 0, nics = 0, links = 0;
  int diameter_hops = 0;          // links on the longest shortest chip-to-chip path
  int diameter_switch_hops = 0;   // switches on that kind of path (max over chip pairs)
  double mean_hops = 0;           // over ordered chip pairs
  // Per direction, the minimum over the balanced chip partitions tried of the max-flow min cut
  // between the halves (switches fall on either side). An upper bound on the true minimum
  // bisection; see docs/topology.md for the candidates.
  Bandwidth bisection{};
  int bisection_cuts_tried = 0;
  Bandwidth injection_min{}, injection_max{};  // per chip, per direction
};
TopologySummary summarize(const Topology& t);

// Graphviz text of the topology (written through Boost.Graph's write_graphviz).
std::string to_dot(const Topology& t);

}  // namespace trnsim::topo
