// SPDX-License-Identifier: MIT
#include "trnsim/replay/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <map>
#include <set>
#include <unordered_map>

#include "common/activity.hpp"
#include "common/block.hpp"
#include "trnsim/hash.hpp"
#include "trnsim/error.hpp"
#include "trnsim/log.hpp"
#include "trnsim/replay/pattern.hpp"

namespace trnsim::replay {

using sc_core::sc_event;
using sc_core::sc_time;
using trace::OpKind;

namespace {

using model::to_sc;

// Flow ids from a fixed hash, so they do not depend on the library.
std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  return splitmix64_finalise(a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL);
}

}  // namespace

// Work waiting for a free helper: a vector taken from `next` on (a deque's destructor builds
// iterators on the stack, which AddressSanitizer misreads after SystemC's stack switches when a
// machine is destroyed with blocked threads).
struct Machine::Helpers {
  std::vector<std::function<void()>> waiting;
  std::size_t next = 0;
  std::size_t live = 0, peak = 0;
};

// A helper thread runs its job, then whatever waited for a free helper meanwhile.
void Machine::on_helper(std::function<void()> job) {
  if (!helpers_) helpers_ = std::make_shared<Helpers>();
  Helpers& h = *helpers_;
  if (h.live == kMaxHelperProcesses) {
    h.waiting.push_back(std::move(job));
    return;
  }
  h.peak = std::max(h.peak, ++h.live);
  sc_core::sc_spawn_options opt;
  // Each helper holds the pool: a helper still blocked when the machine is destroyed (a
  // collective some member never reached) must not find it gone.
  sc_core::sc_spawn(
      [pool = helpers_, job = std::move(job)] {
        Helpers& hp = *pool;
        job();
        while (hp.next < hp.waiting.size()) {
          auto work = std::move(hp.waiting[hp.next++]);
          if (hp.next == hp.waiting.size()) {
            hp.waiting.clear();
            hp.next = 0;
          }
          work();
        }
        --hp.live;
      },
      nullptr, &opt);
}

std::size_t Machine::peak_helper_processes() const { return helpers_ ? helpers_->peak : 0; }

void Machine::start_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow,
                             std::function<void()> done) {
  on_helper([this, src, dst, bytes, flow, done = std::move(done)] {
    transfer(src, dst, bytes, flow);
    done();
  });
}

void Machine::start_replica_transfer(int src, int dst, int distance, std::uint64_t bytes,
                                     std::uint32_t pieces, std::uint64_t flow,
                                     std::function<void()> done,
                                     std::function<void(std::uint32_t)> arrived) {
  (void)bytes, (void)pieces, (void)flow, (void)done, (void)arrived;
  throw InternalError(fmt::format("transfer {} -> {} to the replica {} away: this machine has no "
                                  "folded scale-out network",
                                  src, dst, distance));
}

void Machine::fast_compute(int, const trace::Op&, const trace::Op&,
                           const sc_core::sc_time& duration) {
  if (duration > sc_core::SC_ZERO_TIME) sc_core::wait(duration);
}

void Machine::start_reduce(int chip, std::uint64_t bytes, trace::DType dtype,
                           std::function<void()> done) {
  on_helper([this, chip, bytes, dtype, done = std::move(done)] {
    reduce(chip, bytes, dtype);
    done();
  });
}

struct Replay::Impl : Emitter {
  model::ActivityCounter activity_;
  std::shared_ptr<spdlog::logger> log_ = logger("replay");  // trace: per-op dispatch
  // An event made when first waited on or notified. Collectives are emitted before the run,
  // where SystemC names and registers every event made (sc_gen_unique_name: about 8,000
  // instructions each, 2n + 2 per collective of n members: half of a small trace's elaboration);
  // made while the kernel runs, an event has no name, and a fast-forwarded collective makes none.
  struct LazyEvent {
    std::unique_ptr<sc_event> ev;
    sc_event& operator*() {
      if (!ev) ev = std::make_unique<sc_event>();
      return *ev;
    }
    sc_event* operator->() { return &**this; }
  };
  std::uint64_t messages_ = 0;  // SentTogether ids given so far
  // One collective: the k-th collective of a group, joined by every member.
  struct Instance {
    std::uint64_t id = 0;
    std::vector<int> ranks;  // member index -> rank
    std::vector<const trace::Op*> ops;
    std::vector<std::size_t> op_index;
    int joined = 0;  // members whose op has been emitted
    Schedule schedule;
    std::vector<bool> arrived;
    // delivered[dst member][src member]: messages delivered so far
    std::vector<std::map<int, int>> delivered;
    std::vector<LazyEvent> delivery;  // per destination member
    std::vector<int> outstanding;     // sends in flight per source member
    std::vector<LazyEvent> sent;      // per source member
    int finished = 0;
    CollectiveRecord rec;
    // Members that arrive before the last member's op was emitted wait for the plan; a
    // collective some member never reaches is never planned (reported after the run).
    LazyEvent planned;
    // Sends waiting for their destination member to join, per destination member.
    struct Waiting {
      int from;
      std::uint64_t bytes;
      int pieces;
      bool progressive;
      SentTogether message;
    };
    std::vector<std::vector<Waiting>> waiting;
    // Fast-forward: decided by the first member to arrive, followed by every member.
    enum class Mode { undecided, simulated, fast } mode = Mode::undecided;
    const Instance* counterpart = nullptr;  // the earlier micro-batch's instance it repeats
    // Fast-forward by shape (WorkSource::collectives_by_shape): the bytes its schedule sends in
    // all and the most one member sends or receives; a fast instance timed from a counterpart
    // of another shape scales the counterpart's time after its launch by the ratio of `peak`.
    double total_bytes = 0, peak_bytes = 0;
    double scale = 1;
    int arrivals = 0;
    LazyEvent all_arrived;
  };
  // Fast-forward: how an op depends on the ops of its unit (their positions in it) and on how
  // many ops outside it; two units repeat each other only if their ops' agree one to one.
  using DepSig = std::pair<std::vector<std::size_t>, std::size_t>;
  // Fast-forward: a rank's ops of one UnitKey (training: one phase and micro-batch).
  struct Unit {
    std::vector<std::size_t> ops;  // op indices, in emission order
    BatchId batch = 0;             // the batch its ops came in
    int previous = -1;             // the unit before it in its series that it repeats, or -1
    bool has_next = false;         // a later unit of its series has been compared with it
    bool repeated = false;         // ... and repeats it
    bool hold_back = true;         // BatchOptions::hold_back_last_unit of its batch
    std::vector<DepSig> sig;       // kept while a unit of a later batch may be compared with it
    std::size_t done = 0;
    bool started = false, fast = false;
    sc_time first_start, last_end;
    bool complete() const { return done == ops.size(); }
  };
  struct Mailbox {
    int delivered = 0;
    sc_event ev;
  };
  struct OpState {
    const trace::Op* op = nullptr;    // where the source keeps it
    BatchId batch = 0;
    int pending = 0;                  // dependencies not yet finished
    std::vector<std::size_t> dependents;
    Instance* instance = nullptr;     // for collectives
    int member = -1;                  // index within the instance
    int p2p_seq = 0;                  // for recv: how many earlier recvs match the same key
    bool started = false, finished = false;
    sc_time start, end;
  };
  struct BatchState {
    std::size_t remaining = 0;  // ops not yet finished
    bool started = false;
    sc_time start;
  };

