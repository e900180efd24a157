// SPDX-License-Identifier: MIT
#include "trnsim/serve/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <queue>
#include <tuple>

#include "trnsim/error.hpp"
#include "trnsim/infer/memory.hpp"
#include "trnsim/serve/transfer.hpp"

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
  int prefill_replica = 0, decode_replica = -1;  // disaggregated
};

// Co-located replicas prefill and decode; a disaggregated system's prefill replicas prefill
// prompts and sample their first tokens, its decode replicas receive the KV caches and decode
// (and recompute what they preempt).
enum class Role { colocated, prefill, decode };

struct Replica {
  Role role = Role::colocated;
  std::deque<Seq*> waiting;
  std::vector<Seq*> running;  // in admission order
  infer::BlockAllocator kv;
  bool busy = false;
  // Disaggregated. Prefill: prefilled sequences whose blocks are held until their KV has been
  // moved, and the replica's egress in the transfer network (its transfers share it).
  // Decode: prefilled sequences waiting for their blocks here (first come, first served),
  // transfers whose blocks are reserved and that have not ended, and its ingress.
  std::uint64_t held = 0, inflight = 0;
  int link = -1;
  std::deque<Seq*> incoming;
  IterationRecord current;  // the iteration in flight's, kept or not
  // Its number in start order, which is its place in the records when it is kept (they are the
  // first max_iteration_records iterations).
  std::uint64_t current_index = 0;
  // The iteration in flight.
  std::vector<std::pair<Seq*, std::uint64_t>> prefills;  // sequence, chunk tokens
  std::vector<Seq*> decodes;
  Replica(Role r, std::uint64_t blocks, std::uint64_t block_tokens)
      : role(r), kv(blocks, block_tokens) {}
  // Requests waiting or running here (decode: those whose KV is coming to it too).
  std::size_t load() const { return waiting.size() + running.size() + incoming.size() + inflight; }
};

// network: the transfer network's next transfer has sent its last byte (key: the network's
// generation when it was scheduled; a later change of the network makes it stale).
enum class Ev { iteration_end = 0, arrival = 1, transfer_end = 2, network = 3 };

struct Event {
  double t;
  Ev kind;
  std::uint64_t key;  // replica for iteration_end, request index for arrival and transfer_end
  bool operator>(const Event& o) const {
    return std::tie(t, kind, key) > std::tie(o.t, o.kind, o.key);
  }
};

