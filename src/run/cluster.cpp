// SPDX-License-Identifier: MIT
// A cluster's workload: collectives across UltraServers split into levels, replicas folded or
// expanded (trnsim/run/cluster.hpp).
#include "trnsim/run/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <type_traits>

#include "trnsim/error.hpp"

namespace trnsim::run {

using trace::Op;
using trace::OpKind;

bool is_replica_group(const std::string& group, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes) {
    if (group.size() <= p.size() || group.compare(0, p.size(), p) != 0) continue;
    if (std::all_of(group.begin() + std::ptrdiff_t(p.size()), group.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      return true;
    }
  }
  return false;
}

namespace {

std::string cross_group(const std::string& g, int member) { return fmt::format("{}.x{}", g, member); }

// Whether `g` is a group across replicas that split_levels() made (cross_group()).
bool is_cross_group(const std::string& g, const std::vector<std::string>& prefixes) {
  const auto at = g.rfind(".x");
  return at != std::string::npos && is_replica_group(g.substr(0, at), prefixes);
}

// The replica's ranks with each collective across the UltraServers split into its levels, and
// the cross groups (one member: this replica's) they use.
trace::Workload split_levels(const trace::Workload& w, const config::ClusterParams& cl,
                             int& split) {
  trace::Workload out;
  out.version = w.version;
  out.name = w.name;
  out.metadata = w.metadata;
  out.groups = w.groups;
  out.warnings = w.warnings;
  split = 0;
  for (const auto& rank : w.ranks) {
    trace::RankTrace rt;
    rt.rank = rank.rank;
    trace::OpId next = 0;
    for (const Op& op : rank.ops) next = std::max(next, op.id);
    if (next > std::numeric_limits<trace::OpId>::max() - 2 * rank.ops.size() - 2) {
      throw WorkloadError(fmt::format("rank {}: op ids up to {} leave no room for the levels of "
                                      "collectives across UltraServers",
                                      rank.rank, next));
    }
    ++next;
    for (const Op& op : rank.ops) {
      if (!trace::is_collective(op.kind) || !is_replica_group(op.group, cl.replica_groups)) {
        rt.ops.push_back(op);
        continue;
      }
      if (op.kind != OpKind::all_reduce && op.kind != OpKind::reduce_scatter &&
          op.kind != OpKind::all_gather) {
        throw WorkloadError(fmt::format(
            "rank {} op {} (\"{}\"): {} on group \"{}\" spans the UltraServers "
            "(/cluster/replica_groups); only all_reduce, reduce_scatter and all_gather run "
            "across them",
            rank.rank, op.id, op.name, trace::kind_name(op.kind), op.group));
      }
      const auto& members = w.groups.at(op.group);
      const auto pos = std::find(members.begin(), members.end(), rank.rank);
      if (pos == members.end()) {
        throw TraceError(fmt::format("rank {} op {} uses group \"{}\" it is not a member of",
                                     rank.rank, op.id, op.group));
      }
      const int L = int(members.size()), i = int(pos - members.begin());
      // The member's chunk of the group's data, as the planners split it.
      const std::uint64_t chunk = op.bytes / std::uint64_t(L) +
                                  (std::uint64_t(i) < op.bytes % std::uint64_t(L) ? 1 : 0);
      std::vector<Op> chain;
      auto level = [&](OpKind k, std::string group, std::uint64_t bytes, const char* suffix) {
        Op x = op;
        x.kind = k;
        x.group = std::move(group);
        x.bytes = bytes;
        x.name = op.name + suffix;
        // A level is part of its parent: it takes the parent's phase, layer and micro-batch
        // (from the trace's fields, or the bundled generator's names), which its own name, with
        // the level's suffix, no longer gives.
        x.phase = trace::infer_phase(op);
        x.layer = trace::infer_layer(op);
        x.micro_batch = trace::infer_micro_batch(op);
        chain.push_back(std::move(x));
      };
      const bool local = L > 1,
                 across = cl.ultraservers / cl.ultraservers_per_replica > 1;
      const std::string xg = cross_group(op.group, i);
      if (op.kind == OpKind::all_gather) {
        if (across) level(OpKind::all_gather, xg, chunk, ".cross");
        if (local) level(OpKind::all_gather, op.group, op.bytes, ".local");
      } else {
        if (local) level(OpKind::reduce_scatter, op.group, op.bytes, ".local_rs");
        if (across) level(op.kind, xg, chunk, ".cross");
        if (local && op.kind == OpKind::all_reduce) {
          level(OpKind::all_gather, op.group, op.bytes, ".local_ag");
        }
      }
      if (across) out.groups[xg] = {rank.rank};
      // The chain's last op keeps the op's id (what depends on the op waits for all of it).
      for (std::size_t k = 0; k < chain.size(); ++k) {
        Op& x = chain[k];
        if (k > 0) x.deps = {chain[k - 1].id};
        x.id = k + 1 == chain.size() ? op.id : next++;
        rt.ops.push_back(x);
      }
      ++split;
    }
    out.ranks.push_back(std::move(rt));
  }
  return out;
}

}  // namespace

ClusterWorkload make_cluster_workload(const trace::Workload& replica,
                                      const config::ClusterParams& cl) {
  ClusterWorkload cw;
  const int replicas = cl.ultraservers / cl.ultraservers_per_replica;
  cw.replicas = replicas;
  cw.ranks_per_replica = replica.num_ranks();
  // A trace made for another data-parallel degree has optimizer shards of another size. The
  // bundled generator (tools/moe_gen.py) writes /metadata/parallelism/replicas only above 1: a
  // trace of it without the key was made for one replica.
  using Json = std::decay_t<decltype(replica.metadata)>;
  const Json* p = replica.metadata.is_object() && replica.metadata.contains("parallelism")
                      ? &replica.metadata["parallelism"]
                      : nullptr;
  const bool generated = replica.metadata.is_object() &&
                         replica.metadata.value("generator", Json()) == "tools/moe_gen.py";
  std::optional<std::int64_t> made_for;
  if (p && p->is_object() && p->contains("replicas") && (*p)["replicas"].is_number_integer()) {
    made_for = (*p)["replicas"].get<std::int64_t>();
  } else if (p && p->is_object() && generated) {
    made_for = 1;
  }
  if (made_for && *made_for != replicas) {
    throw WorkloadError(fmt::format(
        "workload {} was generated for {} data-parallel replica{} (/metadata/parallelism/"
        "replicas{}); the cluster holds {} ({} UltraServers, {} per replica): generate it with "
        "`tools/moe_gen.py ... --replicas {}`, or run it on a rack preset (`trnsim presets`)",
        replica.name, *made_for, *made_for == 1 ? "" : "s",
        p->contains("replicas") ? "" : " absent: one", replicas, cl.ultraservers,
        cl.ultraservers_per_replica, replicas));
  }
  trace::Workload one = split_levels(replica, cl, cw.collectives_split);
  const bool folded = cl.fold || replicas == 1;
  if (folded) {
    for (const auto& [g, members] : one.groups) {
      if (replicas > 1 && is_cross_group(g, cl.replica_groups)) {
        cw.scale_out.folded[g] = replicas;
      }
    }
    cw.workload = std::move(one);
    return cw;
  }
  // Unfolded: every replica, ranks replica by replica; groups within a replica copied per
  // replica, the cross groups joined across them.
  const int N = replicas, R = one.num_ranks();
  cw.simulated_replicas = N;
  trace::Workload& all = cw.workload;
  all.version = one.version;
  all.name = one.name;
  all.metadata = one.metadata;
  all.warnings = one.warnings;
  auto is_cross = [&](const std::string& g) { return is_cross_group(g, cl.replica_groups); };
  for (const auto& [g, members] : one.groups) {
    if (is_cross(g)) {
      std::vector<int> m;
      for (int u = 0; u < N; ++u) m.push_back(u * R + members.at(0));
      all.groups[g] = std::move(m);
      cw.scale_out.unfolded.insert(g);
      continue;
    }
    for (int u = 0; u < N; ++u) {
      std::vector<int> m;
      for (int r : members) m.push_back(u * R + r);
      all.groups[fmt::format("{}@{}", g, u)] = std::move(m);
    }
  }
  for (int u = 0; u < N; ++u) {
    for (const auto& rank : one.ranks) {
      trace::RankTrace rt;
      rt.rank = u * R + rank.rank;
      rt.ops = rank.ops;
      for (Op& op : rt.ops) {
        if (op.kind == OpKind::send || op.kind == OpKind::recv) op.peer += u * R;
        if (trace::is_collective(op.kind) && !is_cross(op.group)) {
          op.group = fmt::format("{}@{}", op.group, u);
        }
        if (op.kind == OpKind::broadcast) op.root += u * R;
      }
      all.ranks.push_back(std::move(rt));
    }
  }
  return cw;
}

std::vector<int> cluster_placement(const ClusterWorkload& cw, const std::vector<int>& replica_chips,
                                   int chips) {
  std::vector<int> out;
  for (int u = 0; u < cw.simulated_replicas; ++u) {
    for (int r = 0; r < cw.ranks_per_replica; ++r) {
      out.push_back(u * chips + replica_chips.at(std::size_t(r)));
    }
  }
  return out;
}

}  // namespace trnsim::run
