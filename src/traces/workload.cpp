// SPDX-License-Identifier: MIT
#include "trnsim/trace/workload.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <set>

#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"

namespace trnsim::trace {


std::string_view kind_name(OpKind k) { return config::enum_name(k); }

bool is_compute(OpKind k) {
  switch (k) {
    case OpKind::gemm:
    case OpKind::elementwise:
    case OpKind::activation:
    case OpKind::reduction:
    case OpKind::softmax:
    case OpKind::norm:
    case OpKind::attention:
      return true;
    default:
      return false;
  }
}

bool is_collective(OpKind k) {
  switch (k) {
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all:
    case OpKind::all_to_all_v:
    case OpKind::broadcast:
    case OpKind::barrier:
      return true;
    default:
      return false;
  }
}

bool is_p2p(OpKind k) { return k == OpKind::send || k == OpKind::recv; }

namespace {

std::string default_where(const Workload& w, int rank, std::size_t index) {
  const Op& op = w.ranks[rank].ops[index];
  return op.name.empty() ? fmt::format("rank {}, op {}", rank, op.id)
                         : fmt::format("rank {}, op {} ({})", rank, op.id, op.name);
}

Locator resolve(const Workload& w, const Locator& where) {
  if (where) return where;
  return [&w](int rank, std::size_t index) { return default_where(w, rank, index); };
}

std::string op_label(const Op& op) {
  return op.name.empty() ? fmt::format("{}", op.id) : fmt::format("{} ({})", op.id, op.name);
}

}  // namespace

std::string locate(const Workload& w, int rank, std::size_t index) {
  const Op& op = w.ranks[std::size_t(rank)].ops[index];
  if (w.where) return w.where(rank, index, op);
  return op.name.empty() ? fmt::format("rank {} op {}", rank, op.id)
                         : fmt::format("rank {} op {} ({})", rank, op.id, op.name);
}

std::unordered_map<OpId, std::size_t> index_by_id(const RankTrace& rank) {
  std::unordered_map<OpId, std::size_t> index;
  index.reserve(rank.ops.size());
  for (std::size_t i = 0; i < rank.ops.size(); ++i) {
    if (!index.emplace(rank.ops[i].id, i).second) {
      throw TraceError(fmt::format("rank {}: op id {} is used twice", rank.rank, rank.ops[i].id));
    }
  }
  return index;
}

namespace {

// Dependency edges as Kahn's algorithm needs them: per op, how many dependencies have not run
// yet, and which ops use it. Built for every rank several times per run (reading, checking,
// estimating, replaying, reporting), so in a few flat arrays: ids sorted for lookup, and the
// users of op i at users[first[i]] .. users[first[i + 1]] in the order the edges are met.
struct DepGraph {
  std::vector<std::pair<OpId, std::size_t>> by_id;  // (id, position), by id
  std::vector<std::size_t> missing;
  std::vector<std::size_t> first, users;
  static constexpr std::size_t kDropped = std::numeric_limits<std::size_t>::max();

  std::optional<std::size_t> position(OpId id) const {
    const auto it = std::lower_bound(by_id.begin(), by_id.end(), id,
                                     [](const auto& e, OpId v) { return e.first < v; });
    if (it == by_id.end() || it->first != id) return std::nullopt;
    return it->second;
  }
};

DepGraph build_graph(const RankTrace& rank) {
  DepGraph g;
  const std::size_t n = rank.ops.size();
  g.by_id.reserve(n);
  for (std::size_t i = 0; i < n; ++i) g.by_id.emplace_back(rank.ops[i].id, i);
  std::sort(g.by_id.begin(), g.by_id.end());
  for (std::size_t i = 1; i < n; ++i) {
    if (g.by_id[i - 1].first == g.by_id[i].first) index_by_id(rank);  // throws, naming the first
  }
  g.missing.assign(n, 0);
  std::vector<std::size_t> dep_pos;  // position of each edge's dependency, edges in op order
  for (std::size_t i = 0; i < n; ++i) {
    for (OpId d : rank.ops[i].deps) {
      const auto at = g.position(d);
      if (!at) {
        throw TraceError(fmt::format("rank {}: op {} depends on op {}, which the rank does not have",
                                     rank.rank, op_label(rank.ops[i]), d));
      }
      dep_pos.push_back(*at);
      ++g.missing[i];
    }
  }
  g.first.assign(n + 1, 0);
  for (std::size_t p : dep_pos) ++g.first[p + 1];
  for (std::size_t i = 0; i < n; ++i) g.first[i + 1] += g.first[i];
  g.users.resize(dep_pos.size());
  std::vector<std::size_t> fill(g.first.begin(), g.first.end() - 1);
  std::size_t e = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < rank.ops[i].deps.size(); ++k) g.users[fill[dep_pos[e++]]++] = i;
  }
  return g;
}

