// SPDX-License-Identifier: MIT
#include "trnsim/replay/collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <set>

#include "trnsim/error.hpp"

namespace trnsim::replay {
namespace {

using trace::OpKind;
using A = CollectiveAlgorithm;
using Steps = std::vector<Step>;
using Ring = std::vector<int>;  // member indices in ring order

// `total` split into `n` parts that differ by at most one byte.
std::vector<std::uint64_t> split(std::uint64_t total, int n) {
  std::vector<std::uint64_t> parts(std::size_t(n), total / std::uint64_t(n));
  for (std::uint64_t k = 0; k < total % std::uint64_t(n); ++k) ++parts[k];
  return parts;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

int mod(int a, int n) { return ((a % n) + n) % n; }

bool power_of_two(int n) { return n > 0 && std::has_single_bit(unsigned(n)); }

void add_send(Step& s, int peer, std::uint64_t bytes) {
  if (bytes > 0) s.sends.push_back({peer, bytes, false});
}
void add_recv(Step& s, int peer, std::uint64_t bytes, bool reduce) {
  if (bytes == 0) return;
  s.recvs.push_back({peer, bytes, reduce});
  if (reduce) s.reduce_bytes += bytes;
}

// Appends `src`'s steps to `dst`'s step by step (rings that run at the same time).
void merge_into(Steps& dst, const Steps& src) {
  if (dst.size() < src.size()) dst.resize(src.size());
  for (std::size_t t = 0; t < src.size(); ++t) {
    for (const auto& x : src[t].sends) dst[t].sends.push_back(x);
    for (const auto& x : src[t].recvs) dst[t].recvs.push_back(x);
    dst[t].reduce_bytes += src[t].reduce_bytes;
  }
}

std::vector<int> chips_of(const GroupLayout& layout, int n) {
  if (!layout.chip.empty()) return layout.chip;
  std::vector<int> c(static_cast<std::size_t>(n));
  std::iota(c.begin(), c.end(), 0);
  return c;
}

Ring iota_ring(int n) {
  Ring r(static_cast<std::size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

// ---- one ring ----------------------------------------------------------------------------------

// Ring reduce-scatter over `ring` as seen by the member at position `pos`; parts[k] is the size
// of chunk k. After it, the member owns reduced chunk (pos + 1) mod m.
void ring_reduce_scatter(Steps& out, const Ring& ring, int pos,
                         const std::vector<std::uint64_t>& parts) {
  const int m = int(ring.size());
  for (int t = 0; t + 1 < m; ++t) {
    Step s;
    add_send(s, ring[std::size_t(mod(pos + 1, m))], parts[std::size_t(mod(pos - t, m))]);
    add_recv(s, ring[std::size_t(mod(pos - 1, m))], parts[std::size_t(mod(pos - 1 - t, m))], true);
    out.push_back(std::move(s));
  }
}

// Ring all-gather where the member at `pos` starts owning chunk (pos + offset) mod m.
void ring_all_gather(Steps& out, const Ring& ring, int pos,
                     const std::vector<std::uint64_t>& parts, int offset) {
  const int m = int(ring.size());
  const int owned = pos + offset;
  for (int t = 0; t + 1 < m; ++t) {
    Step s;
    add_send(s, ring[std::size_t(mod(pos + 1, m))], parts[std::size_t(mod(owned - t, m))]);
    add_recv(s, ring[std::size_t(mod(pos - 1, m))], parts[std::size_t(mod(owned - 1 - t, m))],
             false);
    out.push_back(std::move(s));
  }
}

int position(const Ring& ring, int member) {
  return int(std::find(ring.begin(), ring.end(), member) - ring.begin());
}

// `kind` over several rings at once, each carrying an equal share of the data; every ring holds
// every member.
void rings_plan(std::vector<Steps>& out, OpKind kind, const std::vector<Ring>& rings,
                std::uint64_t S) {
  const int n = int(out.size());
  const auto shares = split(S, int(rings.size()));
  for (std::size_t r = 0; r < rings.size(); ++r) {
    const auto parts = split(shares[r], n);
    for (int i = 0; i < n; ++i) {
      const int pos = position(rings[r], i);
      Steps st;
      if (kind != OpKind::all_gather) ring_reduce_scatter(st, rings[r], pos, parts);
      if (kind == OpKind::all_reduce) ring_all_gather(st, rings[r], pos, parts, 1);
      if (kind == OpKind::all_gather) ring_all_gather(st, rings[r], pos, parts, 0);
      merge_into(out[std::size_t(i)], st);
    }
  }
}

std::vector<Ring> both_ways(const std::vector<Ring>& cycles) {
  std::vector<Ring> out;
  for (const auto& c : cycles) {
    out.push_back(c);
    out.emplace_back(c.rbegin(), c.rend());
  }
  return out;
}

// ---- Hamiltonian cycles over the members' chips ------------------------------------------------

// Depth-first search for Hamiltonian cycles on a small graph, most constrained next node first
// (Warnsdorff), ties broken by a fixed hash of `salt` and the node: deterministic, and a
// different salt explores a different part of the search. `found` is called with each cycle and
// returns true to stop. The search stops after `budget` node expansions.
class CycleSearch {
 public:
  CycleSearch(const std::vector<std::vector<char>>& adj, long& budget, std::uint64_t salt = 0)
      : budget_(budget), salt_(salt), nbr_(adj.size()) {
    for (std::size_t v = 0; v < adj.size(); ++v) {
      for (std::size_t u = 0; u < adj.size(); ++u) {
        if (adj[v][u]) nbr_[v].push_back(int(u));
      }
    }
  }

  template <class F>
  bool run(F&& found) {
    path_.assign(1, 0);
    used_.assign(nbr_.size(), 0);
    used_[0] = 1;
    return extend(found);
  }

 private:
  int free_degree(int v) const {
    int k = 0;
    for (int u : nbr_[std::size_t(v)]) k += !used_[std::size_t(u)];
    return k;
  }
  std::uint64_t tie(int u) const {
    std::uint64_t x = salt_ * 0x9E3779B97F4A7C15ULL + std::uint64_t(u) + 1;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    return salt_ == 0 ? std::uint64_t(u) : x ^ (x >> 29);
  }
  template <class F>
  bool extend(F& found) {
    if (--budget_ < 0) return false;
    const int v = path_.back();
    if (path_.size() == nbr_.size()) {
      const auto& nv = nbr_[std::size_t(v)];
      return std::find(nv.begin(), nv.end(), 0) != nv.end() && found(path_);
    }
    std::vector<std::tuple<int, std::uint64_t, int>> next;  // (onward options, tie, node)
    for (int u : nbr_[std::size_t(v)]) {
      if (!used_[std::size_t(u)]) next.emplace_back(free_degree(u), tie(u), u);
    }
    std::sort(next.begin(), next.end());
    for (const auto& [deg, t, u] : next) {
      used_[std::size_t(u)] = 1;
      path_.push_back(u);
      if (extend(found)) return true;
      path_.pop_back();
      used_[std::size_t(u)] = 0;
      if (budget_ < 0) return false;
    }
    return false;
  }
  long& budget_;
  std::uint64_t salt_;
  std::vector<std::vector<int>> nbr_;
  std::vector<int> path_;
  std::vector<char> used_;
};

// The distinct chips of the members (in first-member order) and the members on each.
struct ChipSet {
  std::vector<int> chips;
  std::vector<std::vector<int>> members;  // per entry of chips
};

ChipSet chip_set(const GroupLayout& layout, int n) {
  const auto chip = chips_of(layout, n);
  ChipSet cs;
  std::map<int, std::size_t> at;
  for (int i = 0; i < n; ++i) {
    const auto [it, fresh] = at.try_emplace(chip[std::size_t(i)], cs.chips.size());
    if (fresh) {
      cs.chips.push_back(chip[std::size_t(i)]);
      cs.members.emplace_back();
    }
    cs.members[it->second].push_back(i);
  }
  return cs;
}

// The one-hop graph between the chips of `cs` (empty when the rack gives no neighbours).
std::vector<std::vector<char>> chip_graph(const GroupLayout& layout, const ChipSet& cs) {
  const std::size_t d = cs.chips.size();
  std::vector<std::vector<char>> adj(d, std::vector<char>(d, 0));
  std::map<int, std::size_t> at;
  for (std::size_t k = 0; k < d; ++k) at[cs.chips[k]] = k;
  for (std::size_t k = 0; k < d; ++k) {
    const auto c = std::size_t(cs.chips[k]);
    if (c >= layout.neighbours.size()) continue;
    for (int nb : layout.neighbours[c]) {
      const auto it = at.find(nb);
      if (it != at.end() && it->second != k) adj[k][it->second] = 1;
    }
  }
  return adj;
}

Ring expand(const std::vector<int>& chip_cycle, const ChipSet& cs) {
  Ring r;
  for (int k : chip_cycle) {
    for (int m : cs.members[std::size_t(k)]) r.push_back(m);
  }
  return r;
}

// Bounds of the cycle search: expansions of one search and attempts at a set of disjoint cycles
// (docs/models/collectives.md gives what the bundled tori need).
constexpr long kCycleBudget = 200'000;
constexpr long kSearchBudget = 5'000;
constexpr int kCycleAttempts = 4'000;
// Chips beyond which no cycle is searched.
constexpr std::size_t kMaxCycleChips = 1024;

// Searches `want` edge-disjoint Hamiltonian cycles of `adj`: one cycle after another, each
// removed before the next is searched; a failed attempt starts again with other tie-breaks.
// Attempts and the expansions of each search are bounded.
bool disjoint_cycles(const std::vector<std::vector<char>>& adj, int want,
                     std::vector<std::vector<int>>& out) {
  for (int attempt = 0; attempt < kCycleAttempts; ++attempt) {
    auto g = adj;
    out.clear();
    for (int k = 0; k < want; ++k) {
      long budget = kSearchBudget;
      std::vector<int> cyc;
      CycleSearch(g, budget, std::uint64_t(attempt) * 8 + std::uint64_t(k))
          .run([&](const std::vector<int>& c) {
            cyc = c;
            return true;
          });
      if (cyc.empty()) break;
      for (std::size_t i = 0; i < cyc.size(); ++i) {
        const auto a = std::size_t(cyc[i]), b = std::size_t(cyc[(i + 1) % cyc.size()]);
        g[a][b] = g[b][a] = 0;
      }
      out.push_back(std::move(cyc));
    }
    if (int(out.size()) == want) return true;
  }
  out.clear();
  return false;
}

// ---- hierarchical groups -----------------------------------------------------------------------

// Local groups of members, equal in size: from the configured local size (consecutive members),
// else the members of one chip when several share one, else one server (switched) or one 2D
// plane (torus). Empty with the reason in `why` when there are none that fit.
std::vector<std::vector<int>> local_groups(const GroupLayout& layout, int n,
                                           const config::CollectiveParams& params,
                                           std::string& why) {
  std::vector<std::vector<int>> groups;
  const int L = params.hierarchical_local_size;
  if (L > 0) {
    if (L <= 1 || L >= n || n % L != 0) {
      why = fmt::format("hierarchical_local_size {} does not split the {} members into groups of "
                        "2 to {}",
                        L, n, n - 1);
      return {};
    }
    for (int g = 0; g < n / L; ++g) {
      groups.emplace_back();
      for (int l = 0; l < L; ++l) groups.back().push_back(g * L + l);
    }
    return groups;
  }
  const auto chip = chips_of(layout, n);
  const ChipSet cs = chip_set(layout, n);
  std::map<int, std::vector<int>> by;
  std::string level;
  if (cs.chips.size() < std::size_t(n) && cs.chips.size() > 1) {
    level = "chip";
    for (int i = 0; i < n; ++i) by[chip[std::size_t(i)]].push_back(i);
  } else if (layout.tier_chips > 0) {
    level = "server";
    for (int i = 0; i < n; ++i) by[chip[std::size_t(i)] / layout.tier_chips].push_back(i);
  } else if (layout.torus_dims.size() >= 2) {
    level = "torus plane";
    const int plane = layout.torus_dims[0] * layout.torus_dims[1];
    for (int i = 0; i < n; ++i) by[chip[std::size_t(i)] / plane].push_back(i);
  } else {
    why = "the topology has no local level (no servers, planes or shared chips) and "
          "hierarchical_local_size is 0";
    return {};
  }
  for (auto& [k, v] : by) groups.push_back(std::move(v));
  const std::size_t size = groups[0].size();
  const bool equal = std::all_of(groups.begin(), groups.end(),
                                 [&](const auto& g) { return g.size() == size; });
  if (groups.size() < 2 || size < 2 || !equal) {
    why = fmt::format("the {} members do not form at least 2 equal groups of at least 2 per {}",
                      n, level);
    return {};
  }
  return groups;
}

// A ring through `members` (a subset of the group) on one-hop links where there is one.
Ring sub_ring(const GroupLayout& layout, const std::vector<int>& members) {
  GroupLayout sub = layout;
  sub.chip.clear();
  for (int m : members) sub.chip.push_back(layout.chip.empty() ? m : layout.chip[std::size_t(m)]);
  Ring r = physical_ring(sub, int(members.size()));
  if (r.empty()) r = iota_ring(int(members.size()));
  for (int& x : r) x = members[std::size_t(x)];
  return r;
}

// ---- the planner -------------------------------------------------------------------------------

class Planner {
 public:
  Planner(const std::vector<const trace::Op*>& ops, int root, const config::CollectiveParams& p,
          const GroupLayout& layout)
      : ops_(ops), op_(*ops[0]), n_(int(ops.size())), root_(root), p_(p), layout_(layout) {
    sch_.members.assign(std::size_t(n_), {});
  }

  // Member 0 of `replicas` alike members, one per replica (plan_folded).
  Schedule run_folded(int replicas) {
    sch_.algorithm = A::rdh;
    if (replicas > 1) {
      auto& me = sch_.members[0];
      int m = 1;
      while (m * 2 <= replicas) m *= 2;
      const bool extra = m < replicas;  // this member takes an extra replica's data (distance m)
      const std::uint64_t S = op_.bytes;
      const OpKind k = op_.kind;
      // Data-sized pre-step: the extra replica's input arrives and is reduced (gathered).
      const std::uint64_t shard = split(S, m)[0];
      if (extra) {
        Step s;
        if (k == OpKind::all_gather) {
          add_recv(s, -m, split(S, replicas)[std::size_t(m)], false);
        } else {
          add_recv(s, -m, S, true);
        }
        me.push_back(std::move(s));
      }
      std::uint64_t cur = k == OpKind::all_gather ? shard : S;
      if (k != OpKind::all_gather) {
        for (int half = m / 2; half >= 1; half /= 2) {
          const std::uint64_t keep = cur / 2;
          Step s;
          add_send(s, -half, cur - keep);  // the lower member keeps the first half
          add_recv(s, -half, keep, true);
          me.push_back(std::move(s));
          cur = keep;
        }
      }
      if (k != OpKind::reduce_scatter) {
        for (int d = 1; d < m; d *= 2) {
          Step s;
          add_send(s, -d, cur);
          add_recv(s, -d, cur, false);
          me.push_back(std::move(s));
          cur *= 2;
        }
      }
      if (extra) {
        Step s;
        add_send(s, -m, k == OpKind::reduce_scatter ? split(S, replicas)[std::size_t(m)] : S);
        me.push_back(std::move(s));
      }
    }
    chunk();
    handshake();
    costs();
    return std::move(sch_);
  }

  Schedule run() {
    sch_.algorithm = choose_algorithm(op_, n_, p_, layout_, &sch_.notes);
    if (n_ == 1 && op_.kind != OpKind::all_to_all_v) return std::move(sch_);
    switch (op_.kind) {
      case OpKind::all_reduce:
      case OpKind::all_gather:
      case OpKind::reduce_scatter: reduction_family(); break;
      case OpKind::all_to_all:
      case OpKind::all_to_all_v: all_to_all(); break;
      case OpKind::broadcast: broadcast(); break;
      case OpKind::barrier: barrier(); return std::move(sch_);  // semaphores only
      default:
        throw InternalError(fmt::format("plan_collective: {} is not a collective",
                                        trace::kind_name(op_.kind)));
    }
    chunk();
    handshake();
    costs();
    return std::move(sch_);
  }

 private:
  auto& out() { return sch_.members; }
  void note(std::string s) { sch_.notes.push_back(std::move(s)); }
  void fall_back(std::string why) {
    note(fmt::format("{} {} on {} members ran as ring: {}", algorithm_name(sch_.algorithm),
                     trace::kind_name(op_.kind), n_, why));
    sch_.algorithm = A::ring;
  }

  // The ring the ring family and the chain use: a one-hop cycle of the topology where there is
  // one; the members in server order on a switched rack; rank order otherwise.
  Ring base_ring() {
    if (!layout_.neighbours.empty()) {
      Ring r = physical_ring(layout_, n_);
      if (!r.empty()) return r;
      note(fmt::format("no one-hop cycle through the {} members' chips: the ring follows member "
                       "order, with multi-hop steps",
                       n_));
    }
    return iota_ring(n_);
  }

  void reduction_family() {
    const std::uint64_t S = op_.bytes;
    switch (sch_.algorithm) {
      case A::mesh: return mesh();
      case A::rdh: return rdh();
      case A::hierarchical:
        if (hierarchical()) return;
        break;
      case A::torus:
        if (torus()) return;
        break;
      case A::multi_ring:
        if (multi_ring()) return;
        break;
      case A::bidir_ring: {
        const Ring r = base_ring();
        sch_.rings = 2;
        rings_plan(out(), op_.kind, both_ways({r}), S);
        return;
      }
      default: break;
    }
    sch_.rings = 1;
    rings_plan(out(), op_.kind, {base_ring()}, S);
  }

  bool multi_ring() {
    int degree = 0;
    for (const auto& nb : layout_.neighbours) degree = std::max(degree, int(nb.size()));
    const auto cycles = disjoint_rings(layout_, n_, std::max(1, degree / 2));
    if (cycles.empty()) {
      fall_back("no one-hop Hamiltonian cycle through the members' chips");
      return false;
    }
    if (int(cycles.size()) < degree / 2) {
      note(fmt::format("multi_ring on {} members: found {} edge-disjoint one-hop cycles of the {} "
                       "the chips' {} links could hold",
                       n_, cycles.size(), degree / 2, degree));
    }
    const auto rings = both_ways(cycles);
    sch_.rings = int(rings.size());
    rings_plan(out(), op_.kind, rings, op_.bytes);
    return true;
  }

  void mesh() {
    const auto parts = split(op_.bytes, n_);
    const OpKind k = op_.kind;
    for (int i = 0; i < n_; ++i) {
      Step rs, ag;
      // Staggered: in slot k every member sends to i + k, so no destination gets all at once.
      for (int s = 1; s < n_; ++s) {
        const int to = mod(i + s, n_), from = mod(i - s, n_);
        if (k != OpKind::all_gather) {
          add_send(rs, to, parts[std::size_t(to)]);
          add_recv(rs, from, parts[std::size_t(i)], true);
        }
        if (k != OpKind::reduce_scatter) {
          add_send(ag, to, parts[std::size_t(i)]);
          add_recv(ag, from, parts[std::size_t(from)], false);
        }
      }
      if (k != OpKind::all_gather) out()[std::size_t(i)].push_back(std::move(rs));
      if (k != OpKind::reduce_scatter) out()[std::size_t(i)].push_back(std::move(ag));
    }
  }

  void rdh() {
    if (op_.kind == OpKind::all_gather) {
      std::vector<std::uint64_t> cur = split(op_.bytes, n_);
      return doubling(cur);
    }
    std::vector<std::uint64_t> cur(std::size_t(n_), op_.bytes);
    halving(cur);
    if (op_.kind == OpKind::all_reduce) doubling(cur);
  }

  // Recursive halving (reduce-scatter) for all members at once; cur[i] ends as what i owns.
  void halving(std::vector<std::uint64_t>& cur) {
    for (int half = n_ / 2; half >= 1; half /= 2) {
      std::vector<std::uint64_t> next = cur;
      std::vector<Step> steps(static_cast<std::size_t>(n_));
      for (int i = 0; i < n_; ++i) {
        const int p = i ^ half;
        const std::uint64_t keep_lower = cur[std::size_t(i)] / 2;
        // The lower member keeps the first half, the upper one the second.
        const std::uint64_t send = i < p ? cur[std::size_t(i)] - keep_lower : keep_lower;
        next[std::size_t(i)] = cur[std::size_t(i)] - send;
        add_send(steps[std::size_t(i)], p, send);
      }
      for (int i = 0; i < n_; ++i) {
        const int p = i ^ half;
        add_recv(steps[std::size_t(i)], p, cur[std::size_t(p)] - next[std::size_t(p)], true);
        out()[std::size_t(i)].push_back(std::move(steps[std::size_t(i)]));
      }
      cur = next;
    }
  }

  // Recursive doubling (all-gather) for all members at once, nearest partner first.
  void doubling(std::vector<std::uint64_t>& cur) {
    for (int d = 1; d < n_; d *= 2) {
      std::vector<std::uint64_t> next = cur;
      for (int i = 0; i < n_; ++i) {
        const int p = i ^ d;
        Step s;
        add_send(s, p, cur[std::size_t(i)]);
        add_recv(s, p, cur[std::size_t(p)], false);
        next[std::size_t(i)] += cur[std::size_t(p)];
        out()[std::size_t(i)].push_back(std::move(s));
      }
      cur = next;
    }
  }

  // Dimension-ordered: bidirectional rings along X, then Y, then Z (reduce-scatter), and back
  // (all-gather). Every line of a dimension is a one-hop ring of the torus. Sizes are rounded
  // up to whole bytes per member so that every member of a line agrees on them.
  bool torus() {
    const auto& dims = layout_.torus_dims;
    const auto chip = chips_of(layout_, n_);
    int total = 1;
    for (int d : dims) total *= d;
    std::vector<int> member_of(std::size_t(std::max(total, 0)), -1);
    bool whole = !dims.empty() && total == n_;
    for (int i = 0; whole && i < n_; ++i) {
      const int c = chip[std::size_t(i)];
      if (c < 0 || c >= total || member_of[std::size_t(c)] >= 0) whole = false;
      else member_of[std::size_t(c)] = i;
    }
    if (!whole) {
      fall_back(dims.empty() ? "the rack is not a torus"
                             : "the members are not one per chip of the whole torus");
      return false;
    }
    // The line through member i along dimension d, ordered by coordinate.
    auto line = [&](int i, std::size_t d, int& pos) {
      int stride = 1;
      for (std::size_t k = 0; k < d; ++k) stride *= dims[k];
      const int c = chip[std::size_t(i)];
      const int coord = c / stride % dims[d];
      const int base = c - coord * stride;
      Ring r;
      for (int x = 0; x < dims[d]; ++x) r.push_back(member_of[std::size_t(base + x * stride)]);
      pos = coord;
      return r;
    };
    std::vector<std::size_t> order;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] > 1) order.push_back(d);
    }
    sch_.rings = 2;
    // One phase of bidirectional rings along d for every member, `each` bytes per ring chunk.
    auto phase = [&](std::size_t d, std::uint64_t each, bool reduce) {
      const std::vector<std::uint64_t> parts(std::size_t(dims[d]), each);
      for (int i = 0; i < n_; ++i) {
        int pos = 0;
        const Ring r = line(i, d, pos);
        const Ring rev(r.rbegin(), r.rend());
        Steps a, b;
        if (reduce) {
          ring_reduce_scatter(a, r, pos, parts);
          ring_reduce_scatter(b, rev, dims[d] - 1 - pos, parts);
        } else {
          ring_all_gather(a, r, pos, parts, 1);
          ring_all_gather(b, rev, dims[d] - 1 - pos, parts, 1);
        }
        merge_into(a, b);
        for (auto& s : a) out()[std::size_t(i)].push_back(std::move(s));
      }
    };
    std::uint64_t cur = op_.kind == OpKind::all_gather ? ceil_div(op_.bytes, std::uint64_t(n_))
                                                       : op_.bytes;
    std::vector<std::uint64_t> sizes;  // per-ring chunk of each reduce-scatter phase
    if (op_.kind != OpKind::all_gather) {
      for (std::size_t d : order) {
        const std::uint64_t each = ceil_div(cur, 2 * std::uint64_t(dims[d]));
        phase(d, each, true);
        sizes.push_back(each);
        cur = 2 * each;
      }
    }
    if (op_.kind == OpKind::all_reduce) {
      for (std::size_t k = order.size(); k-- > 0;) phase(order[k], sizes[k], false);
    } else if (op_.kind == OpKind::all_gather) {
      for (std::size_t d : order) {
        const std::uint64_t each = ceil_div(cur, 2);
        phase(d, each, false);
        cur = 2 * each * std::uint64_t(dims[d]);
      }
    }
    return true;
  }

  // Within each local group, across the groups (members of the same local index), within again.
  bool hierarchical() {
    std::string why;
    const auto groups = local_groups(layout_, n_, p_, why);
    if (groups.empty()) {
      fall_back(why);
      return false;
    }
    const int G = int(groups.size()), L = int(groups[0].size());
    const std::uint64_t S = op_.bytes;
    // Local rings first; the inter-group ring of position p joins the members at position p of
    // every local ring, which own the same local chunk after the local reduce-scatter.
    std::vector<Ring> local, inter(static_cast<std::size_t>(L));
    for (const auto& g : groups) local.push_back(sub_ring(layout_, g));
    for (int p = 0; p < L; ++p) {
      std::vector<int> across;
      for (const auto& lr : local) across.push_back(lr[std::size_t(p)]);
      inter[std::size_t(p)] = sub_ring(layout_, across);
    }
    for (int g = 0; g < G; ++g) {
      for (int lp = 0; lp < L; ++lp) {
        const Ring& lr = local[std::size_t(g)];
        const Ring& ir = inter[std::size_t(lp)];
        const int i = lr[std::size_t(lp)];
        const int ip = position(ir, i);
        auto& st = out()[std::size_t(i)];
        if (op_.kind == OpKind::all_gather) {
          // Gather the same-position members' blocks across groups, then the local blocks.
          const std::uint64_t block = ceil_div(S, std::uint64_t(n_));
          ring_all_gather(st, ir, ip, std::vector<std::uint64_t>(std::size_t(G), block), 0);
          ring_all_gather(st, lr, lp,
                          std::vector<std::uint64_t>(std::size_t(L), block * std::uint64_t(G)), 0);
          continue;
        }
        const auto lparts = split(S, L);
        ring_reduce_scatter(st, lr, lp, lparts);
        // The member now owns local chunk (lp + 1) mod L; reduce it across the groups.
        const auto iparts = split(lparts[std::size_t(mod(lp + 1, L))], G);
        ring_reduce_scatter(st, ir, ip, iparts);
        if (op_.kind == OpKind::all_reduce) {
          ring_all_gather(st, ir, ip, iparts, 1);
          ring_all_gather(st, lr, lp, lparts, 1);
        }
      }
    }
    sch_.rings = 1;
    return true;
  }

  void all_to_all() {
    const bool v = op_.kind == OpKind::all_to_all_v;
    auto bytes = [&](int from, int to) {
      return v ? ops_[std::size_t(from)]->send_bytes.at(std::size_t(to))
               : split(ops_[std::size_t(from)]->bytes, n_)[std::size_t(to)];
    };
    for (int i = 0; i < n_; ++i) {
      Step s;
      for (int k = 1; k < n_; ++k) {  // staggered peers, as in mesh
        const int to = mod(i + k, n_), from = mod(i - k, n_);
        add_send(s, to, bytes(i, to));
        add_recv(s, from, bytes(from, i), false);
      }
      out()[std::size_t(i)] = {s};
    }
  }

  void broadcast() {
    const std::uint64_t S = op_.bytes;
    if (sch_.algorithm == A::mesh) {
      for (int i = 0; i < n_; ++i) {
        Step s;
        for (int k = 1; k < n_; ++k) {
          if (i == root_) add_send(s, mod(i + k, n_), S);
        }
        if (i != root_) add_recv(s, root_, S, false);
        out()[std::size_t(i)] = {s};
      }
      return;
    }
    if (sch_.algorithm == A::rdh) {
      // Binomial tree rooted at root_member.
      for (int i = 0; i < n_; ++i) {
        const int rel = mod(i - root_, n_);
        for (int d = 1; d < n_; d *= 2) {
          Step s;
          if (rel < d && rel + d < n_) add_send(s, mod(rel + d + root_, n_), S);
          if (rel >= d && rel < 2 * d) add_recv(s, mod(rel - d + root_, n_), S, false);
          out()[std::size_t(i)].push_back(std::move(s));
        }
      }
      return;
    }
    if (sch_.algorithm != A::ring) fall_back("broadcast runs as a pipelined chain");
    // A pipelined chain from the root along the ring; pieces of chunk_bytes let forwarding
    // overlap.
    const Ring ring = base_ring();
    const int rpos = position(ring, root_);
    const std::uint64_t chunk = std::max<std::uint64_t>(1, whole_bytes(p_.chunk_bytes));
    std::vector<std::uint64_t> chunks;
    for (std::uint64_t off = 0; off < S; off += chunk) chunks.push_back(std::min(chunk, S - off));
    for (int q = 0; q < n_; ++q) {
      const int i = ring[std::size_t(q)];
      const int pos = mod(q - rpos, n_);
      const int prev = ring[std::size_t(mod(q - 1, n_))], next = ring[std::size_t(mod(q + 1, n_))];
      auto& st = out()[std::size_t(i)];
      for (std::size_t c = 0; c <= chunks.size(); ++c) {
        Step s;
        if (c > 0 && pos + 1 < n_) add_send(s, next, chunks[c - 1]);
        if (c < chunks.size() && pos > 0) add_recv(s, prev, chunks[c], false);
        if (!s.sends.empty() || !s.recvs.empty()) st.push_back(std::move(s));
      }
    }
    sch_.rings = 1;
  }

  // A dissemination barrier of 8-byte messages.
  void barrier() {
    for (int i = 0; i < n_; ++i) {
      for (int d = 1; d < n_; d *= 2) {
        Step s;
        add_send(s, mod(i + d, n_), 8);
        add_recv(s, mod(i - d, n_), 8, false);
        s.kind = StepKind::sync;
        out()[std::size_t(i)].push_back(std::move(s));
      }
    }
  }

  // Every transfer in pieces of at most chunk_bytes (both ends split alike).
  void chunk() {
    const std::uint64_t c = std::max<std::uint64_t>(1, whole_bytes(p_.chunk_bytes));
    auto pieces = [c](std::vector<Transfer>& ts) {
      std::vector<Transfer> outv;
      for (const auto& t : ts) {
        for (std::uint64_t off = 0; off < t.bytes; off += c) {
          outv.push_back({t.peer, std::min(c, t.bytes - off), t.reduce});
        }
      }
      ts = std::move(outv);
    };
    for (auto& m : out()) {
      for (auto& s : m) {
        pieces(s.sends);
        pieces(s.recvs);
      }
    }
  }

  // Before each data step, each receiver tells its senders that its buffer is ready (a semaphore
  // write over the network); a sender's step waits for that from each of its receivers.
  void handshake() {
    const std::uint64_t b = whole_bytes(p_.sync_bytes);
    if (b == 0) return;
    for (auto& m : out()) {
      Steps with;
      for (auto& s : m) {
        Step sync;
        sync.kind = StepKind::sync;
        std::set<int> seen_r, seen_s;
        for (const auto& t : s.recvs) {
          if (seen_r.insert(t.peer).second) sync.sends.push_back({t.peer, b, false});
        }
        for (const auto& t : s.sends) {
          if (seen_s.insert(t.peer).second) sync.recvs.push_back({t.peer, b, false});
        }
        if (!sync.sends.empty() || !sync.recvs.empty()) with.push_back(std::move(sync));
        with.push_back(std::move(s));
      }
      m = std::move(with);
    }
  }

  void costs() {
    for (auto& m : out()) {
      if (m.empty()) continue;
      m.front().launch_s = p_.launch_latency.si;
      for (auto& s : m) {
        if (s.kind == StepKind::data) s.descriptor_s = p_.descriptor_time.si;
      }
    }
  }

  const std::vector<const trace::Op*>& ops_;
  const trace::Op& op_;
  int n_;
  int root_;
  const config::CollectiveParams& p_;
  const GroupLayout& layout_;
  Schedule sch_;
};

}  // namespace

std::string_view algorithm_name(CollectiveAlgorithm a) { return config::enum_name(a); }

namespace {

// `compute()` once per (member chips, want) when the layout has a cache.
template <class F>
std::vector<std::vector<int>> cached(const GroupLayout& layout, int n, int want, F&& compute) {
  if (!layout.cache) return compute();
  auto key = std::pair{chips_of(layout, n), want};
  const auto it = layout.cache->found.find(key);
  if (it != layout.cache->found.end()) return it->second;
  auto v = compute();
  layout.cache->found.emplace(std::move(key), v);
  return v;
}

Ring search_ring(const GroupLayout& layout, int n) {
  const ChipSet cs = chip_set(layout, n);
  const std::size_t d = cs.chips.size();
  if (d <= 2) {
    std::vector<int> order(d);
    std::iota(order.begin(), order.end(), 0);
    return expand(order, cs);
  }
  if (d > kMaxCycleChips) return {};
  auto adj = chip_graph(layout, cs);
  long budget = kCycleBudget;
  std::vector<int> cycle;
  CycleSearch(adj, budget).run([&](const std::vector<int>& c) {
    cycle = c;
    return true;
  });
  return cycle.empty() ? Ring{} : expand(cycle, cs);
}

std::vector<std::vector<int>> search_disjoint(const GroupLayout& layout, int n, int max_cycles) {
  const ChipSet cs = chip_set(layout, n);
  if (cs.chips.size() <= 2 || cs.chips.size() > kMaxCycleChips) {
    const Ring r = physical_ring(layout, n);
    return r.empty() ? std::vector<std::vector<int>>{} : std::vector<std::vector<int>>{r};
  }
  const auto adj = chip_graph(layout, cs);
  for (int want = max_cycles; want >= 1; --want) {
    std::vector<std::vector<int>> cycles;
    if (disjoint_cycles(adj, want, cycles)) {
      std::vector<std::vector<int>> out;
      for (const auto& c : cycles) out.push_back(expand(c, cs));
      return out;
    }
  }
  return {};
}

}  // namespace

std::vector<int> physical_ring(const GroupLayout& layout, int n) {
  const auto v = cached(layout, n, 0, [&] {
    Ring r = search_ring(layout, n);
    return r.empty() ? std::vector<std::vector<int>>{} : std::vector<std::vector<int>>{r};
  });
  return v.empty() ? Ring{} : v[0];
}

std::vector<std::vector<int>> disjoint_rings(const GroupLayout& layout, int n, int max_cycles) {
  return cached(layout, n, max_cycles, [&] { return search_disjoint(layout, n, max_cycles); });
}

CollectiveAlgorithm choose_algorithm(const trace::Op& op, int n,
                                     const config::CollectiveParams& params,
                                     const GroupLayout& layout, std::vector<std::string>* notes) {
  auto say = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  if (op.kind == OpKind::all_to_all || op.kind == OpKind::all_to_all_v ||
      op.kind == OpKind::barrier) {
    if (params.algorithm != A::auto_ && params.algorithm != A::mesh) {
      say(fmt::format("{} always runs direct (mesh), not {}", trace::kind_name(op.kind),
                      algorithm_name(params.algorithm)));
    }
    return A::mesh;
  }
  A a = params.algorithm;
  if (a == A::auto_) {
    const double s = double(op.bytes);
    if (s < params.mesh_max_bytes.si) return A::mesh;
    if (s < params.rdh_max_bytes.si && power_of_two(n)) return A::rdh;
    // The topology's large-message algorithm.
    if (!layout.torus_dims.empty() && !layout.neighbours.empty()) return A::multi_ring;
    if (layout.switched) {
      std::string why;
      if (!local_groups(layout, n, params, why).empty()) return A::hierarchical;
    }
    return A::ring;
  }
  if (a == A::rdh && !power_of_two(n)) {
    say(fmt::format("rdh {} on {} members ran as ring: {} is not a power of two",
                    trace::kind_name(op.kind), n, n));
    a = A::ring;
  }
  return a;
}

Schedule plan_collective(const std::vector<const trace::Op*>& ops, int root_member,
                         const config::CollectiveParams& params, const GroupLayout& layout) {
  if (ops.empty()) throw InternalError("plan_collective: empty group");
  if (!layout.chip.empty() && layout.chip.size() != ops.size()) {
    throw InternalError("plan_collective: layout.chip does not have one chip per member");
  }
  return Planner(ops, root_member, params, layout).run();
}

Schedule plan_folded(const trace::Op& op, int replicas, const config::CollectiveParams& params) {
  if (op.kind != OpKind::all_reduce && op.kind != OpKind::reduce_scatter &&
      op.kind != OpKind::all_gather) {
    throw InternalError(fmt::format("plan_folded: {} is not folded", trace::kind_name(op.kind)));
  }
  const std::vector<const trace::Op*> ops{&op};
  const GroupLayout none;
  return Planner(ops, 0, params, none).run_folded(replicas);
}

std::vector<std::uint64_t> bytes_sent(const Schedule& s) {
  std::vector<std::uint64_t> out;
  for (const auto& steps : s.members) {
    std::uint64_t b = 0;
    for (const auto& st : steps) {
      if (st.kind != StepKind::data) continue;
      for (const auto& t : st.sends) b += t.bytes;
    }
    out.push_back(b);
  }
  return out;
}

}  // namespace trnsim::replay
