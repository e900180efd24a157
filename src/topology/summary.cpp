// SPDX-License-Identifier: MIT
// Summary figures of a topology: sizes, distances, injection and bisection bandwidth.
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "draft.hpp"

namespace trnsim::topo {

namespace {

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
struct Arc {
  std::int64_t capacity = 0;
  std::int64_t residual = 0;
  FlowTraits::edge_descriptor reverse;
};
using FlowGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                        boost::no_property, Arc>;

// Cut capacity between chip halves: max flow from a super source feeding every chip of half A to
// a super sink fed by every chip of half B. Switches belong to neither half, so the flow places
// each on whichever side gives the smaller cut.
class BisectionCutter {
 public:
  // Capacities in whole units of `scale_` bytes per second keep max-flow exact (no
  // floating-point tolerance): 1 B/s whenever all the links together carry at most 2^60 B/s
  // (every real topology), else coarser, so that no sum of capacities overflows.
  explicit BisectionCutter(const Topology& t) : t_(t) {
    double total = 0;
    for (const Link& l : t.links()) total += l.bandwidth.si;
    constexpr double kMaxTotal = 0x1p60;
    if (total > kMaxTotal) scale_ = std::ceil(total / kMaxTotal);
    for (const Link& l : t.links()) infinite_ += capacity_of(l);
    infinite_ += 1;
  }
  // The bandwidth of `cut` capacity units.
  Bandwidth bandwidth(std::int64_t cut) const { return Bandwidth(double(cut) * scale_); }

  std::int64_t cut(const std::vector<char>& in_a) const {
    const std::size_t n = t_.nodes().size();
    FlowGraph g(n + 2);
    const std::size_t source = n, sink = n + 1;
    auto add_pair = [&](std::size_t u, std::size_t v, std::int64_t forward, std::int64_t back) {
      const auto e1 = boost::add_edge(u, v, g).first;
      const auto e2 = boost::add_edge(v, u, g).first;
      g[e1].capacity = forward;
      g[e2].capacity = back;
      g[e1].reverse = e2;
      g[e2].reverse = e1;
    };
    // An undirected link is one pair of arcs, each with the link's capacity, each the other's
    // reverse: flow either way is bounded by the per-direction bandwidth.
    for (const Link& l : t_.links()) add_pair(l.a.v, l.b.v, capacity_of(l), capacity_of(l));
    for (std::uint32_t c = 0; c < t_.chip_count(); ++c) {
      const std::size_t v = t_.chip_node(ChipId{c}).v;
      if (in_a[c]) {
        add_pair(source, v, infinite_, 0);
      } else {
        add_pair(v, sink, infinite_, 0);
      }
    }
    return boost::boykov_kolmogorov_max_flow(g, boost::get(&Arc::capacity, g),
                                             boost::get(&Arc::residual, g),
                                             boost::get(&Arc::reverse, g),
                                             boost::get(boost::vertex_index, g), source, sink);
  }

 private:
  std::int64_t capacity_of(const Link& l) const { return std::llround(l.bandwidth.si / scale_); }

  const Topology& t_;
  double scale_ = 1;
  std::int64_t infinite_ = 0;
};

// Balanced chip partitions (|A| = floor(N/2)), deduplicated; with N even a partition and its
// complement are the same cut.
class Candidates {
 public:
  explicit Candidates(std::size_t chips) : chips_(chips) {}
  void add(std::vector<char> in_a) {
    if (chips_ % 2 == 0 && !in_a[0]) {
      for (auto& x : in_a) x = x ? 0 : 1;
    }
    if (seen_.insert(in_a).second) list_.push_back(std::move(in_a));
  }
  const std::vector<std::vector<char>>& list() const { return list_; }

 private:
  std::size_t chips_;
  std::set<std::vector<char>> seen_;
  std::vector<std::vector<char>> list_;
};

std::vector<std::vector<char>> bisection_candidates(const Topology& t) {
  const std::size_t n = t.chip_count();
  const std::size_t half = n / 2;
  Candidates cands(n);

  // Contiguous halves of chip-id order, rotated: generators number chips server by server, leaf
  // by leaf, so these include the rack, server-group and leaf-group cuts.
  const std::size_t step = std::max<std::size_t>(1, n / 16);
  for (std::size_t r = 0; r < n; r += step) {
    std::vector<char> in_a(n, 0);
    for (std::size_t i = 0; i < half; ++i) in_a[(r + i) % n] = 1;
    cands.add(std::move(in_a));
  }

  // Halves of each even torus dimension at offset 0. The generator's links are alike along a
  // dimension, so in a torus every offset is a translation of offset 0 (the same cut), and in a
  // mesh any other offset cuts two planes instead of one; trying them all (k/2 partitions of
  // every chip per dimension) took 4 GB and hours for 1024 x 1024 and found nothing smaller.
  const auto& dims = t.torus_dims();
  if (!dims.empty()) {
    std::size_t stride = 1;
    for (int size : dims) {
      const auto k = static_cast<std::size_t>(size);
      if (k % 2 == 0) {
        std::vector<char> in_a(n, 0);
        for (std::size_t c = 0; c < n; ++c) in_a[c] = (c / stride) % k < k / 2 ? 1 : 0;
        cands.add(std::move(in_a));
      }
      stride *= k;
    }
  }

  // Balls grown around a few seed chips: the chips nearest the seed (by hops, ties by id).
  std::vector<std::uint32_t> seeds = {0, static_cast<std::uint32_t>(n / 4),
                                      static_cast<std::uint32_t>(n / 2),
                                      static_cast<std::uint32_t>(n - 1)};
  std::uint32_t far = 0;
  for (std::uint32_t c = 0; c < n; ++c) {
    if (t.routes().hops(t.chip_node(ChipId{c}), ChipId{0}) >
        t.routes().hops(t.chip_node(ChipId{far}), ChipId{0})) {
      far = c;
    }
  }
  seeds.push_back(far);
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t seed : seeds) {
    std::iota(order.begin(), order.end(), 0U);
    auto dist = [&](std::uint32_t c) { return t.routes().hops(t.chip_node(ChipId{c}), ChipId{seed}); };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t x, std::uint32_t y) { return dist(x) < dist(y); });
    std::vector<char> in_a(n, 0);
    for (std::size_t i = 0; i < half; ++i) in_a[order[i]] = 1;
    cands.add(std::move(in_a));
  }
  return cands.list();
}

}  // namespace