// Runs Kahn's algorithm (min-heap on file position: deterministic, and the identity on an already
// ordered file) until every op has run or the rest wait on each other.
void run_ready(const DepGraph& g, std::vector<std::size_t>& missing,
               std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>>& ready,
               std::vector<std::size_t>& order) {
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t k = g.first[i]; k < g.first[i + 1]; ++k) {
      const std::size_t u = g.users[k];
      if (u != DepGraph::kDropped && --missing[u] == 0) ready.push(u);
    }
  }
}

// When Kahn's algorithm stalls, every op left has a dependency that is also left: walking those
// edges from any of them must revisit an op, and the walk from that op on is a cycle. Returned in
// run order (each op depends on the one before it, the first on the last).
std::vector<std::size_t> walk_cycle(const RankTrace& rank, const DepGraph& g,
                                    const std::vector<std::size_t>& missing, std::size_t start) {
  std::vector<std::size_t> path;
  std::unordered_map<std::size_t, std::size_t> seen_at;
  std::size_t cur = start;
  while (!seen_at.contains(cur)) {
    seen_at[cur] = path.size();
    path.push_back(cur);
    for (OpId d : rank.ops[cur].deps) {
      const std::size_t j = *g.position(d);
      if (missing[j] != 0) {
        cur = j;
        break;
      }
    }
  }
  std::vector<std::size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(seen_at[cur]),
                                 path.end());
  std::reverse(cycle.begin(), cycle.end());
  return cycle;
}

struct Sorted {
  std::vector<std::size_t> order;
  std::vector<std::size_t> cycle;  // set when order is incomplete
};

// The common case without the graph: ids rising with file position and every dependency naming
// an earlier op of the rank. Kahn's algorithm below then returns the file's order (op i is ready
// once 0..i-1 have run, and is the least ready position), so that is the order; otherwise none,
// and the graph decides (and names what is wrong).
std::optional<std::vector<std::size_t>> file_order(const RankTrace& rank) {
  const auto& ops = rank.ops;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    if (!(ops[i - 1].id < ops[i].id)) return std::nullopt;
  }
  for (const Op& op : ops) {
    for (OpId d : op.deps) {
      if (!(d < op.id)) return std::nullopt;
      const auto it = std::lower_bound(ops.begin(), ops.end(), d,
                                       [](const Op& o, OpId id) { return o.id < id; });
      if (it == ops.end() || it->id != d) return std::nullopt;
    }
  }
  std::vector<std::size_t> order(ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

Sorted sort_ops(const RankTrace& rank) {
  if (auto order = file_order(rank)) return {std::move(*order), {}};
  const DepGraph g = build_graph(rank);
  std::vector<std::size_t> missing = g.missing;
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (missing[i] == 0) ready.push(i);
  }
  Sorted s;
  s.order.reserve(missing.size());
  run_ready(g, missing, ready, s.order);
  if (s.order.size() == missing.size()) return s;
  std::size_t start = 0;
  while (missing[start] == 0) ++start;
  s.cycle = walk_cycle(rank, g, missing, start);
  return s;
}

}  // namespace

std::vector<std::size_t> find_cycle(const RankTrace& rank) { return sort_ops(rank).cycle; }