class Engine {
 public:
  Engine(const Workload& w, const EngineOptions& o, IterationTimer& timer, std::uint64_t warmup,
         IterationTimer* decode_timer)
      : w_(w), o_(o), timer_(timer), decode_timer_(decode_timer ? *decode_timer : timer),
        warmup_(warmup) {
    const int p = o.prefill_replicas;
    for (int r = 0; r < o.replicas; ++r) {
      const Role role = p == 0 ? Role::colocated : r < p ? Role::prefill : Role::decode;
      replicas_.emplace_back(role, role == Role::decode ? o.decode_kv_blocks : o.kv_blocks,
                             o.scheduler.block_tokens);
    }
    // Disaggregated: each replica's end of the transfer network, in replica order.
    if (p > 0) {
      for (auto& r : replicas_) r.link = net_.add_link(1.0);
    }
    out_.prefill_replicas = p;
    out_.kv_blocks = o.kv_blocks;
    out_.decode_kv_blocks = p > 0 ? o.decode_kv_blocks : 0;
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
      } else if (e.kind == Ev::transfer_end) {
        transfer_end(e.key);
      } else if (e.kind == Ev::network) {
        if (e.key == net_generation_) network_changed();
      } else {
        end_iteration(int(e.key));
      }
    }
    out_.end_s = now_;
    std::sort(sampled_.begin(), sampled_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& e : sampled_) out_.sampled.push_back(e.second);
    for (auto& r : replicas_) {
      if (!r.waiting.empty() || !r.running.empty() || !r.incoming.empty() || r.held || r.inflight) {
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
    seq_of_.push_back(nullptr);
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
    const auto whole = infer::BlockAllocator::blocks_for(rec.req.input_tokens + rec.req.output_tokens, bt);
    // A request whose whole sequence can never fit a replica's cache is refused (disaggregated:
    // its prompt the prefill replica's, its whole sequence the decode replica's).
    const bool never =
        o_.prefill_replicas == 0
            ? whole > o_.kv_blocks
            : infer::BlockAllocator::blocks_for(rec.req.input_tokens, bt) > o_.kv_blocks ||
                  (rec.req.output_tokens > 1 && whole > o_.decode_kv_blocks);
    if (never) {
      rec.refused = true;
      ++out_.refused;
      if (w_.users > 0) issue(now_ + w_.think_s);
      return;
    }
    // Co-located: any replica; disaggregated: a prefill replica.
    const int n = o_.prefill_replicas > 0 ? o_.prefill_replicas : int(replicas_.size());
    const int best = least_loaded(0, n);
    rec.replica = best;
    seqs_.push_back(Seq{index, rec.req.input_tokens, rec.req.output_tokens, 0, 0,
                         rec.req.input_tokens, 0, best, -1});
    seq_of_[index] = &seqs_.back();
    replicas_[std::size_t(best)].waiting.push_back(&seqs_.back());
    if (!replicas_[std::size_t(best)].busy) start_iteration(best);
  }

  // The replica in [first, last) with the fewest requests (the lowest index on ties).
  int least_loaded(int first, int last) const {
    int best = first;
    for (int r = first + 1; r < last; ++r) {
      if (replicas_[std::size_t(r)].load() < replicas_[std::size_t(best)].load()) best = r;
    }
    return best;
  }

  // Disaggregated: a prefilled sequence goes to the decode replica with the fewest requests and
  // waits there for the blocks of its prompt and the token it feeds next.
  void hand_off(Seq* s) {
    const int d = least_loaded(o_.prefill_replicas, int(replicas_.size()));
    s->decode_replica = d;
    out_.requests[s->rec].decode_replica = d;
    replicas_[std::size_t(d)].incoming.push_back(s);
    admit_incoming(d);
  }

  // Decode replica `index`: the incoming sequences whose blocks are free, in order, start their
  // KV transfers at once. A transfer alone takes its cost's time_s: latency (time_s - bytes /
  // bandwidth; none when the path's bandwidth is not known) and time on the wire. The wire part
  // goes through the transfer network, where the prefill replica's egress and the decode
  // replica's ingress each carry one transfer at full rate: transfers in flight that share
  // either are slowed max-min fairly (two at once from one prefill replica: each at half rate).
  void admit_incoming(int index) {
    Replica& d = replicas_[std::size_t(index)];
    while (!d.incoming.empty()) {
      Seq* s = d.incoming.front();
      if (!d.kv.reserve(s->rec, s->computed + 1)) return;
      d.incoming.pop_front();
      ++d.inflight;
      Replica& p = replicas_[std::size_t(s->prefill_replica)];
      const TransferCost c = timer_.kv_transfer(s->computed);
      double latency = 0;
      if (c.bandwidth > 0) latency = std::clamp(c.time_s - c.bytes / c.bandwidth, 0.0, c.time_s);
      auto& rec = out_.requests[s->rec];
      rec.transfer_start_s = now_;
      rec.transfer_alone_s = c.time_s;
      ++out_.transfers;
      out_.transfer_bytes += c.bytes;
      out_.dynamic_j += c.dynamic_j;
      latency_[s->rec] = latency;
      const double wire = c.time_s - latency;
      if (wire <= 0) {
        events_.push({now_ + latency, Ev::transfer_end, s->rec});
        continue;
      }
      settle(net_.advance(now_));
      net_.start(s->rec, wire, {p.link, d.link}, now_);
      reschedule();
    }
  }

  // Transfers whose last byte has left: delivered after their latency.
  void settle(const std::vector<std::uint64_t>& done) {
    for (std::uint64_t k : done) events_.push({now_ + latency_.at(k), Ev::transfer_end, k});
  }

  void reschedule() {
    ++net_generation_;
    if (net_.active()) events_.push({net_.next_done(), Ev::network, net_generation_});
  }

  void network_changed() {
    settle(net_.advance(now_));
    reschedule();
  }

  // Disaggregated: replica `r`'s link carries the transfers at `share` of their alone rate from
  // now (its iteration beside them: docs/serving.md#contention; idle: 1).
  void set_share(const Replica& r, double share) {
    if (r.link < 0 || net_.capacity(r.link) == share) return;
    settle(net_.set_capacity(r.link, share, now_));
    reschedule();
  }

  // A KV transfer has ended: the prefill replica frees the sequence's blocks, the decode
  // replica runs it from its next iteration.
  void transfer_end(std::uint64_t index) {
    Seq* s = seq_of_[index];
    Replica& p = replicas_[std::size_t(s->prefill_replica)];
    Replica& d = replicas_[std::size_t(s->decode_replica)];
    auto& rec = out_.requests[index];
    rec.transfer_end_s = now_;
    out_.transfer_s += now_ - rec.transfer_start_s;
    latency_.erase(index);
    p.kv.release(s->rec);
    --p.held;
    --d.inflight;
    d.running.push_back(s);
    if (!p.busy) start_iteration(s->prefill_replica);
    if (!d.busy) start_iteration(s->decode_replica);
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
      // A prefill replica never writes the first token's KV (the decode replica does).
      const std::uint64_t need = s->prefill_target + (r.role == Role::prefill ? 0 : 1);
      if (!r.kv.reserve(s->rec, need)) return;
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
      // Blocks held for KV transfers are freed when they end, which starts the replica again.
      if ((!r.waiting.empty() || !r.running.empty()) && r.held == 0 && r.inflight == 0) {
        throw InternalError(fmt::format("serving engine: replica {} has {} waiting and {} running "
                                        "requests but could schedule none",
                                        index, r.waiting.size(), r.running.size()));
      }
      r.busy = false;
      set_share(r, 1.0);
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
    // Disaggregated: timed beside the KV transfers in flight on the replica's link, which get
    // the share of their rate the iteration leaves them while it runs.
    IterationTimer& t = r.role == Role::decode ? decode_timer_ : timer_;
    const IterationCost c = r.link < 0 ? t.cost(sh) : t.cost_beside(sh, net_.on_link(r.link), r.role == Role::decode);
    set_share(r, c.transfer_share);
    r.busy = true;
    ++out_.iterations_total;
    out_.dynamic_j += c.dynamic_j;
    IterationRecord& ir = r.current;
    ir = IterationRecord{};
    ir.replica = index;
    ir.start_s = now_;
    ir.end_s = now_ + c.time_s;
    ir.shape = sh;
    ir.batch = r.decodes.size() + r.prefills.size();
    ir.waiting = waiting;
    ir.in_system = r.load();
    r.current_index = out_.iterations_total - 1;
    if (out_.iterations.size() < o_.max_iteration_records) out_.iterations.push_back(ir);
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
    // Finished sequences leave and free their blocks; a prefill replica hands the others it has
    // prefilled to the decode pool.
    std::vector<Seq*> keep, handed;
    for (Seq* s : r.running) {
      if (!s->prefilling() && s->generated >= s->output) {
        r.kv.release(s->rec);
        out_.requests[s->rec].finish_s = now_;
        if (w_.users > 0) issue(now_ + w_.think_s);
      } else if (r.role == Role::prefill && !s->prefilling()) {
        ++r.held;
        handed.push_back(s);
      } else {
        keep.push_back(s);
      }
    }
    r.running = std::move(keep);
    r.current.tokens_out = tokens_;
    r.current.kv_blocks = r.kv.used_blocks();
    if (r.current_index < out_.iterations.size()) out_.iterations[r.current_index] = r.current;
    tally(r);
    for (Seq* s : handed) hand_off(s);
    if (r.role == Role::decode) admit_incoming(index);
    start_iteration(index);
  }

  // An ended iteration into its pool's totals and, on the stride, the sample over the run.
  void tally(const Replica& r) {
    const IterationRecord& ir = r.current;
    PoolTotals& p = out_.pools[r.role == Role::decode ? 1 : 0];
    ++p.iterations;
    p.batch += ir.batch;
    p.kv_blocks += ir.kv_blocks;
    p.kv_blocks_max = std::max(p.kv_blocks_max, ir.kv_blocks);
    if (r.current_index % out_.sampled_stride != 0) return;
    sampled_.emplace_back(r.current_index, ir);
    if (sampled_.size() < std::max<std::size_t>(2, o_.max_sampled)) return;
    out_.sampled_stride *= 2;
    std::erase_if(sampled_, [&](const auto& e) { return e.first % out_.sampled_stride != 0; });
  }

  const Workload& w_;
  const EngineOptions& o_;
  IterationTimer& timer_;
  IterationTimer& decode_timer_;
  std::uint64_t warmup_;
  std::vector<Replica> replicas_;
  std::deque<Seq> seqs_;  // stable addresses
  std::vector<Seq*> seq_of_;  // by request index (none: not arrived, or refused)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  EngineResult out_;
  double now_ = 0;
  std::size_t total_ = 0, issued_ = 0;
  std::uint64_t tokens_ = 0;
  TransferNet net_;
  std::uint64_t net_generation_ = 0;
  std::map<std::uint64_t, double> latency_;  // transfers in flight: their latency
  std::vector<std::pair<std::uint64_t, IterationRecord>> sampled_;  // by end: (start index, it)
};

}  // namespace

TransferCost IterationTimer::kv_transfer(std::uint64_t) {
  throw InternalError("serving: this iteration timer does not time KV transfers");
}

EngineResult simulate(const Workload& w, const EngineOptions& o, IterationTimer& timer,
                      std::uint64_t warmup_requests, IterationTimer* decode_timer) {
  if (o.replicas < 1) throw InputError("replicas: expected at least 1");
  if (o.prefill_replicas < 0 || (o.prefill_replicas > 0 && o.prefill_replicas >= o.replicas)) {
    throw InputError("disaggregated: expected at least one prefill and one decode replica");
  }
  return Engine(w, o, timer, warmup_requests, decode_timer).run();
}

}  // namespace trnsim::serve
