// SPDX-License-Identifier: MIT
#include "trnsim/serve/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <queue>
#include <tuple>

#include "trnsim/error.hpp"
#include "trnsim/infer/memory.hpp"

namespace trnsim::serve {

namespace {

// A request being served. Its KV holds `computed` tokens; it has sampled `generated` of its
// output. Until computed reaches `prefill_target` it is prefilling (a fresh request: its prompt;
// after a preemption by recompute: its prompt and the tokens it had generated), and the iteration
// that completes the prefill samples the next token. Decoding, an iteration feeds the last token
// sampled (its KV written: computed + 1) and samples the next.
struct Seq {
  std::size_t rec = 0;  // index into EngineResult::requests
  std::uint64_t input = 0, output = 0, computed = 0, generated = 0, prefill_target = 0;
  bool prefilling() const { return computed < prefill_target; }
  double last_token_s = 0;
};

struct Replica {
  std::deque<Seq*> waiting;
  std::vector<Seq*> running;  // in admission order
  infer::BlockAllocator kv;
  bool busy = false;
  std::size_t record = 0;  // its IterationRecord (>= size: not kept)
  // The iteration in flight.
  std::vector<std::pair<Seq*, std::uint64_t>> prefills;  // sequence, chunk tokens
  std::vector<Seq*> decodes;
  explicit Replica(std::uint64_t blocks, std::uint64_t block_tokens) : kv(blocks, block_tokens) {}
  std::size_t load() const { return waiting.size() + running.size(); }
};

enum class Ev { iteration_end = 0, arrival = 1 };

struct Event {
  double t;
  Ev kind;
  std::uint64_t key;  // replica for iteration_end, request index for arrival
  bool operator>(const Event& o) const {
    return std::tie(t, kind, key) > std::tie(o.t, o.kind, o.key);
  }
};

class Engine {
 public:
  Engine(const Workload& w, const EngineOptions& o, IterationTimer& timer, std::uint64_t warmup)
      : w_(w), o_(o), timer_(timer), warmup_(warmup) {
    for (int r = 0; r < o.replicas; ++r) replicas_.emplace_back(o.kv_blocks, o.scheduler.block_tokens);
  }

  EngineResult run() {
    if (w_.users > 0) {
      total_ = w_.lengths.size();
      for (std::uint64_t u = 0; u < std::min<std::uint64_t>(w_.users, total_); ++u) issue(0.0);
    } else {
      total_ = w_.open.size();
      for (std::size_t i = 0; i < w_.open.size(); ++i) {
        add_request(w_.open[i]);
        events_.push({w_.open[i].arrival_s, Ev::arrival, i});
      }
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.t;
      if (e.kind == Ev::arrival) {
        arrive(e.key);
      } else {
        end_iteration(int(e.key));
      }
    }
    out_.end_s = now_;
    for (auto& r : replicas_) {
      if (!r.waiting.empty() || !r.running.empty()) {
        throw InternalError("serving engine stopped with requests left");
      }
    }
    return std::move(out_);
  }

 private:
  void add_request(const Request& r) {
    RequestRecord rec;
    rec.req = r;
    rec.req.id = out_.requests.size();
    rec.warmup = rec.req.id < warmup_;
    out_.requests.push_back(rec);
  }

  // Closed loop: the next request of a user, arriving at `t`.
  void issue(double t) {
    if (issued_ >= total_) return;
    Request r = w_.lengths[issued_++];
    r.arrival_s = t;
    add_request(r);
    events_.push({t, Ev::arrival, out_.requests.size() - 1});
  }

