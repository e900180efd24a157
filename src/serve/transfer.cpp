// SPDX-License-Identifier: MIT
#include "trnsim/serve/transfer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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

}  // namespace trnsim::serve
