// SPDX-License-Identifier: MIT
#include "trnsim/replay/collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "trnsim/error.hpp"

namespace trnsim::replay {
namespace {

using trace::OpKind;
using Steps = std::vector<Step>;

// `total` split into `n` parts that differ by at most one byte.
std::vector<std::uint64_t> split(std::uint64_t total, int n) {
  std::vector<std::uint64_t> parts(std::size_t(n), total / std::uint64_t(n));
  for (std::uint64_t k = 0; k < total % std::uint64_t(n); ++k) ++parts[k];
  return parts;
}

int mod(int a, int n) { return ((a % n) + n) % n; }

void add_send(Step& s, int peer, std::uint64_t bytes) {
  if (bytes > 0) s.sends.push_back({peer, bytes});
}
void add_recv(Step& s, int peer, std::uint64_t bytes, bool reduce) {
  if (bytes == 0) return;
  s.recvs.push_back({peer, bytes});
  if (reduce) s.reduce_bytes += bytes;
}

// Ring reduce-scatter over `ring` (member indices) as seen by the member at position `pos`;
// parts[k] is the size of chunk k. After it, the member owns reduced chunk (pos + 1) mod m.
void ring_reduce_scatter(Steps& out, const std::vector<int>& ring, int pos,
                         const std::vector<std::uint64_t>& parts) {
  const int m = int(ring.size());
  for (int t = 0; t + 1 < m; ++t) {
    Step s;
    add_send(s, ring[mod(pos + 1, m)], parts[mod(pos - t, m)]);
    add_recv(s, ring[mod(pos - 1, m)], parts[mod(pos - 1 - t, m)], true);
    out.push_back(std::move(s));
  }
}

// Ring all-gather where the member at `pos` starts owning chunk (pos + offset) mod m.
void ring_all_gather(Steps& out, const std::vector<int>& ring, int pos,
                     const std::vector<std::uint64_t>& parts, int offset) {
  const int m = int(ring.size());
  const int owned = pos + offset;
  for (int t = 0; t + 1 < m; ++t) {
    Step s;
    add_send(s, ring[mod(pos + 1, m)], parts[mod(owned - t, m)]);
    add_recv(s, ring[mod(pos - 1, m)], parts[mod(owned - 1 - t, m)], false);
    out.push_back(std::move(s));
  }
}

std::vector<int> iota_ring(int n) {
  std::vector<int> r(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) r[std::size_t(i)] = i;
  return r;
}

// Recursive halving (reduce-scatter) for all members at once; cur[i] ends as what i owns.
void rdh_halving(std::vector<Steps>& out, int n, std::vector<std::uint64_t>& cur) {
  for (int half = n / 2; half >= 1; half /= 2) {
    std::vector<std::uint64_t> next = cur;
    std::vector<Step> steps(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const int p = i ^ half;
      const bool lower = i < p;
      const std::uint64_t keep_lower = cur[std::size_t(i)] / 2;
      // The lower member keeps the first half, the upper one the second.
      const std::uint64_t send = lower ? cur[std::size_t(i)] - keep_lower : keep_lower;
      next[std::size_t(i)] = cur[std::size_t(i)] - send;
      add_send(steps[std::size_t(i)], p, send);
    }
    for (int i = 0; i < n; ++i) {
      const int p = i ^ half;
      const std::uint64_t got = cur[std::size_t(p)] - next[std::size_t(p)];
      add_recv(steps[std::size_t(i)], p, got, true);
    }
    for (int i = 0; i < n; ++i) out[std::size_t(i)].push_back(std::move(steps[std::size_t(i)]));
    cur = next;
  }
}

// Recursive doubling (all-gather) for all members at once, partners at distances `order`.
void rdh_doubling(std::vector<Steps>& out, int n, std::vector<std::uint64_t>& cur,
                  bool small_first) {
  std::vector<int> dists;
  for (int d = 1; d < n; d *= 2) dists.push_back(d);
  if (!small_first) std::reverse(dists.begin(), dists.end());
  for (int d : dists) {
    std::vector<std::uint64_t> next = cur;
    for (int i = 0; i < n; ++i) {
      const int p = i ^ d;
      Step s;
      add_send(s, p, cur[std::size_t(i)]);
      add_recv(s, p, cur[std::size_t(p)], false);
      next[std::size_t(i)] += cur[std::size_t(p)];
      out[std::size_t(i)].push_back(std::move(s));
    }
    cur = next;
  }
}

bool power_of_two(int n) { return n > 0 && std::has_single_bit(unsigned(n)); }

std::uint64_t size_of(const trace::Op& op) { return op.bytes; }

}  // namespace

std::string_view algorithm_name(CollectiveAlgorithm a) { return config::enum_name(a); }

CollectiveAlgorithm choose_algorithm(const trace::Op& op, int n,
                                     const config::CollectiveParams& params, int local_size) {
  using A = CollectiveAlgorithm;
  if (op.kind == OpKind::all_to_all || op.kind == OpKind::all_to_all_v ||
      op.kind == OpKind::barrier) {
    return A::mesh;
  }
  A a = params.algorithm;
  if (a == A::auto_) {
    const double s = double(size_of(op));
    a = s < params.mesh_max_bytes.si ? A::mesh : s < params.rdh_max_bytes.si ? A::rdh : A::ring;
  }
  if (a == A::rdh && !power_of_two(n)) a = A::ring;
  if (a == A::hierarchical && (local_size <= 1 || local_size >= n || n % local_size != 0)) {
    a = A::ring;
  }
  if (a == A::bidir_ring && op.kind == OpKind::broadcast) a = A::ring;
  return a;
}

Schedule plan_collective(const std::vector<const trace::Op*>& ops, int root_member,
                         const config::CollectiveParams& params, int local_size) {
  using A = CollectiveAlgorithm;
  const int n = int(ops.size());
  if (n == 0) throw InternalError("plan_collective: empty group");
  const trace::Op& op = *ops[0];
  Schedule sch;
  sch.algorithm = choose_algorithm(op, n, params, local_size);
  sch.members.assign(std::size_t(n), {});
  auto& out = sch.members;
  if (n == 1 && op.kind != OpKind::all_to_all_v) return sch;
  const std::uint64_t S = op.bytes;
  const auto parts = split(S, n);
  const auto all = iota_ring(n);
  const int L = local_size;

  switch (op.kind) {
    case OpKind::all_reduce:
      if (sch.algorithm == A::mesh) {
        for (int i = 0; i < n; ++i) {
          Step rs, ag;
          for (int j = 0; j < n; ++j) {
            if (j == i) continue;
            add_send(rs, j, parts[std::size_t(j)]);
            add_recv(rs, j, parts[std::size_t(i)], true);
            add_send(ag, j, parts[std::size_t(i)]);
            add_recv(ag, j, parts[std::size_t(j)], false);
          }
          out[std::size_t(i)] = {rs, ag};
        }
      } else if (sch.algorithm == A::rdh) {
        std::vector<std::uint64_t> cur(std::size_t(n), S);
        rdh_halving(out, n, cur);
        rdh_doubling(out, n, cur, true);
      } else if (sch.algorithm == A::bidir_ring) {
        const auto cw = split(S - S / 2, n), ccw = split(S / 2, n);
        for (int i = 0; i < n; ++i) {
          Steps a, b;
          ring_reduce_scatter(a, all, i, cw);
          ring_all_gather(a, all, i, cw, 1);
          // The counter-clockwise ring is the same schedule on the reversed ring.
          std::vector<int> rev(all.rbegin(), all.rend());
          ring_reduce_scatter(b, rev, n - 1 - i, ccw);
          ring_all_gather(b, rev, n - 1 - i, ccw, 1);
          for (std::size_t t = 0; t < a.size(); ++t) {
            for (auto& x : b[t].sends) a[t].sends.push_back(x);
            for (auto& x : b[t].recvs) a[t].recvs.push_back(x);
            a[t].reduce_bytes += b[t].reduce_bytes;
          }
          out[std::size_t(i)] = std::move(a);
        }
      } else if (sch.algorithm == A::hierarchical) {
        const int G = n / L;
        const auto lparts = split(S, L);
        for (int i = 0; i < n; ++i) {
          const int g = i / L, l = i % L;
          std::vector<int> local, inter;
          for (int m = 0; m < L; ++m) local.push_back(g * L + m);
          for (int h = 0; h < G; ++h) inter.push_back(h * L + l);
          auto& st = out[std::size_t(i)];
          ring_reduce_scatter(st, local, l, lparts);
          // Member l now owns local chunk (l + 1) mod L; all-reduce it across the groups
          // with the members that own the same chunk.
          const auto iparts = split(lparts[std::size_t(mod(l + 1, L))], G);
          ring_reduce_scatter(st, inter, g, iparts);
          ring_all_gather(st, inter, g, iparts, 1);
          ring_all_gather(st, local, l, lparts, 1);
        }
      } else {
        for (int i = 0; i < n; ++i) {
          ring_reduce_scatter(out[std::size_t(i)], all, i, parts);
          ring_all_gather(out[std::size_t(i)], all, i, parts, 1);
        }
      }
      break;

    case OpKind::all_gather:
      if (sch.algorithm == A::mesh) {
        for (int i = 0; i < n; ++i) {
          Step s;
          for (int j = 0; j < n; ++j) {
            if (j == i) continue;
            add_send(s, j, parts[std::size_t(i)]);
            add_recv(s, j, parts[std::size_t(j)], false);
          }
          out[std::size_t(i)] = {s};
        }
      } else if (sch.algorithm == A::rdh) {
        std::vector<std::uint64_t> cur = parts;
        rdh_doubling(out, n, cur, true);
      } else {
        // ring; bidirectional and hierarchical all-gather use the plain ring.
        sch.algorithm = A::ring;
        for (int i = 0; i < n; ++i) ring_all_gather(out[std::size_t(i)], all, i, parts, 0);
      }
      break;

    case OpKind::reduce_scatter:
      if (sch.algorithm == A::mesh) {
        for (int i = 0; i < n; ++i) {
          Step s;
          for (int j = 0; j < n; ++j) {
            if (j == i) continue;
            add_send(s, j, parts[std::size_t(j)]);
            add_recv(s, j, parts[std::size_t(i)], true);
          }
          out[std::size_t(i)] = {s};
        }
      } else if (sch.algorithm == A::rdh) {
        std::vector<std::uint64_t> cur(std::size_t(n), S);
        rdh_halving(out, n, cur);
      } else {
        sch.algorithm = A::ring;
        for (int i = 0; i < n; ++i) ring_reduce_scatter(out[std::size_t(i)], all, i, parts);
      }
      break;

    case OpKind::all_to_all:
    case OpKind::all_to_all_v:
      for (int i = 0; i < n; ++i) {
        Step s;
        for (int j = 0; j < n; ++j) {
          if (j == i) continue;
          const std::uint64_t to_j = op.kind == OpKind::all_to_all
                                         ? split(ops[std::size_t(i)]->bytes, n)[std::size_t(j)]
                                         : ops[std::size_t(i)]->send_bytes.at(std::size_t(j));
          const std::uint64_t from_j = op.kind == OpKind::all_to_all
                                           ? split(ops[std::size_t(j)]->bytes, n)[std::size_t(i)]
                                           : ops[std::size_t(j)]->send_bytes.at(std::size_t(i));
          add_send(s, j, to_j);
          add_recv(s, j, from_j, false);
        }
        out[std::size_t(i)] = {s};
      }
      break;

    case OpKind::broadcast: {
      if (sch.algorithm == A::mesh) {
        for (int i = 0; i < n; ++i) {
          Step s;
          if (i == root_member) {
            for (int j = 0; j < n; ++j) {
              if (j != i) add_send(s, j, S);
            }
          } else {
            add_recv(s, root_member, S, false);
          }
          out[std::size_t(i)] = {s};
        }
      } else if (sch.algorithm == A::rdh) {
        // Binomial tree rooted at root_member.
        for (int i = 0; i < n; ++i) {
          const int rel = mod(i - root_member, n);
          for (int d = 1; d < n; d *= 2) {
            Step s;
            if (rel < d && rel + d < n) add_send(s, mod(rel + d + root_member, n), S);
            if (rel >= d && rel < 2 * d) add_recv(s, mod(rel - d + root_member, n), S, false);
            out[std::size_t(i)].push_back(std::move(s));
          }
        }
      } else {
        // Pipelined chain from the root; chunks let forwarding overlap.
        sch.algorithm = A::ring;
        const std::uint64_t chunk = std::max<std::uint64_t>(1, whole_bytes(params.chunk_bytes));
        std::vector<std::uint64_t> chunks;
        for (std::uint64_t off = 0; off < S; off += chunk) chunks.push_back(std::min(chunk, S - off));
        for (int i = 0; i < n; ++i) {
          const int pos = mod(i - root_member, n);
          const int prev = mod(i - 1, n), next = mod(i + 1, n);
          auto& st = out[std::size_t(i)];
          for (std::size_t c = 0; c <= chunks.size(); ++c) {
            Step s;
            if (c > 0 && pos + 1 < n) add_send(s, next, chunks[c - 1]);
            if (c < chunks.size() && pos > 0) add_recv(s, prev, chunks[c], false);
            if (!s.sends.empty() || !s.recvs.empty()) st.push_back(std::move(s));
          }
        }
      }
      break;
    }

    case OpKind::barrier:
      for (int i = 0; i < n; ++i) {
        for (int d = 1; d < n; d *= 2) {
          Step s;
          add_send(s, mod(i + d, n), 8);
          add_recv(s, mod(i - d, n), 8, false);
          out[std::size_t(i)].push_back(std::move(s));
        }
      }
      break;

    default:
      throw InternalError(fmt::format("plan_collective: {} is not a collective",
                                      trace::kind_name(op.kind)));
  }
  return sch;
}

std::vector<std::uint64_t> bytes_sent(const Schedule& s) {
  std::vector<std::uint64_t> out;
  for (const auto& steps : s.members) {
    std::uint64_t b = 0;
    for (const auto& st : steps) {
      for (const auto& t : st.sends) b += t.bytes;
    }
    out.push_back(b);
  }
  return out;
}

}  // namespace trnsim::replay