  void arrive(std::uint64_t index) {
    RequestRecord& rec = out_.requests[index];
    const auto bt = o_.scheduler.block_tokens;
    // A request whose whole sequence can never fit a replica's cache is refused.
    if (infer::BlockAllocator::blocks_for(rec.req.input_tokens + rec.req.output_tokens, bt) >
        o_.kv_blocks) {
      rec.refused = true;
      ++out_.refused;
      if (w_.users > 0) issue(now_ + w_.think_s);
      return;
    }
    int best = 0;
    for (int r = 1; r < int(replicas_.size()); ++r) {
      if (replicas_[std::size_t(r)].load() < replicas_[std::size_t(best)].load()) best = r;
    }
    rec.replica = best;
    seqs_.push_back(Seq{index, rec.req.input_tokens, rec.req.output_tokens, 0, 0,
                         rec.req.input_tokens, 0});
    replicas_[std::size_t(best)].waiting.push_back(&seqs_.back());
    if (!replicas_[std::size_t(best)].busy) start_iteration(best);
  }

  // Preempts (recompute) the running sequence admitted last, other than those already in the
  // iteration being formed; false when there is none.
  bool preempt(Replica& r) {
    for (auto it = r.running.rbegin(); it != r.running.rend(); ++it) {
      Seq* s = *it;
      if (std::find(r.decodes.begin(), r.decodes.end(), s) != r.decodes.end()) continue;
      bool in_prefill = false;
      for (auto& p : r.prefills) in_prefill |= p.first == s;
      if (in_prefill) continue;
      r.kv.release(s->rec);
      s->computed = 0;
      s->prefill_target = s->input + s->generated;
      ++out_.requests[s->rec].preemptions;
      ++out_.preemptions;
      r.running.erase(std::next(it).base());
      r.waiting.push_front(s);
      return true;
    }
    return false;
  }

  void schedule_decodes(Replica& r, std::uint64_t& budget, std::uint64_t& slots) {
    // A copy: preemption removes sequences from the running list.
    const std::vector<Seq*> running = r.running;
    for (Seq* s : running) {
      if (slots == 0 || budget == 0) break;
      if (s->prefilling()) continue;
      if (std::find(r.running.begin(), r.running.end(), s) == r.running.end()) continue;  // preempted
      bool ok = r.kv.reserve(s->rec, s->computed + 1);
      while (!ok && preempt(r)) ok = r.kv.reserve(s->rec, s->computed + 1);
      if (!ok) break;
      r.decodes.push_back(s);
      --slots;
      --budget;
    }
  }

  void schedule_prefills(Replica& r, std::uint64_t& budget, std::uint64_t& slots) {
    const auto& sc = o_.scheduler;
    auto chunk_of = [&](const Seq* s) -> std::uint64_t {
      const std::uint64_t left = s->prefill_target - s->computed;
      if (sc.chunked_prefill) return std::min(left, budget);
      // Unchunked: the whole prompt, within the budget (or alone, when it is above it).
      if (left <= budget) return left;
      return r.decodes.empty() && r.prefills.empty() ? left : 0;
    };
    // Prompts already partly prefilled first, then the queue in order.
    for (Seq* s : r.running) {
      if (slots == 0 || budget == 0) return;
      if (!s->prefilling()) continue;
      const std::uint64_t k = chunk_of(s);
      if (k == 0 || !r.kv.reserve(s->rec, s->computed + k)) return;
      r.prefills.emplace_back(s, k);
      --slots;
      budget -= std::min(budget, k);
    }
    while (!r.waiting.empty() && slots > 0 && budget > 0) {
      Seq* s = r.waiting.front();
      // Admission: the blocks of its whole prompt and first token, taken at once (so its later
      // chunks never wait for blocks); it waits, and the queue behind it, until they are free.
      const std::uint64_t k = chunk_of(s);
      if (k == 0) return;
      if (!r.kv.reserve(s->rec, s->prefill_target + 1)) return;
      r.waiting.pop_front();
      r.running.push_back(s);
      auto& rec = out_.requests[s->rec];
      if (rec.first_scheduled_s < 0) rec.first_scheduled_s = now_;
      r.prefills.emplace_back(s, k);
      --slots;
      budget -= std::min(budget, k);
    }
  }