  std::unique_ptr<WorkSource> owned_source;  // the TraceSource of a replay built from a Workload
  WorkSource& source;
  const int nr;  // ranks
  Machine& machine;
  config::ReplayParams params;
  FastForward ff;
  bool by_shape = false;  // fast-forward on and collectives by shape (WorkSource)
  ScaleOutGroups scale_out;
  FastForwardStats ffs;
  // Op states, units: deques, since batches emitted during the run append to them while op
  // processes hold references to their elements.
  std::vector<std::deque<Unit>> units;          // [rank]
  std::vector<std::map<UnitKey, int>> unit_by_key;  // [rank]
  std::vector<std::vector<int>> unit_of;        // [rank][op]: its unit, -1 for none
  std::vector<std::vector<std::size_t>> position;  // [rank][op]: its index within its unit
  std::vector<int> chip_of;
  std::vector<std::deque<OpState>> state;  // [rank][op index]
  std::vector<std::unique_ptr<Instance>> instances;
  // Collectives some member's op has not been emitted for yet, by (group, k); in creation order.
  std::map<std::pair<std::string, int>, Instance*> open_instances;
  std::vector<Instance*> unplanned;
  std::vector<std::map<std::string, int>> collective_seq;  // [rank]: collectives per group so far
  std::map<std::tuple<int, int, std::int64_t>, int> recv_seq;  // (src, dst, tag): recvs so far
  std::vector<BatchState> batches;
  // Fast-forward by shape: the simulated collectives of each (group, kind) in the order they
  // finished (WorkSource::collectives_by_shape).
  std::map<std::pair<std::string, OpKind>, std::vector<const Instance*>> shape_history;
  std::vector<BatchId> empty_batches;  // emitted with no op: finished once the source returns
  std::map<std::tuple<int, int, std::int64_t>, Mailbox> mail;  // (src, dst, tag)
  std::vector<OpRecord> records;
  std::vector<CollectiveRecord> coll_records;
  sc_time last_end = sc_core::SC_ZERO_TIME;
  std::set<std::string> warned;  // planner notes already logged
  // Machine::layout() of each chip list planned so far: a rack's layout holds every chip's
  // neighbours, copied whole at each call, for each collective planned.
  std::map<std::vector<int>, GroupLayout> layouts;
  const GroupLayout& layout_of(const std::vector<int>& chips) {
    auto it = layouts.find(chips);
    if (it == layouts.end()) it = layouts.emplace(chips, machine.layout(chips)).first;
    return it->second;
  }
  // The first error thrown inside a process: the simulation stops and check_finished() rethrows
  // it, so a bad op becomes the same typed error as anywhere else (not a SystemC report).
  std::exception_ptr error;

  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (...) {
      if (!error) error = std::current_exception();
      sc_core::sc_stop();
    }
  }

  Impl(std::unique_ptr<WorkSource> owned, WorkSource& src, Machine& m,
       const config::ReplayParams& p, std::vector<int> map, FastForward f, ScaleOutGroups so)
      : owned_source(std::move(owned)),
        source(src),
        nr(src.num_ranks()),
        machine(m),
        params(p),
        ff(f),
        by_shape(f.enabled && f.collectives_by_shape.value_or(src.collectives_by_shape())),
        scale_out(std::move(so)),
        chip_of(std::move(map)) {
    if (chip_of.empty()) {
      if (nr > machine.chip_count()) {
        throw TraceError(fmt::format("the workload has {} ranks but the rack has {} chips", nr,
                                     machine.chip_count()));
      }
      for (int r = 0; r < nr; ++r) chip_of.push_back(r);
    }
    if (int(chip_of.size()) < nr) {
      throw TraceError(fmt::format("the placement gives chips for {} ranks, the workload has {}",
                                   chip_of.size(), nr));
    }
    for (std::size_t r = 0; r < chip_of.size(); ++r) {
      if (chip_of[r] < 0 || chip_of[r] >= machine.chip_count()) {
        throw TraceError(fmt::format("rank {} is placed on chip {}, the rack has chips 0 to {}", r,
                                     chip_of[r], machine.chip_count() - 1));
      }
    }
    state.resize(std::size_t(nr));
    collective_seq.resize(std::size_t(nr));
    if (ff.enabled) {
      units.resize(std::size_t(nr));
      unit_by_key.resize(std::size_t(nr));
      unit_of.resize(std::size_t(nr));
      position.resize(std::size_t(nr));
    }
    source.begin(*this);
    finish_empty_batches();
  }

  // Emitter: registers a batch's ops, matches its collectives and receives, plans the
  // collectives it completes and queues its ready ops (rank by rank, in emission order).
  BatchId emit(std::span<const trace::RankTrace> ranks, BatchOptions options) override {
    const BatchId b = BatchId(batches.size());
    batches.emplace_back();
    std::vector<std::pair<int, std::size_t>> firsts;  // (rank, first index of the batch)
    std::vector<bool> seen(std::size_t(nr), false);
    std::size_t ops = 0;
    for (const trace::RankTrace& rt : ranks) {
      const int r = rt.rank;
      if (r < 0 || r >= nr) {
        throw TraceError(fmt::format("batch {} gives ops to rank {}; the workload has ranks 0 to {}",
                                     b, r, nr - 1));
      }
      if (seen[std::size_t(r)]) {
        throw TraceError(fmt::format("batch {} gives ops to rank {} twice", b, r));
      }
      seen[std::size_t(r)] = true;
      auto& st = state[std::size_t(r)];
      const std::size_t base = st.size();
      firsts.emplace_back(r, base);
      ops += rt.ops.size();
      st.resize(base + rt.ops.size());
      const auto index = trace::index_by_id(rt);
      for (std::size_t j = 0; j < rt.ops.size(); ++j) {
        st[base + j].op = &rt.ops[j];
        st[base + j].batch = b;
        for (trace::OpId d : rt.ops[j].deps) {
          const auto it = index.find(d);
          if (it == index.end()) continue;  // topological_order() names it below
          st[base + j].pending++;
          st[base + it->second].dependents.push_back(base + j);
        }
      }
      if (ff.enabled) find_units(r, rt, base, index, b, options);
      // Collectives match by their order in the rank's topological order (docs/trace-format.md).
      auto& seq = collective_seq[std::size_t(r)];
      for (std::size_t j : trace::topological_order(rt)) {
        const std::size_t i = base + j;
        const trace::Op& op = rt.ops[j];
        if (op.kind == OpKind::recv) {
          st[i].p2p_seq = recv_seq[{op.peer, r, op.tag}]++;
        }
        if (!trace::is_collective(op.kind)) continue;
        const int k = seq[op.group]++;
        const auto key = std::pair{op.group, k};
        Instance*& slot = open_instances[key];
        if (!slot) {
          const auto& groups = source.groups();
          const auto g = groups.find(op.group);
          if (g == groups.end()) {
            throw TraceError(fmt::format("rank {} op {} uses group \"{}\", which the workload does "
                                         "not define",
                                         r, op.id, op.group));
          }
          instances.push_back(std::make_unique<Instance>());
          slot = instances.back().get();
          Instance* inst = slot;
          unplanned.push_back(inst);
          inst->id = instances.size();
          inst->ranks = g->second;
          const std::size_t n = inst->ranks.size();
          inst->ops.assign(n, nullptr);
          inst->op_index.assign(n, 0);
          inst->arrived.assign(n, false);
          inst->delivered.assign(n, {});
          inst->outstanding.assign(n, 0);
          inst->waiting.assign(n, {});
          inst->delivery.resize(n);
          inst->sent.resize(n);
          inst->rec.group = op.group;
          inst->rec.sequence = k;
          inst->rec.kind = op.kind;
          inst->rec.members = int(n);
          inst->rec.bytes = op.bytes;
        }
        Instance* inst = slot;
        const auto pos = std::find(inst->ranks.begin(), inst->ranks.end(), r);
        if (pos == inst->ranks.end()) {
          throw TraceError(fmt::format("rank {} op {} uses group \"{}\" it is not a member of", r,
                                       op.id, op.group));
        }
        const int member = int(pos - inst->ranks.begin());
        inst->ops[std::size_t(member)] = &op;
        inst->op_index[std::size_t(member)] = i;
        st[i].instance = inst;
        st[i].member = member;
        if (++inst->joined == int(inst->ranks.size())) open_instances.erase(key);
      }
    }
    batches[b].remaining = ops;
    // A collective whose members have all been emitted is planned when its first member arrives
    // (plan_if_due), or now if one is already waiting; the others wait for their members (or are
    // reported after the run). Planned at emission, a trace's collectives held every schedule at
    // once: 836 MB of the default step's 1.3 GB peak.
    std::size_t kept = 0;
    for (Instance* inst : unplanned) {
      if (inst->joined == int(inst->ranks.size())) {
        if (std::find(inst->arrived.begin(), inst->arrived.end(), true) != inst->arrived.end()) {
          plan(*inst);
        }
      } else {
        unplanned[kept++] = inst;
      }
    }
    unplanned.resize(kept);
    for (const auto& [r, base] : firsts) {
      const auto& st = state[std::size_t(r)];
      for (std::size_t i = base; i < st.size(); ++i) {
        if (st[i].pending == 0) ready.emplace_back(r, i);
      }
    }
    if (sc_core::sc_is_running() && !ready_empty()) ready_ev.notify(sc_core::SC_ZERO_TIME);
    if (ops == 0) empty_batches.push_back(b);
    return b;
  }

  // `wake`: notify the members waiting for the plan (none wait when the first arrival plans it).
  void plan(Instance& inst, bool wake = true) {
    const trace::Op& op = *inst.ops[0];
    int root_member = 0;
    if (op.kind == OpKind::broadcast) {
      const auto pos = std::find(inst.ranks.begin(), inst.ranks.end(), op.root);
      root_member = pos == inst.ranks.end() ? 0 : int(pos - inst.ranks.begin());
    }
    std::vector<int> chips;
    for (int r : inst.ranks) chips.push_back(chip_of[std::size_t(r)]);
    if (const auto fo = scale_out.folded.find(inst.rec.group); fo != scale_out.folded.end()) {
      if (inst.ops.size() != 1) {
        throw InternalError(fmt::format("folded group {} has {} members here", fo->first,
                                        inst.ops.size()));
      }
      inst.schedule = plan_folded(op, fo->second, params.collectives);
      inst.rec.members = fo->second;
    } else if (scale_out.unfolded.count(inst.rec.group)) {
      config::CollectiveParams cp = params.collectives;
      cp.algorithm = CollectiveAlgorithm::rdh;
      inst.schedule = plan_collective(inst.ops, root_member, cp, layout_of(chips));
    } else {
      inst.schedule = plan_collective(inst.ops, root_member, params.collectives,
                                      layout_of(chips));
    }
    for (const auto& note : inst.schedule.notes) {
      if (warned.insert(note).second) log_->warn("{}", note);
    }
    inst.rec.algorithm = inst.schedule.algorithm;
    inst.rec.rings = inst.schedule.rings;
    for (auto bytes : bytes_sent(inst.schedule)) inst.rec.wire_bytes += bytes;
    if (by_shape) {
      std::vector<double> sent(inst.schedule.members.size(), 0), received(sent.size(), 0);
      for (std::size_t m = 0; m < inst.schedule.members.size(); ++m) {
        for (const Step& step : inst.schedule.members[m]) {
          for (const Transfer& t : step.sends) sent[m] += double(t.bytes);
          for (const Transfer& t : step.recvs) received[m] += double(t.bytes);
        }
        inst.total_bytes += sent[m];
        inst.peak_bytes = std::max({inst.peak_bytes, sent[m], received[m]});
      }
    }
    if (wake && sc_core::sc_is_running()) inst.planned->notify(sc_core::SC_ZERO_TIME);
  }

  // Plans a collective whose members have all been emitted, once. Planning reads only the ops
  // and the layout, so when it happens does not move any result.
  void plan_if_due(Instance& inst) {
    if (inst.schedule.members.empty() && inst.joined == int(inst.ranks.size())) plan(inst, false);
  }

  // Tells the source about batches emitted with no op (they may emit more).
  void finish_empty_batches() {
    while (!empty_batches.empty()) {
      const BatchId b = empty_batches.front();
      empty_batches.erase(empty_batches.begin());
      const sc_time now = sc_core::sc_time_stamp();
      source.finished({b, now, now}, *this);
    }
  }

  // Fast-forward: the units of the ops of rank r that a batch `b` emitted (from index `base` on,
  // `index` their positions in `rt` by id), and which of them repeat the one before them in their
  // series.
  void find_units(int r, const trace::RankTrace& rt, std::size_t base,
                  const std::unordered_map<trace::OpId, std::size_t>& index, BatchId b,
                  const BatchOptions& options) {
    auto& us = units[std::size_t(r)];
    auto& uo = unit_of[std::size_t(r)];
    auto& pos = position[std::size_t(r)];
    auto& by_key = unit_by_key[std::size_t(r)];
    uo.resize(base + rt.ops.size(), -1);
    pos.resize(base + rt.ops.size(), 0);
    std::vector<std::map<UnitKey, int>::iterator> fresh;
    for (std::size_t j = 0; j < rt.ops.size(); ++j) {
      const auto key = source.unit_key(r, rt.ops[j]);
      if (!key) continue;
      auto [it, created] = by_key.try_emplace(*key, int(us.size()));
      Unit* u;
      if (created) {
        us.emplace_back();
        u = &us.back();
        u->batch = b;
        u->hold_back = options.hold_back_last_unit;
        fresh.push_back(it);
      } else {
        u = &us[std::size_t(it->second)];
        if (u->batch != b) {
          throw TraceError(fmt::format("rank {} op {} of batch {}: its fast-forward unit (series "
                                       "{}, position {}) came in batch {}; a unit's ops come in "
                                       "one batch",
                                       r, rt.ops[j].id, b, key->series, key->position, u->batch));
        }
      }
      uo[base + j] = it->second;
      pos[base + j] = u->ops.size();
      u->ops.push_back(base + j);
    }
    ffs.units += fresh.size();
    // In key order: a unit's predecessor is the one before it of the same series.
    std::sort(fresh.begin(), fresh.end(),
              [](const auto& x, const auto& y) { return x->first < y->first; });
    int last_fresh = -1;
    std::vector<DepSig> last_sig;
    for (const auto& it : fresh) {
      const int u = it->second;
      std::vector<DepSig> sig = signature(r, us[std::size_t(u)], rt, base, index);
      if (it != by_key.begin()) {
        const auto prev = std::prev(it);
        Unit& p = us[std::size_t(prev->second)];
        if (prev->first.series == it->first.series && !p.has_next) {
          const std::vector<DepSig>& psig = prev->second == last_fresh ? last_sig : p.sig;
          p.has_next = true;
          if (repeats(r, p, psig, us[std::size_t(u)], sig)) {
            us[std::size_t(u)].previous = prev->second;
            p.repeated = true;
            ffs.repeating_units++;
          }
          if (p.batch != b) std::vector<DepSig>().swap(p.sig);  // compared: no longer needed
        }
      }
      last_fresh = u;
      last_sig = std::move(sig);
    }
    // A unit that ends its series here may be compared with a unit of a later batch.
    for (const auto& it : fresh) {
      const auto next = std::next(it);
      if (next != by_key.end() && next->first.series == it->first.series) continue;
      Unit& u = us[std::size_t(it->second)];
      u.sig = it->second == last_fresh ? last_sig : signature(r, u, rt, base, index);
    }
  }

  // How each op of unit `u` (emitted in `rt` from index `base` on) depends on the ops of `u` and
  // on others.
  std::vector<DepSig> signature(int r, const Unit& u, const trace::RankTrace& rt,
                                std::size_t base,
                                const std::unordered_map<trace::OpId, std::size_t>& index) const {
    const auto& uo = unit_of[std::size_t(r)];
    const auto& pos = position[std::size_t(r)];
    std::vector<DepSig> out;
    out.reserve(u.ops.size());
    for (std::size_t i : u.ops) {
      DepSig s;
      for (trace::OpId d : rt.ops[i - base].deps) {
        const auto it = index.find(d);
        if (it == index.end()) continue;
        const std::size_t k = base + it->second;
        if (uo[k] == uo[i]) {
          s.first.push_back(pos[k]);
        } else {
          ++s.second;
        }
      }
      std::sort(s.first.begin(), s.first.end());
      out.push_back(std::move(s));
    }
    return out;
  }

  bool close(double a, double b) const {
    return std::abs(a - b) <= ff.size_tolerance * std::max(std::abs(a), std::abs(b));
  }

  // Whether unit b of rank r repeats unit a: ops that match one to one, with the same
  // dependencies within the unit and as many outside it.
  bool repeats(int r, const Unit& a, const std::vector<DepSig>& a_sig, const Unit& b,
               const std::vector<DepSig>& b_sig) const {
    if (a.ops.size() != b.ops.size()) return false;
    // A unit of an earlier batch that did not end its series there kept no signature (a source
    // that emits a series out of order): it is not compared.
    if (a_sig.size() != a.ops.size() || b_sig.size() != b.ops.size()) return false;
    const auto& st = state[std::size_t(r)];
    for (std::size_t j = 0; j < a.ops.size(); ++j) {
      const trace::Op& x = *st[a.ops[j]].op;
      const trace::Op& y = *st[b.ops[j]].op;
      if (x.kind != y.kind || x.group != y.group || x.peer != y.peer || x.dtype != y.dtype ||
          x.root != y.root || !close(trace::op_flops(x), trace::op_flops(y)) ||
          !close(trace::comm_bytes(x), trace::comm_bytes(y)) ||
          !close(double(x.elements), double(y.elements)) || a_sig[j] != b_sig[j]) {
        return false;
      }
    }
    return true;
  }

  // Decided when the unit's first op starts: fast when the two repetitions before it have
  // finished and took times within the tolerance of each other, and it is not the last of its
  // run: what follows the run (a pipeline's drain, the gradient synchronisation) overlaps the
  // last repetition, which therefore differs from the steady state (the last backward
  // micro-batch of the default step takes 14 % longer than the one before it). A unit nothing
  // has been compared with yet is the last of its run only if its batch holds it back
  // (BatchOptions::hold_back_last_unit).
  void decide(int r, Unit& u) {
    if (u.previous < 0) return;
    if (!u.repeated && (u.has_next || u.hold_back)) return;
    const Unit& p = units[std::size_t(r)][std::size_t(u.previous)];
    if (!p.complete() || p.previous < 0) return;
    const Unit& pp = units[std::size_t(r)][std::size_t(p.previous)];
    if (!pp.complete()) return;
    const double a = (p.last_end - p.first_start).to_seconds();
    const double b = (pp.last_end - pp.first_start).to_seconds();
    u.fast = std::abs(a - b) <= ff.tolerance * std::max(a, b);
    if (u.fast) ffs.units_fast_forwarded++;
  }

  // The index of the op of the previous repetition that op i of rank r repeats, when its unit
  // is fast; -1 otherwise.
  std::ptrdiff_t counterpart_index(int r, std::size_t i) const {
    if (!ff.enabled) return -1;
    const int u = unit_of[std::size_t(r)][i];
    if (u < 0) return -1;
    const Unit& unit = units[std::size_t(r)][std::size_t(u)];
    if (!unit.fast) return -1;
    const Unit& p = units[std::size_t(r)][std::size_t(unit.previous)];
    return std::ptrdiff_t(p.ops[position[std::size_t(r)][i]]);
  }

  // Fast-forward by shape: the latest simulated collective of `inst`'s group and kind within the
  // size tolerance of it, when the one of that shape before it took a time within the tolerance
  // of its own (two steady repetitions, as decide() asks of units); null otherwise. Looks back
  // over a bounded number of collectives so that the search stays short.
  const Instance* shape_counterpart(const Instance& inst) const {
    const auto it = shape_history.find({inst.rec.group, inst.rec.kind});
    if (it == shape_history.end() || inst.schedule.members.empty()) return nullptr;
    auto same_shape = [this](const Instance& a, const Instance& b) {
      return a.ranks.size() == b.ranks.size() && close(a.total_bytes, b.total_bytes) &&
             close(a.peak_bytes, b.peak_bytes);
    };
    auto time = [](const Instance& a) { return (a.rec.end - a.rec.last_arrival).to_seconds(); };
    constexpr std::size_t kLookBack = 16;
    const auto& h = it->second;
    const std::size_t stop = h.size() > kLookBack ? h.size() - kLookBack : 0;
    for (std::size_t i = h.size(); i-- > stop;) {
      if (!same_shape(*h[i], inst)) continue;
      for (std::size_t j = i; j-- > stop;) {
        if (!same_shape(*h[j], *h[i])) continue;
        const double a = time(*h[i]), b = time(*h[j]);
        return std::abs(a - b) <= ff.tolerance * std::max(a, b) ? h[i] : nullptr;
      }
      return nullptr;
    }
    return nullptr;
  }

  // A fast-forwarded collective: its members meet, then take the time the counterpart took from
  // its last arrival to its end (by shape: its launch and descriptor time, and the rest scaled by
  // Instance::scale); each member's sends are charged to the links.
  void run_fast_collective(Instance& inst, int me, int chip) {
    const std::size_t m = std::size_t(me);
    const std::size_t n = inst.ranks.size();
    plan_if_due(inst);
    if (inst.arrivals == 0) inst.rec.first_arrival = sc_core::sc_time_stamp();
    inst.arrived[m] = true;
    inst.rec.last_arrival = sc_core::sc_time_stamp();
    if (++inst.arrivals == int(n)) inst.all_arrived->notify(sc_core::SC_ZERO_TIME);
    while (inst.arrivals < int(n)) model::wait_counted(activity_, *inst.all_arrived);
    const Instance& cp = *inst.counterpart;
    sc_time took = cp.rec.end - cp.rec.last_arrival;
    if (inst.scale != 1) {
      const sc_time fixed = std::min(
          took, sc_time(cp.rec.breakdown.launch_s + cp.rec.breakdown.descriptor_s, sc_core::SC_SEC));
      took = fixed + (took - fixed) * inst.scale;
    }
    const sc_time end = inst.rec.last_arrival + took;
    if (end > sc_core::sc_time_stamp()) model::wait_counted(activity_, end - sc_core::sc_time_stamp());
    for (const Step& step : inst.schedule.members[m]) {
      for (const Transfer& t : step.sends) {
        if (t.peer < 0) continue;  // the scale-out network of folded replicas charges nothing here
        machine.account_transfer(chip, chip_of[std::size_t(inst.ranks[std::size_t(t.peer)])],
                                 t.bytes, mix(inst.id, std::uint64_t(me) << 32 | std::uint64_t(t.peer)));
        ffs.transfers_accounted++;
        ffs.bytes_accounted += double(t.bytes);
      }
    }
    ffs.ops_fast_forwarded++;
    inst.finished++;
    inst.rec.end = end;
    inst.rec.breakdown = inst.counterpart->rec.breakdown;
    inst.rec.fast_forwarded = true;
    if (inst.finished == int(n)) {
      coll_records.push_back(inst.rec);
      ffs.collectives_fast_forwarded++;
      release(inst);
    }
  }

  // Ops become ready in run_op(); only the dispatcher starts them, each on an op process of
  // its own that is a child of one long-lived process.
  // A queue in a vector (taken from `ready_head`): a deque here failed under ASan in its
  // destructor, on a machine destroyed while op processes were blocked (SystemC's stack switches
  // leave the sanitizer's view of the main stack stale), as the helper pool's did (a0b2025).
  std::vector<std::pair<int, std::size_t>> ready;
  std::size_t ready_head = 0;
  bool ready_empty() const { return ready_head == ready.size(); }
  sc_event ready_ev;
  // Each op process has a stack of its own, two kernel mappings; 70,000 at once exhaust the
  // process's mappings ("(E518) stack setup failed"). Beyond this many busy op processes, ready
  // ops wait in `ready` without one. Every rank may hold a few ops that wait on other ranks
  // (receives, collectives) at once, so the bound grows with the ranks (16 each: a cluster of
  // 1,152 ranks replays unfolded) and stays far below the kernel's mappings. No bundled trace
  // comes near it, so below it the start order, and every result, is what it was without it.
  const std::size_t max_live_ops = max_live_op_processes(nr);
  std::size_t live_ops = 0, peak_live_ops = 0;
  // An op process that has finished its op waits for the next one instead of ending: spawning
  // one per op mapped, protected and unmapped a stack 468K times in the default run (a third of
  // its time). Handed an op by an immediate notification, an idle process runs in the same
  // evaluation phase, in the same place of the runnable queue, as a freshly spawned one would.
  struct OpProcess {
    int r = -1;
    std::size_t i = 0;
    sc_event go;
  };
  std::vector<std::unique_ptr<OpProcess>> op_processes;
  std::vector<OpProcess*> idle_op_processes;

  void spawn(int r, std::size_t i) {
    ready.emplace_back(r, i);
    ready_ev.notify(sc_core::SC_ZERO_TIME);
  }

  void op_process_loop(OpProcess& p) {
    for (;;) {
      guarded([&] { run_op(p.r, p.i); });
      // Only an op that found every process slot taken waits for this one to end.
      if (live_ops-- == max_live_ops && !ready_empty()) ready_ev.notify(sc_core::SC_ZERO_TIME);
      idle_op_processes.push_back(&p);
      sc_core::wait(p.go);  // not an activation of the model: a fresh process had none either
    }
  }

  void start_op(int r, std::size_t i) {
    peak_live_ops = std::max(peak_live_ops, ++live_ops);
    if (!idle_op_processes.empty()) {
      OpProcess& p = *idle_op_processes.back();
      idle_op_processes.pop_back();
      p.r = r;
      p.i = i;
      p.go.notify();
      return;
    }
    op_processes.push_back(std::make_unique<OpProcess>());
    OpProcess& p = *op_processes.back();
    p.r = r;
    p.i = i;
    sc_core::sc_spawn_options opt;
    sc_core::sc_spawn([this, &p] { op_process_loop(p); }, nullptr, &opt);
  }

  // The ops ready at the start were queued when their batches were emitted (emit()).
  void dispatch() {
    for (;;) {
      while (!ready_empty() && live_ops < max_live_ops) {
        const auto [r, i] = ready[ready_head++];
        if (ready_empty()) {  // drained: reuse the storage
          ready.clear();
          ready_head = 0;
        }
        start_op(r, i);
      }
      model::wait_counted(activity_, ready_ev);
    }
  }

  void run_op(int r, std::size_t i) {
    auto& s = state[std::size_t(r)][i];
    const trace::Op& op = *s.op;
    s.started = true;
    s.start = sc_core::sc_time_stamp();
    if (BatchState& bs = batches[s.batch]; !bs.started) {
      bs.started = true;
      bs.start = s.start;
    }
    const int chip = chip_of[std::size_t(r)];
    Unit* unit = nullptr;
    if (ff.enabled && unit_of[std::size_t(r)][i] >= 0) {
      unit = &units[std::size_t(r)][std::size_t(unit_of[std::size_t(r)][i])];
      if (!unit->started) {
        unit->started = true;
        unit->first_start = s.start;
        decide(r, *unit);
      }
    }
    const std::ptrdiff_t same_index = counterpart_index(r, i);
    const OpState* same = same_index < 0 ? nullptr : &state[std::size_t(r)][std::size_t(same_index)];
    if (log_->should_log(spdlog::level::trace)) {
      log_->trace("{} ns: rank {} (chip {}) starts op {} {} '{}'", s.start.to_seconds() * 1e9, r,
                  chip, op.id, trace::kind_name(op.kind), op.name);
    }
    if (trace::is_compute(op.kind) || op.kind == OpKind::mem_load ||
        op.kind == OpKind::mem_store) {
      if (same) {  // timed from its counterpart, counted but not simulated
        machine.fast_compute(chip, op, *same->op,
                             same->end - same->start);
        ffs.ops_fast_forwarded++;
        ffs.compute_fast_forwarded++;
      } else {
        machine.compute(chip, op);
      }
    } else if (op.kind == OpKind::delay) {
      if (op.duration.si > 0) model::wait_counted(activity_, to_sc(op.duration));
    } else if (op.kind == OpKind::send) {
      const int to = chip_of.at(std::size_t(op.peer));
      if (same) {
        if (same->end > same->start) model::wait_counted(activity_, same->end - same->start);
        machine.account_transfer(
            chip, to, op.bytes,
            mix(std::uint64_t(r) << 32 | std::uint64_t(op.peer), std::uint64_t(op.tag)));
        ffs.ops_fast_forwarded++;
        ffs.transfers_accounted++;
        ffs.bytes_accounted += double(op.bytes);
      } else {
        machine.transfer(chip, to, op.bytes,
                         mix(std::uint64_t(r) << 32 | std::uint64_t(op.peer), std::uint64_t(op.tag)));
      }
      auto& box = mail[{r, op.peer, op.tag}];
      box.delivered++;
      box.ev.notify(sc_core::SC_ZERO_TIME);
    } else if (op.kind == OpKind::recv) {
      auto& box = mail[{op.peer, r, op.tag}];
      while (box.delivered <= s.p2p_seq) model::wait_counted(activity_, box.ev);
    } else if (s.instance) {
      Instance& inst = *s.instance;
      if (inst.mode == Instance::Mode::undecided) {
        const Instance* c = same ? same->instance : nullptr;
        bool fast = c && c->finished == int(c->ranks.size()) &&
                    inst.joined == int(inst.ranks.size());
        if (!fast && by_shape) {
          plan_if_due(inst);  // the first arrival plans it: its shape is read from the plan
          c = shape_counterpart(inst);
          fast = c != nullptr;
          if (fast && c->peak_bytes > 0) inst.scale = inst.peak_bytes / c->peak_bytes;
        }
        inst.mode = fast ? Instance::Mode::fast : Instance::Mode::simulated;
        inst.counterpart = fast ? c : nullptr;
      }
      if (inst.mode == Instance::Mode::fast) {
        run_fast_collective(inst, s.member, chip);
      } else {
        run_collective(inst, s.member, chip);
      }
    }
    s.finished = true;
    s.end = sc_core::sc_time_stamp();
    if (s.end > last_end) last_end = s.end;
    if (unit) {
      unit->done++;
      if (s.end > unit->last_end) unit->last_end = s.end;
    }
    records.push_back({r, i, s.start, s.end});
    for (std::size_t d : s.dependents) {
      if (--state[std::size_t(r)][d].pending == 0) spawn(r, d);
    }
    // The batch's last op: the source may emit more (which may grow this rank's ops).
    if (--batches[s.batch].remaining == 0) {
      source.finished({s.batch, batches[s.batch].start, s.end}, *this);
      finish_empty_batches();
    }
  }

  void run_collective(Instance& inst, int me, int chip) {
    const std::size_t m = std::size_t(me);
    const sc_time now = sc_core::sc_time_stamp();
    plan_if_due(inst);
    if (std::none_of(inst.arrived.begin(), inst.arrived.end(), [](bool b) { return b; })) {
      inst.rec.first_arrival = now;
    }
    inst.arrived[m] = true;
    inst.rec.last_arrival = now;
    // Sends that were waiting for this member to join go out now.
    auto waiting = std::move(inst.waiting[m]);
    for (const auto& ws : waiting) {
      send(inst, ws.from, me, ws.bytes, ws.pieces, ws.progressive, ws.message);
    }
    // Unplanned: a member's op has not been emitted yet (or never will be: reported after the run).
    while (inst.schedule.members.empty()) model::wait_counted(activity_, *inst.planned);
    const trace::DType dtype = inst.ops[m]->dtype;
    std::map<int, int> expected;  // cumulative messages expected from each source
    std::map<int, int> mirror_base;  // folded replicas: messages counted before this step
    CollectiveRecord::Breakdown b;
    auto since = [](const sc_time& t0) { return (sc_core::sc_time_stamp() - t0).to_seconds(); };
    for (const Step& step : inst.schedule.members[m]) {
      if (step.launch_s > 0) {
        model::wait_counted(activity_, sc_time(step.launch_s, sc_core::SC_SEC));
        b.launch_s += step.launch_s;
      }
      if (step.descriptor_s > 0) {
        model::wait_counted(activity_, sc_time(step.descriptor_s, sc_core::SC_SEC));
        b.descriptor_s += step.descriptor_s;
      }
      // Consecutive pieces to one peer go as one transfer where the machine merges them.
      const bool merge = machine.merges_pieces();
      // A step that reduces what it receives takes merged pieces as they arrive (the plans are
      // symmetric: a member's step reduces when its peers' matching steps do).
      const bool progressive = step.reduce_bytes > 0;
      for (std::size_t k = 0; k < step.sends.size();) {
        // The consecutive pieces to one peer are sent together.
        const int peer = step.sends[k].peer;
        std::size_t g = k + 1;
        while (g < step.sends.size() && step.sends[g].peer == peer) ++g;
        const SentTogether message{++messages_, merge ? 1u : std::uint32_t(g - k)};
        while (k < g) {
          const std::size_t e = merge ? g : k + 1;
          std::uint64_t bytes = 0;
          for (std::size_t i = k; i < e; ++i) bytes += step.sends[i].bytes;
          const int pieces = int(e - k);
          k = e;
          inst.outstanding[m] += pieces;
          if (peer < 0) {
            mirror_send(inst, me, peer, bytes, pieces, progressive, true, message);
          } else if (inst.arrived[std::size_t(peer)]) {
            send(inst, me, peer, bytes, pieces, progressive, message);
          } else {
            inst.waiting[std::size_t(peer)].push_back({me, bytes, pieces, progressive, message});
          }
        }
      }
      // Each received piece is reduced as soon as it is there, while later pieces arrive; the
      // step ends when its reductions have.
      int reducing = 0;
      sc_event reduced;
      // Folded replicas: what the replica -peer away sends here arrives with our send to it (the
      // k-th piece received with the k-th piece sent). A receive from a replica this step sends
      // nothing to has no send of ours to stand for it: its data is moved on its own.
      std::map<int, int> mirror_pieces, mirror_k;
      for (const Transfer& t : step.sends) {
        if (t.peer < 0) ++mirror_pieces[t.peer];
      }
      for (const Transfer& t : step.recvs) {
        if (t.peer >= 0 || step_sends_to(step, t.peer)) continue;
        ++mirror_pieces[t.peer];
        mirror_send(inst, me, t.peer, t.bytes, 1, false, false, SentTogether{});
      }
      for (const Transfer& t : step.recvs) {
        const int need = t.peer < 0
                             ? mirror_base[t.peer] + std::min(++mirror_k[t.peer], mirror_pieces[t.peer])
                             : ++expected[t.peer];
        const sc_time w0 = sc_core::sc_time_stamp();
        while (inst.delivered[m][t.peer] < need) model::wait_counted(activity_, *inst.delivery[m]);
        (step.kind == StepKind::sync ? b.sync_s : b.wire_s) += since(w0);
        if (t.reduce) {
          ++reducing;
          machine.start_reduce(chip, t.bytes, dtype, [&reducing, &reduced] {
            if (--reducing == 0) reduced.notify(sc_core::SC_ZERO_TIME);
          });
        }
      }
      const sc_time r0 = sc_core::sc_time_stamp();
      while (reducing > 0) model::wait_counted(activity_, reduced);
      b.reduce_s += since(r0);
      for (const auto& [peer, n] : mirror_pieces) mirror_base[peer] += n;
    }
    const sc_time w0 = sc_core::sc_time_stamp();
    while (inst.outstanding[m] > 0) model::wait_counted(activity_, *inst.sent[m]);
    b.wire_s += since(w0);
    inst.finished++;
    const sc_time end = sc_core::sc_time_stamp();
    if (end >= inst.rec.end) {
      inst.rec.end = end;
      inst.rec.breakdown = b;
    }
    if (inst.finished == int(inst.ranks.size())) {
      coll_records.push_back(inst.rec);
      if (by_shape) {
        shape_history[{inst.rec.group, inst.rec.kind}].push_back(&inst);
      }
      release(inst);
    }
  }

  // A collective every member has finished: nothing reads its plan or its delivery counts any
  // more (a later instance that repeats it reads only `rec`, `ranks` and `finished`, and one that
  // takes it as its counterpart by shape its `total_bytes` and `peak_bytes` too), and kept
  // they grew with every collective of the run: a 144-member all-to-all's schedule and counts
  // hold 144 x 143 transfers and map entries, a planned collective's memory.
  void release(Instance& inst) {
    std::vector<std::vector<Step>>().swap(inst.schedule.members);
    std::vector<std::map<int, int>>().swap(inst.delivered);
    std::vector<std::vector<Instance::Waiting>>().swap(inst.waiting);
  }

  // The arrivals of a merged send's pieces before its last, counted at member `at` as delivered
  // from `peer` (`early`: how many so far, which the send's completion then leaves out); none
  // without `early`.
  static std::function<void(std::uint32_t)> early_arrivals(Instance& inst, int at, int peer,
                                                           const std::shared_ptr<int>& early) {
    if (!early) return {};
    return [&inst, at, peer, early](std::uint32_t n) {
      inst.delivered[std::size_t(at)][peer] += int(n) - *early;
      *early = int(n);
      inst.delivery[std::size_t(at)]->notify(sc_core::SC_ZERO_TIME);
    };
  }

  // One send (`pieces` pieces, `bytes` in all) of a collective step from member `from` to member
  // `to` (which has joined): the deliveries are counted at `to` when the data has arrived.
  // With `progressive`, pieces are counted as they arrive where the machine says so.
  void send(Instance& inst, int from, int to, std::uint64_t bytes, int pieces, bool progressive,
            SentTogether message) {
    const int src_chip = chip_of[std::size_t(inst.ranks[std::size_t(from)])];
    const int dst_chip = chip_of[std::size_t(inst.ranks[std::size_t(to)])];
    // Pieces counted before the last arrived (shared by both callbacks).
    auto early = progressive && pieces > 1 ? std::make_shared<int>(0) : nullptr;
    auto done = [&inst, from, to, pieces, early] {
      inst.delivered[std::size_t(to)][from] += pieces - (early ? *early : 0);
      inst.delivery[std::size_t(to)]->notify(sc_core::SC_ZERO_TIME);
      if ((inst.outstanding[std::size_t(from)] -= pieces) == 0) {
        inst.sent[std::size_t(from)]->notify(sc_core::SC_ZERO_TIME);
      }
    };
    const std::uint64_t flow = mix(inst.id, std::uint64_t(from) << 32 | std::uint64_t(to));
    machine.set_pattern(traffic_pattern(inst.rec.kind, inst.rec.algorithm));
    machine.set_message(message);
    if (pieces > 1) {
      machine.start_pieces(src_chip, dst_chip, bytes, std::uint32_t(pieces), flow, std::move(done),
                           early_arrivals(inst, to, from, early));
    } else {
      machine.start_transfer(src_chip, dst_chip, bytes, flow, std::move(done));
    }
    machine.set_message({});
    machine.set_pattern(0);
  }

  static bool step_sends_to(const Step& step, int peer) {
    return std::any_of(step.sends.begin(), step.sends.end(),
                       [&](const Transfer& x) { return x.peer == peer; });
  }

  // A send of member `from` to the folded replica -`peer` away: by symmetry, its arrival is
  // also the arrival of what that replica sends to `from` (counted as delivered from `peer`).
  // `outgoing` false: only the arrival is counted (a receive with no send of ours).
  // `progressive` as for send().
  void mirror_send(Instance& inst, int from, int peer, std::uint64_t bytes, int pieces,
                   bool progressive, bool outgoing, SentTogether message) {
    const int chip = chip_of[std::size_t(inst.ranks[std::size_t(from)])];
    auto early = progressive && pieces > 1 ? std::make_shared<int>(0) : nullptr;
    auto done = [&inst, from, peer, pieces, outgoing, early] {
      inst.delivered[std::size_t(from)][peer] += pieces - (early ? *early : 0);
      inst.delivery[std::size_t(from)]->notify(sc_core::SC_ZERO_TIME);
      if (outgoing && (inst.outstanding[std::size_t(from)] -= pieces) == 0) {
        inst.sent[std::size_t(from)]->notify(sc_core::SC_ZERO_TIME);
      }
    };
    const std::uint64_t flow =
        mix(inst.id, std::uint64_t(from) << 32 | std::uint64_t(std::uint32_t(peer)) | (outgoing ? 0 : 1ull << 63));
    machine.set_message(message);
    machine.start_replica_transfer(chip, chip, -peer, bytes, std::uint32_t(pieces), flow,
                                   std::move(done), early_arrivals(inst, from, peer, early));
    machine.set_message({});
  }

  std::string describe_op(int r, std::size_t i) const {
    const OpState& s = state[std::size_t(r)][i];
    const trace::Op& op = *s.op;
    return fmt::format("rank {} op {}{}{} ({})", r, op.id,
                       batches.size() > 1 ? fmt::format(" of batch {}", s.batch) : "",
                       op.name.empty() ? "" : fmt::format(" \"{}\"", op.name),
                       trace::kind_name(op.kind));
  }

  void check_finished() const {
    if (error) std::rethrow_exception(error);
    std::vector<std::string> problems;
    std::set<const Instance*> reported;
    std::size_t unfinished = 0;
    for (int r = 0; r < nr; ++r) {
      for (std::size_t i = 0; i < state[std::size_t(r)].size(); ++i) {
        const OpState& s = state[std::size_t(r)][i];
        if (s.finished) continue;
        ++unfinished;
        if (!s.started && s.pending == 0) {
          problems.push_back(fmt::format("{} is ready but waits for one of the {} op processes, "
                                         "all blocked",
                                         describe_op(r, i), max_live_ops));
          continue;
        }
        if (!s.started) continue;  // blocked behind an unfinished dependency
        const trace::Op& op = *s.op;
        if (s.instance) {
          if (!reported.insert(s.instance).second) continue;
          std::vector<int> arrived, missing;
          for (std::size_t j = 0; j < s.instance->ranks.size(); ++j) {
            (s.instance->arrived[j] ? arrived : missing).push_back(s.instance->ranks[j]);
          }
          problems.push_back(fmt::format(
              "{} on group \"{}\" (collective #{} of the group) waits for ranks [{}] that never "
              "reached it (arrived: [{}])",
              describe_op(r, i), op.group, s.instance->rec.sequence, fmt::join(missing, ", "),
              fmt::join(arrived, ", ")));
        } else if (op.kind == OpKind::recv) {
          problems.push_back(fmt::format("{} waits for a send from rank {} (tag {}) that never "
                                         "came",
                                         describe_op(r, i), op.peer, op.tag));
        } else {
          problems.push_back(fmt::format("{} started but never finished", describe_op(r, i)));
        }
      }
    }
    if (unfinished == 0) return;
    std::string text = fmt::format(
        "replay deadlocked: {} ops never finished; blocked operations:", unfinished);
    for (std::size_t k = 0; k < problems.size() && k < 12; ++k) text += "\n  " + problems[k];
    if (problems.size() > 12) text += fmt::format("\n  ... and {} more", problems.size() - 12);
    throw ReplayError(text);
  }
};

