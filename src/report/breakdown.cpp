// SPDX-License-Identifier: MIT
// The step breakdown of every rank and the critical path of the slowest (breakdown.hpp).
#include "trnsim/report/breakdown.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"

namespace trnsim::report {

bool is_communication(trace::OpKind k) { return trace::is_collective(k) || trace::is_p2p(k); }

namespace {

std::uint64_t ps(const sc_core::sc_time& t) {
  return std::uint64_t(std::llround(t.to_seconds() * 1e12));
}

enum Activity { kCompute, kComm, kPeers, kActivities };

// Ops that wait for a peer before they communicate: a collective for its last member, a recv
// for its send to start.
bool waits_for_peers(trace::OpKind k) { return trace::is_collective(k) || k == trace::OpKind::recv; }

struct Event {
  std::uint64_t t;
  int delta;  // +1 starts, -1 ends
  Activity what;
  std::size_t op;
};

// The interval of each activity of one op: a collective waits for its last member, and a recv
// for its sender to start the send, then communicates.
void op_events(const trace::Op& op, std::size_t i, std::uint64_t s, std::uint64_t e,
               std::uint64_t last_arrival, std::vector<Event>& out) {
  if (e <= s) return;
  if (!is_communication(op.kind)) {
    out.push_back({s, 1, kCompute, i});
    out.push_back({e, -1, kCompute, i});
    return;
  }
  const std::uint64_t m = waits_for_peers(op.kind) ? std::clamp(last_arrival, s, e) : s;
  if (m > s) {
    out.push_back({s, 1, kPeers, i});
    out.push_back({m, -1, kPeers, i});
  }
  if (e > m) {
    out.push_back({m, 1, kComm, i});
    out.push_back({e, -1, kComm, i});
  }
}

}  // namespace

Breakdown compute_breakdown(const trace::Workload& w, const std::vector<replay::OpRecord>& records,
                            const std::vector<replay::CollectiveRecord>& collectives,
                            const sc_core::sc_time& step) {
  Breakdown b;
  b.step_ps = ps(step);
  std::map<std::pair<std::string, int>, std::uint64_t> arrival;  // (group, k) -> last arrival
  for (const auto& c : collectives) arrival[{c.group, c.sequence}] = ps(c.last_arrival);
  std::vector<std::vector<const replay::OpRecord*>> by_rank(std::size_t(w.num_ranks()));
  for (int r = 0; r < w.num_ranks(); ++r) {
    by_rank[std::size_t(r)].assign(w.ranks[std::size_t(r)].ops.size(), nullptr);
  }
  for (const auto& rec : records) {
    if (rec.rank < 0 || rec.rank >= w.num_ranks() ||
        rec.index >= by_rank[std::size_t(rec.rank)].size()) {
      throw InternalError("breakdown: an op record outside the workload");
    }
    by_rank[std::size_t(rec.rank)][rec.index] = &rec;
  }
  // Sends by (source, destination, tag), as (end, start) in the order they ended: the replay
  // delivers them in that order, and the k-th recv of the key in topological order takes the
  // k-th delivered.
  std::map<std::tuple<int, int, std::int64_t>, std::vector<std::pair<std::uint64_t, std::uint64_t>>>
      sends;
  for (const auto& rec : records) {
    const trace::Op& op = w.ranks[std::size_t(rec.rank)].ops[rec.index];
    if (op.kind == trace::OpKind::send) {
      sends[{rec.rank, op.peer, op.tag}].emplace_back(ps(rec.end), ps(rec.start));
    }
  }
  for (auto& [key, v] : sends) std::sort(v.begin(), v.end());
  // Last arrival of each collective op of rank r: the k-th collective of a group in topological
  // order is instance k, as the replay matches them; for a recv, when its send started.
  auto rank_arrivals = [&](int r) {
    const auto& ops = w.ranks[std::size_t(r)].ops;
    std::vector<std::uint64_t> last(ops.size(), 0);
    std::map<std::string, int> seq;
    std::map<std::tuple<int, int, std::int64_t>, std::size_t> recv_seq;
    for (std::size_t i : trace::topological_order(w.ranks[std::size_t(r)])) {
      if (ops[i].kind == trace::OpKind::recv) {
        const std::tuple<int, int, std::int64_t> key{ops[i].peer, r, ops[i].tag};
        const std::size_t k = recv_seq[key]++;
        const auto it = sends.find(key);
        if (it != sends.end() && k < it->second.size()) last[i] = it->second[k].second;
        continue;
      }
      if (!trace::is_collective(ops[i].kind)) continue;
      const auto it = arrival.find({ops[i].group, seq[ops[i].group]++});
      if (it != arrival.end()) last[i] = it->second;
    }
    return last;
  };
  std::uint64_t slowest_end = 0;
  for (int r = 0; r < w.num_ranks(); ++r) {
    const auto& ops = w.ranks[std::size_t(r)].ops;
    const auto& recs = by_rank[std::size_t(r)];
    const std::vector<std::uint64_t> last_arrival = rank_arrivals(r);
    RankBreakdown rb;
    rb.rank = r;
    std::vector<Event> ev;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!recs[i]) continue;
      const std::uint64_t s = ps(recs[i]->start), e = std::min(ps(recs[i]->end), b.step_ps);
      rb.end_ps = std::max(rb.end_ps, e);
      op_events(ops[i], i, s, e, last_arrival[i], ev);
    }
    std::sort(ev.begin(), ev.end(), [](const Event& a, const Event& c) {
      return std::tie(a.t, a.delta, a.what, a.op) < std::tie(c.t, c.delta, c.what, c.op);
    });
    std::vector<std::string> phase(ops.size());
    std::vector<std::optional<int>> layer(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto p = trace::infer_phase(ops[i]);
      phase[i] = p ? std::string(config::enum_name(*p)) : "unattributed";
      layer[i] = trace::infer_layer(ops[i]);
      if (recs[i]) {
        ++rb.by_phase[phase[i]].ops;
        if (layer[i]) ++rb.by_layer[*layer[i]].ops;
      }
    }
    std::vector<std::vector<std::size_t>> active(kActivities);
    // Credits `dt` of activity `a` in field `f` evenly to the phases and layers of its ops.
    auto share = [&](Activity a, std::uint64_t dt, double Share::*f) {
      const double each = double(dt) / 1e3 / double(active[a].size());
      for (std::size_t i : active[a]) {
        rb.by_phase[phase[i]].*f += each;
        if (layer[i]) rb.by_layer[*layer[i]].*f += each;
      }
    };
    std::uint64_t t = 0;
    auto advance = [&](std::uint64_t to) {
      if (to <= t) return;
      const std::uint64_t dt = to - t;
      const bool comp = !active[kCompute].empty(), comm = !active[kComm].empty();
      if (comp && comm) {
        rb.parts.overlapped_ps += dt;
        share(kCompute, dt, &Share::overlapped_ns);
      } else if (comp) {
        rb.parts.compute_ps += dt;
        share(kCompute, dt, &Share::compute_ns);
      } else if (comm) {
        rb.parts.exposed_ps += dt;
        share(kComm, dt, &Share::exposed_ns);
      } else {
        rb.parts.waiting_ps += dt;
        if (!active[kPeers].empty()) {
          rb.parts.waiting_for_peers_ps += dt;
          share(kPeers, dt, &Share::waiting_for_peers_ns);
        }
      }
      t = to;
    };
    for (const Event& e : ev) {
      advance(e.t);
      auto& a = active[e.what];
      if (e.delta > 0) {
        a.push_back(e.op);
      } else {
        a.erase(std::find(a.begin(), a.end(), e.op));
      }
    }
    advance(b.step_ps);
    if (rb.end_ps > slowest_end || r == 0) {
      slowest_end = rb.end_ps;
      b.slowest_rank = r;
    }
    b.ranks.push_back(std::move(rb));
  }

  // Critical path: back from the slowest rank's last op through the dependency that ended last.
  const int r = b.slowest_rank;
  const auto& ops = w.ranks[std::size_t(r)].ops;
  const auto& recs = by_rank[std::size_t(r)];
  const auto index = trace::index_by_id(w.ranks[std::size_t(r)]);
  constexpr std::size_t kNone = std::size_t(-1);
  std::size_t cur = kNone;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (recs[i] && (cur == kNone || recs[i]->end > recs[cur]->end)) cur = i;
  }
  const std::vector<std::uint64_t> last_arrival = rank_arrivals(r);
  while (cur != kNone) {
    const std::size_t i = cur;
    PathStep st;
    st.index = i;
    st.start_ps = ps(recs[i]->start);
    st.end_ps = ps(recs[i]->end);
    if (waits_for_peers(ops[i].kind) && last_arrival[i] > st.start_ps) {
      st.peers_ps = std::min(last_arrival[i], st.end_ps) - st.start_ps;
    }
    cur = kNone;
    for (trace::OpId d : ops[i].deps) {
      const auto it = index.find(d);
      if (it == index.end() || !recs[it->second]) continue;
      if (cur == kNone || recs[it->second]->end > recs[cur]->end) cur = it->second;
    }
    const std::uint64_t ready = cur != kNone ? ps(recs[cur]->end) : 0;
    st.gap_ps = st.start_ps > ready ? st.start_ps - ready : 0;
    b.critical_path.push_back(st);
  }
  std::reverse(b.critical_path.begin(), b.critical_path.end());
  return b;
}

}  // namespace trnsim::report
