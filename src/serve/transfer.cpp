// SPDX-License-Identifier: MIT
#include "trnsim/serve/transfer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "trnsim/error.hpp"
#include "trnsim/infer/memory.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/run/run.hpp"

namespace trnsim::serve {

int TransferNet::add_link(double capacity) {
  if (!(capacity > 0)) throw InternalError("TransferNet: a link's capacity must be positive");
  capacity_.push_back(capacity);
  return int(capacity_.size()) - 1;
}

std::vector<std::uint64_t> TransferNet::set_capacity(int link, double capacity, double now) {
  if (link < 0 || std::size_t(link) >= capacity_.size()) throw InternalError("TransferNet: no such link");
  if (!(capacity > 0)) throw InternalError("TransferNet: a link's capacity must be positive");
  std::vector<std::uint64_t> done = advance(now);
  capacity_[std::size_t(link)] = capacity;
  share();
  return done;
}

int TransferNet::on_link(int link) const {
  int n = 0;
  for (const Flow& f : flows_) n += std::find(f.links.begin(), f.links.end(), link) != f.links.end();
  return n;
}

void TransferNet::start(std::uint64_t key, double size, const std::vector<int>& links, double now) {
  if (links.empty()) throw InternalError("TransferNet: a transfer needs a link");
  for (int l : links) {
    if (l < 0 || std::size_t(l) >= capacity_.size()) throw InternalError("TransferNet: no such link");
  }
  advance(now);
  flows_.push_back({key, size, size, 0, links});
  share();
}

std::vector<std::uint64_t> TransferNet::advance(double now) {
  const double dt = std::max(0.0, now - now_);
  now_ = std::max(now_, now);
  std::vector<std::uint64_t> done;
  std::vector<Flow> keep;
  for (Flow& f : flows_) {
    f.left -= f.rate * dt;
    // Done when what is left is rounding (the engine advances to the instant next_done() gave).
    if (f.left <= 1e-9 * f.size) {
      done.push_back(f.key);
    } else {
      keep.push_back(std::move(f));
    }
  }
  flows_ = std::move(keep);
  if (!done.empty()) share();
  return done;
}

double TransferNet::next_done() const {
  double t = std::numeric_limits<double>::infinity();
  for (const Flow& f : flows_) t = std::min(t, now_ + f.left / f.rate);
  return t;
}

double TransferNet::rate(std::uint64_t key) const {
  for (const Flow& f : flows_) {
    if (f.key == key) return f.rate;
  }
  return 0;
}

void TransferNet::share() {
  // Progressive filling: the link with the smallest fair share (capacity left over the
  // transfers on it not yet fixed) fixes them at that share; repeat on what is left.
  std::vector<double> left = capacity_;
  std::vector<bool> fixed(flows_.size(), false);
  std::size_t n_fixed = 0;
  while (n_fixed < flows_.size()) {
    std::vector<int> count(capacity_.size(), 0);
    for (std::size_t i = 0; i < flows_.size(); ++i) {
      if (fixed[i]) continue;
      for (int l : flows_[i].links) ++count[std::size_t(l)];
    }
    int best = -1;
    double best_share = 0;
    for (std::size_t l = 0; l < capacity_.size(); ++l) {
      if (count[l] == 0) continue;
      const double s = std::max(0.0, left[l]) / count[l];
      if (best < 0 || s < best_share) {
        best = int(l);
        best_share = s;
      }
    }
    for (std::size_t i = 0; i < flows_.size(); ++i) {
      if (fixed[i]) continue;
      const auto& ls = flows_[i].links;
      if (std::find(ls.begin(), ls.end(), best) == ls.end()) continue;
      fixed[i] = true;
      ++n_fixed;
      flows_[i].rate = best_share;
      for (int l : ls) left[std::size_t(l)] -= best_share;
    }
  }
}

trace::Workload kv_handoff_workload(const infer::IterationSpec& prefill,
                                    const infer::IterationSpec& decode, std::uint64_t tokens,
                                    int decode_first) {
  const infer::Layout &lp = prefill.layout, &ld = decode.layout;
  const int np = lp.ranks(), nd = ld.ranks();
  if (decode_first < np) throw InternalError("kv_handoff_workload: the pools' ranks overlap");
  trace::Workload w;
  w.name = lp.text() == ld.text()
               ? fmt::format("{} {} KV transfer of {} tokens", decode.model.name, lp.text(), tokens)
               : fmt::format("{} {} to {} KV transfer of {} tokens", decode.model.name, lp.text(),
                             ld.text(), tokens);
  w.ranks.resize(std::size_t(decode_first + nd));
  for (std::size_t r = 0; r < w.ranks.size(); ++r) w.ranks[r].rank = int(r);
  const double kv_tok = infer::kv_bytes_per_token_layer_rank(decode.model, ld, decode.dtypes.kv);
  // The prefill stage holding each layer.
  auto stage_of = [&](std::uint64_t layer) {
    for (int s = 0; s < lp.pp; ++s) {
      const auto [first, last] = infer::stage_layers(prefill.model, lp, s);
      if (layer >= first && layer < last) return s;
    }
    throw InternalError("kv_handoff_workload: a layer of no prefill stage");
  };
  // Ranks by prefill rank, then by layer: one send per (source, destination, layer).
  for (int rd = 0; rd < nd; ++rd) {
    const int stage = rd / ld.stage_ranks(), group = (rd % ld.stage_ranks()) / ld.tp;
    if (group != 0) continue;
    const int td = rd % ld.tp;
    // The prefill TP ranks whose heads this rank takes: one when the decode TP is the larger,
    // tp_p / tp_d of them (equal parts) when it is the smaller.
    const int k = std::max(1, lp.tp / ld.tp);
    const int t0 = lp.tp >= ld.tp ? td * k : td * lp.tp / ld.tp;
    const auto [first, last] = infer::stage_layers(decode.model, ld, stage);
    const int dst = decode_first + rd;
    for (std::uint64_t layer = first; layer < last; ++layer) {
      const int src = stage_of(layer) * lp.stage_ranks() + 0 * lp.tp;
      for (int j = 0; j < (lp.tp >= ld.tp ? k : 1); ++j) {
        const int s = src + t0 + j;
        trace::Op op;
        op.name = fmt::format("l{}.kv_send", layer);
        op.kind = trace::OpKind::send;
        op.peer = dst;
        op.bytes = std::uint64_t(double(tokens) * kv_tok / double(lp.tp >= ld.tp ? k : 1));
        op.tag = std::int64_t(layer);
        op.layer = int(layer);
        auto& so = w.ranks[std::size_t(s)].ops;
        op.id = so.size();
        so.push_back(op);
        op.name = fmt::format("l{}.kv_recv", layer);
        op.kind = trace::OpKind::recv;
        op.peer = s;
        auto& ro = w.ranks[std::size_t(dst)].ops;
        op.id = ro.size();
        ro.push_back(std::move(op));
      }
    }
  }
  return w;
}

namespace {

double handoff_bytes(const trace::Workload& w) {
  double b = 0;
  for (const auto& r : w.ranks) {
    for (const auto& op : r.ops) {
      if (op.kind == trace::OpKind::send) b += double(op.bytes);
    }
  }
  return b;
}

// "time dynamic_j" of a finished transfer: the chips it used and the fabric.
std::string handoff_cost_line(const run::RunData& out) {
  std::vector<int> used = out.rank_to_chip;
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  double dyn = out.fabric_energy.dynamic.si;
  for (int c : used) {
    if (std::size_t(c) < out.chip_energy.size()) dyn += out.chip_energy[std::size_t(c)].dynamic.si;
  }
  return fmt::format("{:.17g} {:.17g}", out.end.to_seconds(), dyn);
}

}  // namespace

KvTransferTimer::KvTransferTimer(TransferPath path, const infer::IterationSpec& prefill,
                                 const infer::IterationSpec& decode, TimingMode mode,
                                 int parallel, int per_octave)
    : path_(std::move(path)), prefill_(prefill), decode_(decode), mode_(mode),
      parallel_(std::max(1, parallel)), per_octave_(per_octave) {}

double KvTransferTimer::bandwidth(const trace::Workload& w) const {
  if (path_.nic_bandwidth <= 0) return 0;
  // Each chip's NIC sends and receives at nic_bandwidth: the busiest NIC direction sets how
  // long the bytes take on the wire.
  std::map<int, double> out, in;
  double total = 0;
  for (const auto& r : w.ranks) {
    for (const auto& op : r.ops) {
      if (op.kind != trace::OpKind::send) continue;
      out[r.rank / path_.ranks_per_chip] += double(op.bytes);
      in[op.peer / path_.ranks_per_chip] += double(op.bytes);
      total += double(op.bytes);
    }
  }
  double busiest = 0;
  for (const auto& [c, b] : out) busiest = std::max(busiest, b);
  for (const auto& [c, b] : in) busiest = std::max(busiest, b);
  return busiest > 0 ? total / (busiest / path_.nic_bandwidth) : 0;
}

TransferCost KvTransferTimer::cost(std::uint64_t tokens) {
  ++lookups_;
  auto [lo, hi] = mode_ == TimingMode::exact ? std::pair{tokens, tokens} : grid_cell(tokens, per_octave_);
  std::vector<std::uint64_t> missing;
  for (std::uint64_t t : {lo, hi}) {
    if (t > 0 && !simulated_.count(t) &&
        std::find(missing.begin(), missing.end(), t) == missing.end()) {
      missing.push_back(t);
    }
  }
  const int first = path_.decode_first;
  if (!missing.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::function<std::string()>> jobs;
    for (std::uint64_t t : missing) {
      // The child builds the workload once and returns its bytes and bandwidth with its cost.
      jobs.push_back([this, t, first]() -> std::string {
        const trace::Workload w = kv_handoff_workload(prefill_, decode_, t, first);
        return fmt::format("{} {:.17g} {:.17g}", handoff_cost_line(run::run_workload(path_.cfg, w)),
                           handoff_bytes(w), bandwidth(w));
      });
    }
    const std::vector<std::string> results = run_forked(jobs, parallel_);
    for (std::size_t i = 0; i < missing.size(); ++i) {
      TransferCost c;
      if (std::sscanf(results[i].c_str(), "%lf %lf %lf %lf", &c.time_s, &c.dynamic_j, &c.bytes,
                      &c.bandwidth) != 4) {
        throw InternalError("serving: a KV transfer's child process returned no cost");
      }
      simulated_[missing[i]] = c;
      bytes_[missing[i]] = {c.bytes, c.bandwidth};
    }
    wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  auto at = [&](std::uint64_t t) { return t == 0 ? TransferCost{} : simulated_.at(t); };
  TransferCost out;
  if (lo == hi) {
    out = at(lo);
  } else {
    out = interpolate_transfer(at(lo), at(hi), double(tokens - lo) / double(hi - lo));
  }
  // A prompt length between simulated ones: its bytes and bandwidth from its own workload (built
  // once, here; a simulated length's came from its child).
  auto it = bytes_.find(tokens);
  if (it == bytes_.end()) {
    const trace::Workload w = kv_handoff_workload(prefill_, decode_, tokens, first);
    it = bytes_.emplace(tokens, std::pair{handoff_bytes(w), bandwidth(w)}).first;
  }
  out.bytes = it->second.first;
  out.bandwidth = it->second.second;
  return out;
}

TransferCost PoolTimer::kv_transfer(std::uint64_t tokens) {
  if (!transfers_) return IterationTimer::kv_transfer(tokens);
  return transfers_->cost(tokens);
}

BesideWorkload beside_workload(const trace::Workload& iteration, int first,
                               const trace::Workload& handoff, int copies) {
  const int n = iteration.num_ranks();
  if (first < 0 || std::size_t(first + n) > handoff.ranks.size()) {
    throw InternalError("beside_workload: the iteration's ranks are outside the transfer's");
  }
  BesideWorkload b;
  trace::Workload& w = b.w;
  w.name = fmt::format("{} beside {} x {}", iteration.name.empty() ? "nothing" : iteration.name,
                       copies, handoff.name);
  w.ranks.resize(handoff.ranks.size());
  b.iteration_ops.assign(handoff.ranks.size(), 0);
  for (std::size_t r = 0; r < w.ranks.size(); ++r) w.ranks[r].rank = int(r);
  for (const auto& [name, members] : iteration.groups) {
    std::vector<int> moved = members;
    for (int& m : moved) m += first;
    w.groups[name] = std::move(moved);
  }
  // The iteration's tags are below kApart; each copy's above all of them.
  constexpr std::int64_t kApart = std::int64_t(1) << 32;
  for (int r = 0; r < n; ++r) {
    auto& ops = w.ranks[std::size_t(first + r)].ops;
    ops = iteration.ranks[std::size_t(r)].ops;
    for (trace::Op& op : ops) {
      if (op.kind == trace::OpKind::send || op.kind == trace::OpKind::recv) op.peer += first;
      if (op.kind == trace::OpKind::broadcast) op.root += first;
      if (op.tag >= kApart) throw InternalError("beside_workload: an iteration's tag is too large");
    }
    b.iteration_ops[std::size_t(first + r)] = ops.size();
  }
  // Each copy's sends (receives) between one pair of ranks as one op of their bytes: the same
  // bytes on the same path, and few ops (the replay runs at most 4,096 op processes at once:
  // thousands of per-layer sends started together would hold the iteration's ops back).
  for (int c = 0; c < copies; ++c) {
    for (std::size_t r = 0; r < w.ranks.size(); ++r) {
      auto& ops = w.ranks[r].ops;
      std::map<std::pair<trace::OpKind, int>, std::size_t> merged;  // kind, peer -> op index
      for (const trace::Op& h : handoff.ranks[r].ops) {
        if (h.kind != trace::OpKind::send && h.kind != trace::OpKind::recv) {
          throw InternalError("beside_workload: a transfer op that is not a send or a receive");
        }
        const auto key = std::pair{h.kind, h.peer};
        if (const auto it = merged.find(key); it != merged.end()) {
          ops[it->second].bytes += h.bytes;
          continue;
        }
        trace::Op op;
        op.id = ops.size();
        op.kind = h.kind;
        op.peer = h.peer;
        op.bytes = h.bytes;
        // Matched by (pair, tag): each copy's one op per pair has its own tag.
        op.tag = kApart * (c + 1);
        op.name = fmt::format("x{}.kv_{}", c, h.kind == trace::OpKind::send ? "send" : "recv");
        merged[key] = ops.size();
        ops.push_back(std::move(op));
      }
    }
  }
  return b;
}

BesideTimes beside_times(const BesideWorkload& b, const std::vector<replay::OpRecord>& records) {
  BesideTimes t;
  for (const auto& rec : records) {
    const double end = rec.end.to_seconds();
    if (rec.index < b.iteration_ops.at(std::size_t(rec.rank))) {
      t.iteration_s = std::max(t.iteration_s, end);
    } else {
      t.transfers_s = std::max(t.transfers_s, end);
    }
  }
  return t;
}

double transfer_share(double alone_s, double beside_s, double iteration_s) {
  if (!(alone_s > 0) || !(beside_s > 0)) return 1;
  double f = 1;
  if (beside_s <= iteration_s) {
    f = alone_s / beside_s;
  } else if (iteration_s > 0) {
    f = (alone_s - (beside_s - iteration_s)) / iteration_s;
  }
  return std::clamp(f, kMinShare, 1.0);
}

int transfer_bucket(int k) {
  if (k <= 0) return 0;
  int b = 1;
  while (b * 2 <= k && b < 8) b *= 2;
  return b;
}

namespace {

// The shape a contended iteration is simulated at: exact, the shape; grid, its cell's lowest
// corner in each dimension (the decode context's in whole key tiles, as the iterations').
Shape contended_shape(const Shape& s, TimingMode mode, int per_octave, std::uint64_t tile) {
  if (mode == TimingMode::exact) return s;
  Shape g{grid_cell(s.decode, per_octave).first, context_cell(s.context, tile, per_octave).first,
          grid_cell(s.prefill, per_octave).first, grid_cell(s.prefill_context, per_octave).first};
  if (g.decode == 0) g.context = 0;
  if (g.prefill == 0) g.prefill_context = 0;
  // A cell's lowest corner may have no token (decode 0 and prefill 0): its next point up.
  if (g.decode == 0 && g.prefill == 0) return s;
  return g;
}

std::string beside_line(const config::LoadedConfig& cfg, const BesideWorkload& b) {
  const run::RunData out = run::run_workload(cfg, b.w);
  const BesideTimes t = beside_times(b, out.records);
  return fmt::format("{:.17g} {:.17g}", t.iteration_s, t.transfers_s);
}

}  // namespace

IterationCost PoolTimer::cost_beside(const Shape& shape, int transfers, bool decode_pool) {
  IterationCost c = cost(shape);
  const int k = transfer_bucket(transfers);
  if (!transfers_ || reference_tokens_ == 0 || k == 0) return c;
  const std::uint64_t tokens = reference_tokens_;
  const Shape at = contended_shape(shape, timing_, octave_, key_tile());
  const auto key = std::tuple{decode_pool, at, k, tokens};
  auto found = contended_at_.find(key);
  if (found == contended_at_.end()) {
    const auto t0 = std::chrono::steady_clock::now();
    // Simulated on the transfer path without fast-forward (a repeated layer would be timed from
    // one that the transfers did not overlap alike): the iteration alone at its place, the
    // transfers alone, the two together.
    config::LoadedConfig cfg = transfers_->path().cfg;
    cfg.config.sim.fast_forward = false;
    const int first = decode_pool ? transfers_->path().decode_first : 0;
    infer::IterationSpec spec = spec_;
    spec.decode_seqs = at.decode;
    spec.context = at.context;
    spec.prefill_tokens = at.prefill;
    spec.prefill_context = at.prefill_context;
    const infer::IterationSpec &p = transfers_->prefill(), &d = transfers_->decode();
    const bool need_alone = !alone_at_.count({decode_pool, at, tokens});
    const bool need_transfers = !transfers_alone_.count({k, tokens});
    const int decode_first = transfers_->path().decode_first;
    auto job = [&cfg, spec, &p, &d, tokens, first, decode_first](int mode, int copies) {
      return [&cfg, spec, &p, &d, tokens, first, decode_first, mode, copies]() -> std::string {
        const trace::Workload h = kv_handoff_workload(p, d, tokens, decode_first);
        trace::Workload it;
        if (mode != 1) it = infer::IterationSource(spec).workload();
        return beside_line(cfg, beside_workload(it, first, h, mode == 0 ? 0 : copies));
      };
    };
    // mode 0: the iteration alone; 1: the transfers alone; 2: together.
    std::vector<std::function<std::string()>> jobs;
    std::vector<int> modes;
    if (need_alone) jobs.push_back(job(0, 0)), modes.push_back(0);
    if (need_transfers) jobs.push_back(job(1, k)), modes.push_back(1);
    jobs.push_back(job(2, k));
    modes.push_back(2);
    const std::vector<std::string> lines = run_forked(jobs, jobs_);
    Contended e;
    e.decode_pool = decode_pool;
    e.shape = at;
    e.transfers = k;
    e.tokens = tokens;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      double ti = 0, tx = 0;
      if (std::sscanf(lines[i].c_str(), "%lf %lf", &ti, &tx) != 2) {
        throw InternalError("serving: a contended iteration's child process returned no times");
      }
      if (modes[i] == 0) alone_at_[{decode_pool, at, tokens}] = ti;
      if (modes[i] == 1) transfers_alone_[{k, tokens}] = tx;
      if (modes[i] == 2) e.beside_s = ti, e.transfers_beside_s = tx;
    }
    e.alone_s = alone_at_.at({decode_pool, at, tokens});
    e.transfers_alone_s = transfers_alone_.at({k, tokens});
    e.share = transfer_share(e.transfers_alone_s, e.transfers_beside_s, e.beside_s);
    found = contended_at_.emplace(key, contended_.size()).first;
    contended_.push_back(e);
    contention_wall_s_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  Contended& e = contended_[found->second];
  ++e.lookups;
  // What the transfers added to the iteration at its place on the path, on top of its own time.
  c.time_s += e.beside_s - e.alone_s;
  c.transfer_share = e.share;
  return c;
}

}  // namespace trnsim::serve