  void start_iteration(int index) {
    Replica& r = replicas_[std::size_t(index)];
    r.decodes.clear();
    r.prefills.clear();
    std::uint64_t budget = o_.scheduler.token_budget, slots = o_.scheduler.max_batch;
    const std::uint64_t waiting = r.waiting.size();
    if (o_.scheduler.priority == Priority::decode_first) {
      schedule_decodes(r, budget, slots);
      schedule_prefills(r, budget, slots);
    } else {
      schedule_prefills(r, budget, slots);
      schedule_decodes(r, budget, slots);
    }
    if (r.decodes.empty() && r.prefills.empty()) {
      if (!r.waiting.empty() || !r.running.empty()) {
        throw InternalError(fmt::format("serving engine: replica {} has {} waiting and {} running "
                                        "requests but could schedule none",
                                        index, r.waiting.size(), r.running.size()));
      }
      r.busy = false;
      return;
    }
    Shape sh;
    sh.decode = r.decodes.size();
    std::uint64_t ctx = 0;
    for (const Seq* s : r.decodes) ctx += s->computed + 1;
    sh.context = sh.decode ? (ctx + sh.decode - 1) / sh.decode : 0;
    std::uint64_t pctx = 0;
    for (const auto& [s, k] : r.prefills) {
      sh.prefill += k;
      pctx += k * s->computed;
    }
    sh.prefill_context = sh.prefill ? (pctx + sh.prefill - 1) / sh.prefill : 0;
    const IterationCost c = timer_.cost(sh);
    r.busy = true;
    ++out_.iterations_total;
    out_.dynamic_j += c.dynamic_j;
    r.record = out_.iterations.size();
    if (out_.iterations.size() < o_.max_iteration_records) {
      IterationRecord ir;
      ir.replica = index;
      ir.start_s = now_;
      ir.end_s = now_ + c.time_s;
      ir.shape = sh;
      ir.batch = r.decodes.size() + r.prefills.size();
      ir.waiting = waiting;
      ir.in_system = r.waiting.size() + r.running.size();
      out_.iterations.push_back(ir);
    }
    events_.push({now_ + c.time_s, Ev::iteration_end, std::uint64_t(index)});
  }

  void token(Seq* s) {
    ++s->generated;
    auto& rec = out_.requests[s->rec];
    if (rec.first_token_s < 0) {
      rec.first_token_s = now_;
    } else {
      rec.itl_s.push_back(float(now_ - s->last_token_s));
    }
    s->last_token_s = now_;
    ++tokens_;
  }

  void end_iteration(int index) {
    Replica& r = replicas_[std::size_t(index)];
    tokens_ = 0;
    for (Seq* s : r.decodes) {
      ++s->computed;
      token(s);
    }
    for (auto& [s, k] : r.prefills) {
      s->computed += k;
      if (!s->prefilling()) token(s);
    }
    // Finished sequences leave and free their blocks.
    std::vector<Seq*> keep;
    for (Seq* s : r.running) {
      if (!s->prefilling() && s->generated >= s->output) {
        r.kv.release(s->rec);
        out_.requests[s->rec].finish_s = now_;
        if (w_.users > 0) issue(now_ + w_.think_s);
      } else {
        keep.push_back(s);
      }
    }
    r.running = std::move(keep);
    if (r.record < out_.iterations.size()) {
      out_.iterations[r.record].tokens_out = tokens_;
      out_.iterations[r.record].kv_blocks = r.kv.used_blocks();
    }
    start_iteration(index);
  }

  const Workload& w_;
  const EngineOptions& o_;
  IterationTimer& timer_;
  std::uint64_t warmup_;
  std::vector<Replica> replicas_;
  std::deque<Seq> seqs_;  // stable addresses
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  EngineResult out_;
  double now_ = 0;
  std::size_t total_ = 0, issued_ = 0;
  std::uint64_t tokens_ = 0;
};

}  // namespace

EngineResult simulate(const Workload& w, const EngineOptions& o, IterationTimer& timer,
                      std::uint64_t warmup_requests) {
  if (o.replicas < 1) throw InputError("replicas: expected at least 1");
  return Engine(w, o, timer, warmup_requests).run();
}

}  // namespace trnsim::serve