TopologySummary summarize(const Topology& t) {
  TopologySummary s;
  for (const Node& node : t.nodes()) {
    if (node.kind == NodeKind::chip) ++s.chips;
    if (node.kind == NodeKind::switch_) ++s.switches;
    if (node.kind == NodeKind::nic) ++s.nics;
  }
  s.links = t.links().size();
  const std::size_t n = t.nodes().size();
  const std::size_t chips = t.chip_count();
  const RouteTable& rt = t.routes();

  double hop_sum = 0;
  if (rt.on_demand()) {
    // A torus: no switches, and the hops of a pair are the sum of its per-dimension distances,
    // so the sum over ordered pairs is, per dimension, the sum over coordinate pairs times the
    // (chips / size)^2 pairs that share them (all whole numbers, exact in a double as the sum of
    // the pairs' hops one by one was).
    s.diameter_hops = rt.diameter();
    for (const int dim : t.torus_dims()) {
      const auto size = static_cast<std::uint64_t>(dim);
      std::uint64_t ring = 0;
      for (std::uint64_t d = 1; d < size; ++d) {
        // d is the difference x - y (mod size when wrapping) of `size - d` ordered pairs with
        // x > y, twice for both orders.
        const std::uint64_t dist = t.torus_wrap() ? std::min(d, size - d) : d;
        ring += t.torus_wrap() ? size * dist : 2 * (size - d) * dist;
      }
      const double others = double(chips) / double(size);
      hop_sum += double(ring) * others * others;
    }
  } else {
    // Per destination, the most switches on any shortest route from each node: filled in order
    // of increasing distance, since every next hop is one hop nearer.
    std::vector<std::uint32_t> by_dist(n);
    std::vector<int> switches(n);
    for (std::uint32_t d = 0; d < chips; ++d) {
      const ChipId dst{d};
      const NodeId dst_node = t.chip_node(dst);
      std::iota(by_dist.begin(), by_dist.end(), 0U);
      std::sort(by_dist.begin(), by_dist.end(), [&](std::uint32_t x, std::uint32_t y) {
        return rt.hops(NodeId{x}, dst) < rt.hops(NodeId{y}, dst);
      });
      std::fill(switches.begin(), switches.end(), 0);
      for (std::uint32_t v : by_dist) {
        if (rt.hops(NodeId{v}, dst) <= 0) continue;
        int most = 0;
        for (LinkId l : rt.next_hops(NodeId{v}, dst)) {
          const NodeId w = t.other_end(l, NodeId{v});
          const bool transit_switch = w != dst_node && t.node(w).kind == NodeKind::switch_;
          most = std::max(most, switches[w.v] + (transit_switch ? 1 : 0));
        }
        switches[v] = most;
      }
      for (std::uint32_t c = 0; c < chips; ++c) {
        if (c == d) continue;
        const NodeId src = t.chip_node(ChipId{c});
        const int h = rt.hops(src, dst);
        s.diameter_hops = std::max(s.diameter_hops, h);
        s.diameter_switch_hops = std::max(s.diameter_switch_hops, switches[src.v]);
        hop_sum += h;
      }
    }
  }
  if (chips > 1) s.mean_hops = hop_sum / (double(chips) * double(chips - 1));

  for (std::uint32_t c = 0; c < chips; ++c) {
    Bandwidth inj{};
    for (LinkId l : t.incident(t.chip_node(ChipId{c}))) inj = inj + t.link(l).bandwidth;
    if (c == 0 || inj < s.injection_min) s.injection_min = inj;
    if (c == 0 || inj > s.injection_max) s.injection_max = inj;
  }

  if (chips >= 2) {
    const BisectionCutter cutter(t);
    const auto cands = bisection_candidates(t);
    std::int64_t best = -1;
    for (const auto& in_a : cands) {
      const std::int64_t cut = cutter.cut(in_a);
      if (best < 0 || cut < best) best = cut;
    }
    s.bisection = cutter.bandwidth(best);
    s.bisection_cuts_tried = static_cast<int>(cands.size());
  }
  return s;
}

}  // namespace trnsim::topo
