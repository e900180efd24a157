// SPDX-License-Identifier: MIT
// The scale-out Clos by rule, its explicit expansion for small clusters, and its folded view.
#include "trnsim/topology/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "draft.hpp"
#include "trnsim/error.hpp"

namespace trnsim::topo {

namespace {

constexpr std::uint64_t kSpanCap = std::uint64_t(1) << 62;

std::uint64_t mul_capped(std::uint64_t a, std::uint64_t b) {
  return (b != 0 && a > kSpanCap / b) ? kSpanCap : a * b;
}

std::string tier_where(int k) { return fmt::format("/cluster/scale_out/tiers/{}", k - 1); }

}  // namespace

ScaleOut::ScaleOut(const config::ScaleOutParams& p, int ultraservers, int chips,
                   const SpecOrigin& origin, const std::optional<config::FailedLinkParams>& failed)
    : p_(p), n_(ultraservers), c_(chips), failed_(failed) {
  SpecOrigin o = origin;
  o.pointer = "";
  const ErrorSink err(o);
  if (p.tiers.empty()) err.fail("/cluster/scale_out/tiers", "expected at least one switch tier");
  if (n_ < 1 || c_ < 1) {
    throw InternalError(fmt::format("ScaleOut: {} UltraServers of {} chips", n_, c_));
  }
  const int T = int(p.tiers.size());
  std::uint64_t span = 1, group_switches = 1;
  double bw_below = p.nic_bandwidth.si, share = p.nic_bandwidth.si;
  for (int k = 1; k <= T; ++k) {
    const config::ScaleOutTier& t = p.tiers[std::size_t(k - 1)];
    Tier x;
    // The lowest tier that reaches every NIC with all its ports turned down is the top one:
    // the tiers above it are not built.
    const bool top = k == T || mul_capped(span, std::uint64_t(t.ports)) >= nics();
    if (!top) {
      const double o_k = t.oversubscription;
      x.down = int(std::floor(double(t.ports) * o_k / (1 + o_k) + 1e-9));
      x.up = t.ports - x.down;
      if (x.down < 1 || x.up < 1) {
        err.fail(tier_where(k) + "/ports",
                 fmt::format("tier \"{}\": {} ports at oversubscription {} leave {} down and {} up "
                             "ports; expected at least one of each below the top tier",
                             t.name, t.ports, o_k, x.down, x.up));
      }
      x.up_bandwidth = t.up_bandwidth.si > 0 ? t.up_bandwidth.si : p.nic_bandwidth.si;
    } else {
      x.down = t.ports;  // the top tier turns every port down
    }
    span = mul_capped(span, std::uint64_t(x.down));
    x.span = span;
    x.group_switches = group_switches;
    x.switches = mul_capped((nics() + span - 1) / span, group_switches);
    if (!top) {
      // Up capacity of a group over the NICs under it: (switches x up links x bandwidth) / span.
      share = share * (double(x.up) * x.up_bandwidth) / (double(x.down) * bw_below);
      x.share_per_nic = share;
      bw_below = x.up_bandwidth;
      group_switches = mul_capped(group_switches, std::uint64_t(x.up));
    }
    tiers_.push_back(x);
    if (top) break;
  }
  if (tiers_.back().span < nics()) {
    std::string spans;
    for (const Tier& x : tiers_) spans += fmt::format("{}{}", spans.empty() ? "" : " x ", x.down);
    err.fail(tier_where(T) + "/ports",
             fmt::format("the top tier \"{}\" reaches {} NICs ({} down ports per tier); the cluster "
                         "has {} ({} UltraServers x {} chips): expected more ports or another tier",
                         p.tiers.back().name, tiers_.back().span, spans, nics(), n_, c_));
  }
  if (failed_) {
    if (failed_->ultraserver >= n_) {
      err.fail("/cluster/failed_link/ultraserver",
               fmt::format("expected an UltraServer below {}, got {}", n_, failed_->ultraserver));
    }
    if (failed_->chip >= c_) {
      err.fail("/cluster/failed_link/chip",
               fmt::format("expected a chip below {}, got {}", c_, failed_->chip));
    }
    if (failed_->tier >= tiers()) {
      err.fail("/cluster/failed_link/tier",
               fmt::format("expected a tier with up links, 1 to {} (the cluster uses {} tiers), "
                           "got {}",
                           tiers() - 1, tiers(), failed_->tier));
    }
  }
}

bool ScaleOut::is_failed(int k, std::uint64_t group, std::uint64_t sw, int up) const {
  if (!failed_ || failed_->tier != k || sw != 0 || up != 0) return false;
  return group == port(failed_->ultraserver, failed_->chip) / tier(k).span;
}

std::uint64_t ScaleOut::port(int u, int c) const {
  return p_.rail_optimized ? std::uint64_t(c) * std::uint64_t(n_) + std::uint64_t(u)
                           : std::uint64_t(u) * std::uint64_t(c_) + std::uint64_t(c);
}

int ScaleOut::meet_tier(int u, int c, int v, int d) const {
  const std::uint64_t a = port(u, c), b = port(v, d);
  if (a == b) return 0;
  for (int k = 1; k <= tiers(); ++k) {
    if (a / tier(k).span == b / tier(k).span) return k;
  }
  throw InternalError("ScaleOut::meet_tier: the top tier does not hold both NICs");
}

int ScaleOut::hops(int u, int c, int v, int d) const {
  const int t = meet_tier(u, c, v, d);
  return t == 0 ? 0 : 2 * t;
}

namespace {

DraftNode switch_node(std::string name, const config::ScaleOutTier& t, int k) {
  DraftNode dn;
  dn.node.name = std::move(name);
  dn.node.kind = NodeKind::switch_;
  dn.node.ports = t.ports;
  dn.node.latency = t.latency;
  dn.node.forwards = true;
  dn.where = dn.ports_where = dn.latency_where = tier_where(k);
  return dn;
}

void add_link(Draft& d, std::uint32_t a, std::uint32_t b, double bw, Duration latency,
              std::string where) {
  DraftLink l;
  l.a = a;
  l.b = b;
  l.bandwidth = Bandwidth(bw);
  l.latency = latency;
  l.where = std::move(where);
  d.links.push_back(std::move(l));
}

}  // namespace

Topology build_scale_out_topology(const ScaleOut& so, const SpecOrigin& origin) {
  Draft d;
  d.where = "/cluster";
  const auto& P = so.params();
  // The chips, UltraServer by UltraServer: endpoints only (the scale-out network does not pass
  // through chips; traffic inside an UltraServer stays on its own fabric).
  std::vector<std::uint32_t> chip_index;
  for (int u = 0; u < so.ultraservers(); ++u) {
    for (int c = 0; c < so.chips_per_ultraserver(); ++c) {
      DraftNode n;
      n.node.name = fmt::format("us{}.chip{}", u, c);
      n.node.kind = NodeKind::chip;
      n.where = "/cluster/ultraservers";
      chip_index.push_back(std::uint32_t(d.nodes.size()));
      d.nodes.push_back(std::move(n));
    }
  }
  // Switches, tier by tier: group g of tier k holds group_switches switches.
  std::vector<std::vector<std::uint32_t>> first(std::size_t(so.tiers()));  // [k-1][g] -> node
  for (int k = 1; k <= so.tiers(); ++k) {
    const auto& x = so.tier(k);
    const std::uint64_t groups = (so.nics() + x.span - 1) / x.span;
    for (std::uint64_t g = 0; g < groups; ++g) {
      first[std::size_t(k - 1)].push_back(std::uint32_t(d.nodes.size()));
      for (std::uint64_t j = 0; j < x.group_switches; ++j) {
        d.nodes.push_back(switch_node(
            fmt::format("so.{}.{}.{}", P.tiers[std::size_t(k - 1)].name, g, j),
            P.tiers[std::size_t(k - 1)], k));
      }
    }
  }
  // NIC links: each chip to its leaf.
  for (int u = 0; u < so.ultraservers(); ++u) {
    for (int c = 0; c < so.chips_per_ultraserver(); ++c) {
      const std::uint64_t g = so.port(u, c) / so.tier(1).span;
      add_link(d, chip_index[std::size_t(u) * std::size_t(so.chips_per_ultraserver()) + std::size_t(c)],
               first[0][g], P.nic_bandwidth.si, P.nic_latency, "/cluster/scale_out/nic_bandwidth");
    }
  }
  // Up links: switch j of group g at tier k to switches j*up .. j*up+up-1 of its parent group.
  for (int k = 1; k < so.tiers(); ++k) {
    const auto& x = so.tier(k);
    const auto& parent = so.tier(k + 1);
    for (std::size_t g = 0; g < first[std::size_t(k - 1)].size(); ++g) {
      const std::uint64_t pg = g * x.span / parent.span;
      for (std::uint64_t j = 0; j < x.group_switches; ++j) {
        for (int i = 0; i < x.up; ++i) {
          if (so.is_failed(k, g, j, i)) continue;
          add_link(d, first[std::size_t(k - 1)][g] + std::uint32_t(j),
                   first[std::size_t(k)][pg] + std::uint32_t(j * std::uint64_t(x.up) + std::uint64_t(i)),
                   x.up_bandwidth, P.tiers[std::size_t(k - 1)].up_latency,
                   tier_where(k) + "/up_bandwidth");
        }
      }
    }
  }
  return build_from_draft(std::move(d), nullptr, origin);
}

FoldedScaleOut::FoldedScaleOut(const ScaleOut& so, int per_replica)
    : so_(so), per_replica_(per_replica) {
  Draft d;
  d.where = "/cluster/scale_out";
  const auto& P = so.params();
  const int per = so.chips_per_ultraserver(), C = per * per_replica, T = so.tiers();
  // The port of the replica's chip i.
  auto port = [&](int i) { return so.port(i / per, i % per); };
  for (int c = 0; c < C; ++c) {
    DraftNode n;
    n.node.name = fmt::format("chip{}", c);
    n.node.kind = NodeKind::chip;
    d.nodes.push_back(std::move(n));
  }
  // One node per (tier, group) that this replica's NICs reach, with its NICs counted.
  std::vector<std::map<std::uint64_t, std::uint32_t>> node_of{std::size_t(T)};
  std::vector<std::map<std::uint64_t, int>> nics_in{std::size_t(T)};
  std::vector<std::vector<std::uint32_t>> chip_group(static_cast<std::size_t>(T),
                                                      std::vector<std::uint32_t>(static_cast<std::size_t>(C)));
  for (int k = 1; k <= T; ++k) {
    for (int c = 0; c < C; ++c) {
      const std::uint64_t g = port(c) / so.tier(k).span;
      auto [it, fresh] = node_of[std::size_t(k - 1)].try_emplace(g, std::uint32_t(d.nodes.size()));
      if (fresh) {
        d.nodes.push_back(switch_node(fmt::format("so.{}.{}", P.tiers[std::size_t(k - 1)].name, g),
                                      P.tiers[std::size_t(k - 1)], k));
        d.nodes.back().node.ports = 0;  // a group, not one switch: no radix
      }
      ++nics_in[std::size_t(k - 1)][g];
      chip_group[std::size_t(k - 1)][std::size_t(c)] = it->second;
    }
  }
  nic_link_.resize(std::size_t(C));
  for (int c = 0; c < C; ++c) {
    nic_link_[std::size_t(c)] = LinkId{std::uint32_t(d.links.size())};
    add_link(d, std::uint32_t(c), chip_group[0][std::size_t(c)], P.nic_bandwidth.si, P.nic_latency,
             "/cluster/scale_out/nic_bandwidth");
  }
  // A group's up link: its NICs x the share per NIC.
  std::map<std::pair<int, std::uint64_t>, LinkId> up_of;
  for (int k = 1; k < T; ++k) {
    for (const auto& [g, node] : node_of[std::size_t(k - 1)]) {
      const std::uint64_t pg = g * so.tier(k).span / so.tier(k + 1).span;
      up_of[{k, g}] = LinkId{std::uint32_t(d.links.size())};
      // A failed link of the group: its other links carry the group's share (the simulated
      // replica stands for the one under it, docs/scaling.md#what-ifs).
      const double links = double(so.tier(k).group_switches) * double(so.tier(k).up);
      const auto& fl = so.failed_link();
      const bool hit = fl && fl->tier == k && g == so.port(0, fl->chip) / so.tier(k).span;
      add_link(d, node, node_of[std::size_t(k)].at(pg),
               double(nics_in[std::size_t(k - 1)].at(g)) * so.tier(k).share_per_nic *
                   (hit ? (links - 1) / links : 1.0),
               P.tiers[std::size_t(k - 1)].up_latency, tier_where(k) + "/up_bandwidth");
    }
  }
  group_node_.assign(std::size_t(T), std::vector<NodeId>(std::size_t(C)));
  up_link_.assign(std::size_t(T), std::vector<LinkId>(std::size_t(C)));
  for (int k = 1; k <= T; ++k) {
    for (int c = 0; c < C; ++c) {
      group_node_[std::size_t(k - 1)][std::size_t(c)] = NodeId{chip_group[std::size_t(k - 1)][std::size_t(c)]};
      if (k < T) up_link_[std::size_t(k - 1)][std::size_t(c)] = up_of.at({k, port(c) / so.tier(k).span});
    }
  }
  SpecOrigin origin;
  origin.pointer = "/cluster/scale_out";
  topology_ = build_from_draft(std::move(d), nullptr, origin);
}

DirectedPath FoldedScaleOut::path(int c, int distance, int dst) const {
  const int per = so_.chips_per_ultraserver();
  const int su = c / per, du = dst / per + distance;
  if (distance < 0 || du >= so_.ultraservers() || (distance == 0 && su == du) ||
      distance % per_replica_ != 0) {
    throw InternalError(fmt::format("FoldedScaleOut::path: chip {} to chip {} {} UltraServers "
                                    "away, of {} ({} per replica)",
                                    c, dst, distance, so_.ultraservers(), per_replica_));
  }
  const int t = so_.meet_tier(su, c % per, du, dst % per);
  DirectedPath p;
  auto dir = [&](LinkId l, NodeId from) {
    return 2 * l.v + (topology_.link(l).a == from ? 0u : 1u);
  };
  const NodeId src_chip = topology_.chip_node(ChipId{std::uint32_t(c)});
  p.dirs.push_back(dir(nic_link_[std::size_t(c)], src_chip));
  for (int k = 1; k < t; ++k) {
    const NodeId at = group_node_[std::size_t(k - 1)][std::size_t(c)];
    p.via.push_back(at);
    p.dirs.push_back(dir(up_link_[std::size_t(k - 1)][std::size_t(c)], at));
  }
  p.via.push_back(group_node_[std::size_t(t - 1)][std::size_t(c)]);
  for (int k = t - 1; k >= 1; --k) {
    const NodeId above = group_node_[std::size_t(k)][std::size_t(dst)];
    p.dirs.push_back(dir(up_link_[std::size_t(k - 1)][std::size_t(dst)], above));
    p.via.push_back(group_node_[std::size_t(k - 1)][std::size_t(dst)]);
  }
  p.dirs.push_back(dir(nic_link_[std::size_t(dst)], group_node_[0][std::size_t(dst)]));
  return p;
}

}  // namespace trnsim::topo