Replay::Replay(const sc_core::sc_module_name& name, WorkSource& source, Machine& machine,
               const config::ReplayParams& params, std::vector<int> rank_to_chip,
               FastForward fast_forward, ScaleOutGroups scale_out)
    : sc_core::sc_module(name),
      impl_(std::make_unique<Impl>(nullptr, source, machine, params, std::move(rank_to_chip),
                                   fast_forward, std::move(scale_out))) {
  SC_HAS_PROCESS(Replay);
  SC_THREAD(start);
}

Replay::Replay(const sc_core::sc_module_name& name, const trace::Workload& workload,
               Machine& machine, const config::ReplayParams& params,
               std::vector<int> rank_to_chip, FastForward fast_forward,
               ScaleOutGroups scale_out)
    : sc_core::sc_module(name) {
  auto source = std::make_unique<TraceSource>(workload);
  WorkSource& s = *source;
  impl_ = std::make_unique<Impl>(std::move(source), s, machine, params, std::move(rank_to_chip),
                                 fast_forward, std::move(scale_out));
  SC_HAS_PROCESS(Replay);
  SC_THREAD(start);
}

Replay::~Replay() = default;

void Replay::start() { impl_->dispatch(); }
void Replay::check_finished() const { impl_->check_finished(); }
const std::vector<OpRecord>& Replay::records() const { return impl_->records; }
const trace::Op& Replay::op(int rank, std::size_t index) const {
  return *impl_->state.at(std::size_t(rank)).at(index).op;
}
std::size_t Replay::batches() const { return impl_->batches.size(); }
const std::vector<CollectiveRecord>& Replay::collectives() const { return impl_->coll_records; }
sc_core::sc_time Replay::makespan() const { return impl_->last_end; }
FastForwardStats Replay::fast_forward_stats() const { return impl_->ffs; }
std::size_t max_live_op_processes(int ranks) {
  return std::clamp<std::size_t>(16 * std::size_t(std::max(ranks, 0)), 4096, 24576);
}

std::size_t Replay::peak_live_ops() const { return impl_->peak_live_ops; }

}  // namespace trnsim::replay