std::vector<std::pair<std::size_t, OpId>> break_cycles(RankTrace& rank,
                                                       const CycleBreaker& choose) {
  DepGraph g = build_graph(rank);
  std::vector<std::size_t> missing = g.missing;
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    if (missing[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> order;
  std::vector<std::pair<std::size_t, OpId>> dropped;
  std::size_t start = 0;
  for (;;) {
    run_ready(g, missing, ready, order);
    if (order.size() == missing.size()) return dropped;
    while (missing[start] == 0) ++start;
    const auto cycle = walk_cycle(rank, g, missing, start);
    const auto [user, dep] = choose(cycle);
    auto& deps = rank.ops[user].deps;
    const auto it = std::find(deps.begin(), deps.end(), dep);
    if (it == deps.end() || std::find(cycle.begin(), cycle.end(), user) == cycle.end()) {
      throw InternalError("break_cycles: the chosen edge is not in the cycle");
    }
    deps.erase(it);
    const std::size_t at = *g.position(dep);
    const auto from = g.users.begin() + std::ptrdiff_t(g.first[at]);
    const auto to = g.users.begin() + std::ptrdiff_t(g.first[at + 1]);
    *std::find(from, to, user) = DepGraph::kDropped;
    if (--missing[user] == 0) ready.push(user);
    dropped.emplace_back(user, dep);
  }
}

std::vector<std::size_t> topological_order(const RankTrace& rank) {
  Sorted s = sort_ops(rank);
  if (s.cycle.empty()) return std::move(s.order);
  std::string text;
  for (std::size_t i : s.cycle) text += "op " + op_label(rank.ops[i]) + " -> ";
  text += "op " + op_label(rank.ops[s.cycle.front()]);
  throw TraceError(fmt::format("rank {}: dependency cycle: {}", rank.rank, text));
}

double op_flops(const Op& op) {
  if (op.flops) return *op.flops;
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  switch (op.kind) {
    case OpKind::gemm:
      return 2.0 * d(op.m) * d(op.k) * d(op.n) * d(op.batch);
    case OpKind::elementwise:
      return d(op.elements) * d(std::max<std::uint64_t>(1, op.inputs - 1));
    case OpKind::activation:
    case OpKind::reduction:
      return d(op.elements);
    case OpKind::softmax:
      return 5.0 * d(op.elements);  // max, subtract, exp, sum, divide
    case OpKind::norm:
      return 4.0 * d(op.elements);  // square, sum, scale, weight
    case OpKind::attention: {
      // QK^T and PV only, the usual convention (and tools/moe_gen.py's); the softmax between
      // them is small next to the two products.
      const double f = 4.0 * d(op.batch) * d(op.heads) * d(op.seq_q) * d(op.seq_kv) * d(op.head_dim);
      return op.causal ? f / 2.0 : f;
    }
    default:
      return 0.0;
  }
}

double total_flops(const RankTrace& rank) {
  double sum = 0.0;
  for (const auto& op : rank.ops) sum += op_flops(op);
  return sum;
}

double comm_bytes(const Op& op) {
  switch (op.kind) {
    case OpKind::all_to_all_v:
      return std::accumulate(op.send_bytes.begin(), op.send_bytes.end(), 0.0,
                             [](double a, std::uint64_t b) { return a + double(b); });
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_to_all:
    case OpKind::broadcast:
    case OpKind::send:
    case OpKind::mem_load:
    case OpKind::mem_store:
      return static_cast<double>(op.bytes);
    default:
      return 0.0;
  }
}

void check_structure(const Workload& w, const Locator& where_in) {
  const Locator where = resolve(w, where_in);
  if (w.version != 1) {
    throw TraceError(fmt::format("unsupported trace version {} (expected 1)", w.version));
  }
  if (w.ranks.empty()) throw TraceError("the workload has no ranks");
  for (int r = 0; r < w.num_ranks(); ++r) {
    const RankTrace& rank = w.ranks[r];
    if (rank.rank != r) {
      throw InternalError(fmt::format("ranks[{}] holds rank {}", r, rank.rank));
    }
    std::unordered_map<OpId, std::size_t> index;
    for (std::size_t i = 0; i < rank.ops.size(); ++i) {
      if (auto [it, fresh] = index.emplace(rank.ops[i].id, i); !fresh) {
        throw TraceError(fmt::format("{}: id {} is already used by {}", where(r, i),
                                     rank.ops[i].id, where(r, it->second)));
      }
    }
    for (std::size_t i = 0; i < rank.ops.size(); ++i) {
      const Op& op = rank.ops[i];
      for (OpId d : op.deps) {
        if (!index.contains(d)) {
          throw TraceError(fmt::format("{}: depends on op {}, which rank {} does not have",
                                       where(r, i), d, r));
        }
      }
      const auto positive = [&](std::uint64_t v, std::string_view field) {
        if (v == 0) {
          throw TraceError(fmt::format("{}: {} \"{}\" must be at least 1", where(r, i),
                                       kind_name(op.kind), field));
        }
      };
      if (op.kind == OpKind::gemm) {
        positive(op.m, "m");
        positive(op.k, "k");
        positive(op.n, "n");
      } else if (op.kind == OpKind::mem_load || op.kind == OpKind::mem_store) {
        positive(op.bytes, "bytes");  // a copy of nothing has no program to run
      } else if (op.kind == OpKind::attention) {
        positive(op.batch, "batch");
        positive(op.heads, "heads");
        positive(op.seq_q, "seq_q");
        positive(op.seq_kv, "seq_kv");
        positive(op.head_dim, "head_dim");
      }
      if (op.kind == OpKind::delay && !(op.duration.si >= 0.0)) {
        throw TraceError(fmt::format("{}: delay duration must not be negative", where(r, i)));
      }
      // Bounds that keep the models' integer arithmetic from overflowing and a run finite: no
      // dimension above 2^40, no transfer above 2^50 B (1 PiB), no delay beyond simulated time.
      const auto bounded = [&](std::uint64_t v, std::string_view field, std::uint64_t max,
                               std::string_view max_text) {
        if (v > max) {
          throw TraceError(fmt::format("{}: {} \"{}\" is {}; expected at most {}", where(r, i),
                                       kind_name(op.kind), field, v, max_text));
        }
      };
      constexpr std::uint64_t kMaxDim = std::uint64_t(1) << 40;
      using Dim = std::pair<std::uint64_t, const char*>;
      for (const auto& [v, field] : std::initializer_list<Dim>{
               {op.m, "m"}, {op.k, "k"}, {op.n, "n"}, {op.batch, "batch"},
               {op.elements, "elements"}, {op.inputs, "inputs"}, {op.outputs, "outputs"},
               {op.rows, "rows"}, {op.heads, "heads"}, {op.seq_q, "seq_q"},
               {op.seq_kv, "seq_kv"}, {op.head_dim, "head_dim"}}) {
        bounded(v, field, kMaxDim, "2^40");
      }
      constexpr std::uint64_t kMaxTransfer = std::uint64_t(1) << 50;
      bounded(op.bytes, "bytes", kMaxTransfer, "2^50 (1 PiB)");
      for (auto b : op.send_bytes) bounded(b, "send_bytes", kMaxTransfer, "2^50 (1 PiB)");
      if (op.tensor_bytes) bounded(*op.tensor_bytes, "tensor_bytes", kMaxTransfer, "2^50 (1 PiB)");
      if (op.duration.si > config::kMaxDurationSeconds) {
        throw TraceError(fmt::format("{}: duration {} is beyond the {} s a run may simulate",
                                     where(r, i), format(op.duration),
                                     config::kMaxDurationSeconds));
      }
      // A product of in-range dimensions can still be more work than any run could simulate.
      if (const double f = op_flops(op); !(f <= 1e21)) {
        throw TraceError(fmt::format("{}: {} is {:.3g} FLOP; expected at most 1e21 (a million "
                                     "seconds of a 1 PFLOP/s chip)",
                                     where(r, i), kind_name(op.kind), f));
      }
    }
    if (const auto cycle = find_cycle(rank); !cycle.empty()) {
      std::string text;
      for (std::size_t i : cycle) text += "op " + op_label(rank.ops[i]) + " -> ";
      text += "op " + op_label(rank.ops[cycle.front()]);
      throw TraceError(fmt::format("{}: dependency cycle: {}", where(r, cycle.front()), text));
    }
  }
}

void check_groups(const Workload& w, const Locator& where_in) {
  const Locator where = resolve(w, where_in);
  for (const auto& [name, members] : w.groups) {
    if (members.empty()) throw TraceError(fmt::format("group \"{}\" has no members", name));
    std::set<int> seen;
    for (int m : members) {
      if (m < 0 || m >= w.num_ranks()) {
        throw TraceError(fmt::format("group \"{}\": rank {} is out of range (ranks are 0..{})",
                                     name, m, w.num_ranks() - 1));
      }
      if (!seen.insert(m).second) {
        throw TraceError(fmt::format("group \"{}\": rank {} is listed twice", name, m));
      }
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, members] : w.groups) names.push_back(name);
  for (int r = 0; r < w.num_ranks(); ++r) {
    const auto& ops = w.ranks[r].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (is_p2p(op.kind)) {
        if (op.peer < 0 || op.peer >= w.num_ranks() || op.peer == r) {
          throw TraceError(fmt::format("{}: {} peer {} is not another rank (ranks are 0..{})",
                                       where(r, i), kind_name(op.kind), op.peer,
                                       w.num_ranks() - 1));
        }
        continue;
      }
      if (!is_collective(op.kind)) continue;
      auto g = w.groups.find(op.group);
      if (g == w.groups.end()) {
        const auto near = config::nearest_key(op.group, names);
        throw TraceError(fmt::format("{}: unknown group \"{}\"{}", where(r, i), op.group,
                                     near.empty() ? "" : fmt::format("; did you mean \"{}\"?", near)));
      }
      const auto& members = g->second;
      if (std::find(members.begin(), members.end(), r) == members.end()) {
        throw TraceError(fmt::format("{}: rank {} is not a member of group \"{}\"", where(r, i), r,
                                     op.group));
      }
      if (op.kind == OpKind::all_to_all_v && op.send_bytes.size() != members.size()) {
        throw TraceError(fmt::format("{}: send_bytes has {} entries but group \"{}\" has {} members",
                                     where(r, i), op.send_bytes.size(), op.group, members.size()));
      }
      if (op.kind == OpKind::broadcast &&
          std::find(members.begin(), members.end(), op.root) == members.end()) {
        throw TraceError(fmt::format("{}: broadcast root {} is not a member of group \"{}\"",
                                     where(r, i), op.root, op.group));
      }
    }
  }
}

void check_collectives(const Workload& w, const Locator& where_in) {
  const Locator where = resolve(w, where_in);
  // Per group, per member: indices of its collectives on that group in issue order.
  std::map<std::string, std::map<int, std::vector<std::size_t>>> issued;
  for (int r = 0; r < w.num_ranks(); ++r) {
    for (std::size_t i : topological_order(w.ranks[r])) {
      const Op& op = w.ranks[r].ops[i];
      if (is_collective(op.kind)) issued[op.group][r].push_back(i);
    }
  }
  for (const auto& [group, members] : w.groups) {
    auto it = issued.find(group);
    if (it == issued.end()) continue;
    auto& per_rank = it->second;
    std::size_t most = 0;
    for (int m : members) most = std::max(most, per_rank[m].size());
    for (std::size_t k = 0; k < most; ++k) {
      std::vector<int> have, lack;
      for (int m : members) (per_rank[m].size() > k ? have : lack).push_back(m);
      if (!lack.empty()) {
        const int r0 = have.front();
        throw TraceError(fmt::format(
            "group \"{}\": collective #{} ({} at {}) is issued by ranks [{}] but never by ranks "
            "[{}]; the replay would wait for them forever",
            group, k, kind_name(w.ranks[r0].ops[per_rank[r0][k]].kind), where(r0, per_rank[r0][k]),
            fmt::join(have, ", "), fmt::join(lack, ", ")));
      }
      const int r0 = members.front();
      const Op& a = w.ranks[r0].ops[per_rank[r0][k]];
      for (int m : members) {
        const Op& b = w.ranks[m].ops[per_rank[m][k]];
        std::string what;
        if (a.kind != b.kind) {
          what = fmt::format("{} vs {}", kind_name(a.kind), kind_name(b.kind));
        } else if (a.kind != OpKind::all_to_all_v && a.kind != OpKind::barrier &&
                   a.bytes != b.bytes) {
          what = fmt::format("bytes {} vs {}", a.bytes, b.bytes);
        } else if (a.kind == OpKind::all_to_all_v && a.send_bytes.size() != b.send_bytes.size()) {
          what = fmt::format("send_bytes length {} vs {}", a.send_bytes.size(),
                             b.send_bytes.size());
        } else if (a.kind == OpKind::broadcast && a.root != b.root) {
          what = fmt::format("root {} vs {}", a.root, b.root);
        }
        if (!what.empty()) {
          throw TraceError(fmt::format(
              "group \"{}\": collective #{} does not match between ranks {} and {}: {} ({} / {})",
              group, k, r0, m, what, where(r0, per_rank[r0][k]), where(m, per_rank[m][k])));
        }
      }
    }
  }
}

void check_send_recv(const Workload& w, const Locator& where_in) {
  const Locator where = resolve(w, where_in);
  struct Key {
    int src, dst;
    std::int64_t tag;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, std::vector<std::pair<int, std::size_t>>> sends, recvs;
  for (int r = 0; r < w.num_ranks(); ++r) {
    for (std::size_t i : topological_order(w.ranks[r])) {
      const Op& op = w.ranks[r].ops[i];
      if (op.kind == OpKind::send) sends[{r, op.peer, op.tag}].emplace_back(r, i);
      if (op.kind == OpKind::recv) recvs[{op.peer, r, op.tag}].emplace_back(r, i);
    }
  }
  auto unmatched = [&](const Key& key, const std::vector<std::pair<int, std::size_t>>& list,
                       std::size_t k, bool is_send) {
    const auto [r, i] = list[k];
    throw TraceError(fmt::format(
        "{}: {} #{} {} rank {} (tag {}) has no matching {} on rank {}; the replay would wait "
        "for it forever",
        where(r, i), is_send ? "send" : "recv", k, is_send ? "to" : "from",
        is_send ? key.dst : key.src, key.tag, is_send ? "recv" : "send",
        is_send ? key.dst : key.src));
  };
  for (const auto& [key, list] : sends) {
    const auto& other = recvs[key];
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (k >= other.size()) unmatched(key, list, k, true);
      const Op& s = w.ranks[list[k].first].ops[list[k].second];
      const Op& v = w.ranks[other[k].first].ops[other[k].second];
      if (s.bytes != v.bytes) {
        throw TraceError(fmt::format("{}: send #{} of {} bytes is received as {} bytes by {}",
                                     where(list[k].first, list[k].second), k, s.bytes, v.bytes,
                                     where(other[k].first, other[k].second)));
      }
    }
  }
  for (const auto& [key, list] : recvs) {
    const auto it = sends.find(key);
    const std::size_t have = it == sends.end() ? 0 : it->second.size();
    if (list.size() > have) unmatched(key, list, have, false);
  }
}

void validate(const Workload& w, const Locator& where) {
  check_structure(w, where);
  check_groups(w, where);
  check_collectives(w, where);
  check_send_recv(w, where);
}

namespace {
std::string si(double v, std::string_view unit) { return format_si(v, unit, 4); }
}  // namespace

namespace {

// What describe() and describe_json() report, counted once.
struct Totals {
  std::size_t ops = 0;
  std::map<std::string_view, std::size_t> by_kind;
  double flops = 0.0, matmul = 0.0, comm = 0.0, mem = 0.0, delay = 0.0, max_flops = 0.0;
};

Totals totals_of(const Workload& w) {
  Totals t;
  for (const auto& rank : w.ranks) {
    t.ops += rank.ops.size();
    const double f = total_flops(rank);
    t.flops += f;
    t.max_flops = std::max(t.max_flops, f);
    for (const auto& op : rank.ops) {
      ++t.by_kind[kind_name(op.kind)];
      if (op.kind == OpKind::gemm || op.kind == OpKind::attention) t.matmul += op_flops(op);
      if (op.kind == OpKind::mem_load || op.kind == OpKind::mem_store) {
        t.mem += comm_bytes(op);
      } else {
        t.comm += comm_bytes(op);
      }
      if (op.kind == OpKind::delay) t.delay += op.duration.si;
    }
  }
  return t;
}

}  // namespace

Json describe_json(const Workload& w) {
  const Totals t = totals_of(w);
  Json kinds = Json::object(), groups = Json::object();
  for (const auto& [kind, count] : t.by_kind) kinds[std::string(kind)] = count;
  for (const auto& [name, members] : w.groups) groups[name] = members.size();
  Json coverage;
  if (w.coverage) {
    const OperatorCoverage& c = *w.coverage;
    coverage = {{"kernels", c.kernels}, {"mapped", c.mapped},
                {"recorded_s", c.recorded_seconds}, {"mapped_s", c.mapped_seconds},
                {"unmapped_scale", c.unmapped_scale}};
  }
  Json warnings = Json::array();
  for (const auto& x : w.warnings) warnings.push_back(x);
  return {{"name", w.name}, {"ranks", w.num_ranks()}, {"ops", t.ops}, {"ops_by_kind", kinds},
          {"groups", groups}, {"flops", t.flops}, {"matmul_flops", t.matmul},
          {"busiest_rank_flops", t.max_flops}, {"communication_bytes", t.comm},
          {"memory_bytes", t.mem}, {"delay_s", t.delay},
          {"units", w.units.empty() ? Json() : Json(w.units)}, {"coverage", coverage},
          {"warnings", warnings}};
}

std::string describe(const Workload& w) {
  std::string out;
  const Totals t = totals_of(w);
  const std::size_t total_ops = t.ops;
  const auto& by_kind = t.by_kind;
  const double flops = t.flops, matmul = t.matmul, comm = t.comm, mem = t.mem, delay = t.delay,
               max_flops = t.max_flops;
  out += fmt::format("workload {}: {} ranks, {} ops\n", w.name.empty() ? "(unnamed)" : w.name,
                     w.num_ranks(), total_ops);
  out += "ops by kind:";
  for (const auto& [kind, count] : by_kind) out += fmt::format(" {} {},", kind, count);
  if (!by_kind.empty()) out.pop_back();
  out += "\n";
  out += fmt::format("groups: {}", w.groups.size());
  std::size_t shown = 0;
  for (const auto& [name, members] : w.groups) {
    if (shown++ == 8) {
      out += " ...";
      break;
    }
    out += fmt::format(" {}[{}]", name, members.size());
  }
  out += "\n";
  out += fmt::format("compute: {} total ({} in gemm/attention), {} on the busiest rank\n",
                     si(flops, "FLOP"), si(matmul, "FLOP"), si(max_flops, "FLOP"));
  out += fmt::format("communication: {} sent; memory traffic: {}; delays: {}\n", si(comm, "B"),
                     si(mem, "B"), si(delay, "s"));
  if (!w.units.empty()) out += fmt::format("units: {}\n", w.units);
  if (w.coverage) out += w.coverage->describe();
  if (!w.warnings.empty()) out += fmt::format("warnings: {}\n", w.warnings.size());
  return out;
}

}  // namespace trnsim::trace
