// SPDX-License-Identifier: MIT
// Route tables: one breadth-first search per destination chip over the links, never leaving a
// node that does not forward (other than the destination itself, where the search starts).
#include <fmt/format.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/visitors.hpp>
#include <cstdint>
#include <limits>
#include <vector>

#include "draft.hpp"
#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"

namespace trnsim::topo {

namespace {

constexpr std::uint64_t mix64(std::uint64_t x) { return splitmix64(x); }

// Both directions of every link as arcs, so that the search can be restricted by the node an arc
// leaves from.
using Arcs = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// Keeps the arcs that leave the BFS root or a forwarding node: a route may start at a chip that
// does not forward but never passes through one.
struct MayLeave {
  const Arcs* g = nullptr;
  const std::vector<char>* forwards = nullptr;
  std::size_t root = 0;
  bool operator()(Arcs::edge_descriptor e) const {
    const auto u = boost::source(e, *g);
    return u == root || (*forwards)[u];
  }
};

}  // namespace

std::span<const LinkId> RouteTable::next_hops(NodeId at, ChipId to) const {
  const std::size_t i = idx(at, to);
  if (i + 1 >= offset_.size()) {
    throw InternalError(fmt::format("no route entry for node {} to chip {}", at.v, to.v));
  }
  return {next_.data() + offset_[i], next_.data() + offset_[i + 1]};
}

LinkId RouteTable::next_hop(NodeId at, ChipId to, std::uint64_t flow) const {
  const auto alternatives = next_hops(at, to);
  if (alternatives.empty()) {
    throw InternalError(fmt::format("no next hop from node {} to chip {}", at.v, to.v));
  }
  return alternatives[mix64(flow ^ mix64(at.v)) % alternatives.size()];
}

RouteTable RouteBuilder::build(const Topology& t) {
  const std::size_t n = t.nodes().size();
  const std::size_t chips = t.chip_count();
  RouteTable rt;
  rt.nodes_ = n;
  rt.chips_ = chips;
  rt.dist_.assign(n * chips, -1);
  rt.offset_.reserve(n * chips + 1);
  rt.offset_.push_back(0);

  Arcs arcs(n);
  for (const Link& l : t.links()) {
    boost::add_edge(l.a.v, l.b.v, arcs);
    boost::add_edge(l.b.v, l.a.v, arcs);
  }
  std::vector<char> forwards(n);
  for (std::size_t v = 0; v < n; ++v) forwards[v] = t.nodes()[v].forwards ? 1 : 0;

  std::vector<int> dist(n);
  std::vector<LinkId> next;
  for (std::uint32_t c = 0; c < chips; ++c) {
    const NodeId dst = t.chip_node(ChipId{c});
    MayLeave keep{&arcs, &forwards, dst.v};
    boost::filtered_graph<Arcs, MayLeave> g(arcs, keep);
    std::fill(dist.begin(), dist.end(), -1);
    dist[dst.v] = 0;
    boost::breadth_first_search(
        g, dst.v,
        boost::visitor(boost::make_bfs_visitor(
            boost::record_distances(dist.data(), boost::on_tree_edge()))));

    for (std::uint32_t v = 0; v < n; ++v) {
      rt.dist_[rt.idx(NodeId{v}, ChipId{c})] = dist[v];
      next.clear();
      if (dist[v] > 0) {
        for (LinkId l : t.incident(NodeId{v})) {
          const NodeId w = t.other_end(l, NodeId{v});
          if (dist[w.v] == dist[v] - 1 && (w == dst || forwards[w.v])) next.push_back(l);
        }
        std::sort(next.begin(), next.end());
      }
      rt.next_.insert(rt.next_.end(), next.begin(), next.end());
      if (rt.next_.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw InternalError("route table too large for 32-bit offsets");
      }
      rt.offset_.push_back(static_cast<std::uint32_t>(rt.next_.size()));
    }
  }
  return rt;
}

}  // namespace trnsim::topo
