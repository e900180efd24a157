// SPDX-License-Identifier: MIT
// Route tables: one breadth-first search per destination chip over the links, never leaving a
// node that does not forward (other than the destination itself, where the search starts).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "draft.hpp"
#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"

namespace trnsim::topo {

namespace {

constexpr std::uint64_t mix64(std::uint64_t x) { return splitmix64(x); }

}  // namespace

int RouteTable::torus_hops(std::uint32_t from, std::uint32_t to) const {
  if (from >= nodes_ || to >= chips_) {
    throw InternalError(fmt::format("no route entry for node {} to chip {}", from, to));
  }
  int h = 0;
  for (const std::uint32_t size : torus_dims_) {
    const std::uint32_t x = from % size, y = to % size;
    from /= size;
    to /= size;
    const std::uint32_t d = x > y ? x - y : y - x;
    h += static_cast<int>(torus_wrap_ ? std::min(d, size - d) : d);
  }
  return h;
}

int RouteTable::hops(NodeId from, ChipId to) const {
  if (on_demand()) return torus_hops(from.v, to.v);
  return dist_.at(idx(from, to));
}

std::span<const LinkId> RouteTable::table_span(NodeId at, ChipId to) const {
  const std::size_t i = idx(at, to);
  if (i + 1 >= offset_.size()) {
    throw InternalError(fmt::format("no route entry for node {} to chip {}", at.v, to.v));
  }
  return {next_.data() + offset_[i], next_.data() + offset_[i + 1]};
}

NextHops RouteTable::next_hops(NodeId at, ChipId to) const {
  NextHops out;
  if (on_demand()) {
    const int h = torus_hops(at.v, to.v);
    if (h <= 0) return out;
    for (std::uint32_t i = inc_offset_[at.v]; i < inc_offset_[at.v + 1]; ++i) {
      if (torus_hops(inc_other_[i], to.v) == h - 1) out.push_back(inc_link_[i]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::span<const LinkId> table = table_span(at, to);
  out.assign(table.begin(), table.end());
  return out;
}

LinkId RouteTable::next_hop(NodeId at, ChipId to, std::uint64_t flow) const {
  // The table's own entries on the per-flow path, without a copy; computed ones for a torus.
  NextHops computed;
  std::span<const LinkId> alternatives;
  if (on_demand()) {
    computed = next_hops(at, to);
    alternatives = {computed.data(), computed.size()};
  } else {
    alternatives = table_span(at, to);
  }
  if (alternatives.empty()) {
    throw InternalError(fmt::format("no next hop from node {} to chip {}", at.v, to.v));
  }
  return alternatives[mix64(flow ^ mix64(at.v)) % alternatives.size()];
}

std::size_t RouteTable::bytes() const {
  return dist_.capacity() * sizeof(int) + offset_.capacity() * sizeof(std::uint32_t) +
         next_.capacity() * sizeof(LinkId) + inc_offset_.capacity() * sizeof(std::uint32_t) +
         inc_link_.capacity() * sizeof(LinkId) + inc_other_.capacity() * sizeof(std::uint32_t);
}

RouteTable RouteBuilder::build(const Topology& t, bool on_demand) {
  const std::size_t n = t.nodes().size();
  const std::size_t chips = t.chip_count();
  RouteTable rt;
  rt.nodes_ = n;
  rt.chips_ = chips;
  if (on_demand) {
    // Every node is a forwarding chip (node i is chip i): the routes follow from the coordinates,
    // and only the incidence is kept.
    for (const int size : t.torus_dims()) {
      rt.torus_dims_.push_back(static_cast<std::uint32_t>(size));
      // Size 2 has one link either way; min(d, 2 - d) = d.
      rt.diameter_ += t.torus_wrap() ? size / 2 : size - 1;
    }
    rt.torus_wrap_ = t.torus_wrap();
    rt.inc_offset_.reserve(n + 1);
    rt.inc_offset_.push_back(0);
    for (std::uint32_t v = 0; v < n; ++v) {
      for (const LinkId l : t.incident(NodeId{v})) {
        rt.inc_link_.push_back(l);
        rt.inc_other_.push_back(t.other_end(l, NodeId{v}).v);
      }
      rt.inc_offset_.push_back(static_cast<std::uint32_t>(rt.inc_link_.size()));
    }
    if (n <= 1) rt.diameter_ = 0;
    return rt;
  }
  rt.dist_.assign(n * chips, -1);
  rt.offset_.reserve(n * chips + 1);
  rt.offset_.push_back(0);

  // Every node's links and the nodes at their other ends, flat and in incident() order: the
  // search and the next hops read them once per destination chip (a Boost graph, filtered per
  // search, and incident()/other_end() per node and chip took five times as long).
  std::vector<std::uint32_t> inc_offset;
  std::vector<LinkId> inc_link;
  std::vector<std::uint32_t> inc_other;
  inc_offset.reserve(n + 1);
  inc_offset.push_back(0);
  for (std::uint32_t v = 0; v < n; ++v) {
    for (const LinkId l : t.incident(NodeId{v})) {
      inc_link.push_back(l);
      inc_other.push_back(t.other_end(l, NodeId{v}).v);
    }
    inc_offset.push_back(static_cast<std::uint32_t>(inc_link.size()));
  }
  std::vector<char> forwards(n);
  for (std::size_t v = 0; v < n; ++v) forwards[v] = t.nodes()[v].forwards ? 1 : 0;

  std::vector<int> dist(n);
  std::vector<std::uint32_t> queue(n);
  std::vector<LinkId> next;
  for (std::uint32_t c = 0; c < chips; ++c) {
    const NodeId dst = t.chip_node(ChipId{c});
    // Breadth first from the destination, over the links of the destination and of forwarding
    // nodes only: a route may start at a chip that does not forward but never passes one. The
    // hop counts do not depend on the order nodes are visited in.
    std::fill(dist.begin(), dist.end(), -1);
    dist[dst.v] = 0;
    std::size_t head = 0, tail = 0;
    queue[tail++] = dst.v;
    while (head < tail) {
      const std::uint32_t u = queue[head++];
      if (u != dst.v && !forwards[u]) continue;
      for (std::uint32_t i = inc_offset[u]; i < inc_offset[u + 1]; ++i) {
        const std::uint32_t w = inc_other[i];
        if (dist[w] >= 0) continue;
        dist[w] = dist[u] + 1;
        queue[tail++] = w;
      }
    }

    for (std::uint32_t v = 0; v < n; ++v) {
      rt.dist_[rt.idx(NodeId{v}, ChipId{c})] = dist[v];
      next.clear();
      if (dist[v] > 0) {
        for (std::uint32_t i = inc_offset[v]; i < inc_offset[v + 1]; ++i) {
          const std::uint32_t w = inc_other[i];
          if (dist[w] == dist[v] - 1 && (w == dst.v || forwards[w])) next.push_back(inc_link[i]);
        }
        std::sort(next.begin(), next.end());
      }
      rt.next_.insert(rt.next_.end(), next.begin(), next.end());
      if (rt.next_.size() > std::numeric_limits<std::uint32_t>::max()) {
        throw InternalError("route table too large for 32-bit offsets");
      }
      rt.offset_.push_back(static_cast<std::uint32_t>(rt.next_.size()));
    }
    for (std::uint32_t s = 0; s < chips; ++s) {
      if (s != c) rt.diameter_ = std::max(rt.diameter_, dist[t.chip_node(ChipId{s}).v]);
    }
  }
  return rt;
}

}  // namespace trnsim::topo
