// SPDX-License-Identifier: MIT
#include "chip/chip.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/activity.hpp"
#include "trnsim/error.hpp"


namespace trnsim::model {

using sc_core::sc_time;

Chip::Chip(const sc_core::sc_module_name& name, const config::ChipParams& p, ChipOptions opt)
    : ChipModel(name),
      p_(p),
      granularity_(opt.granularity),
      op_head_(opt.op_head),
      table_(std::move(opt.calibration)),
      ops_(stats().add(ChipStats::ops)),
      heads_(stats().add(ChipStats::ops_extrapolated)),
      flops_(stats().add(ChipStats::flops)),
      hbm_bytes_(stats().add(ChipStats::hbm_bytes)) {
  // The resolve step checked the layout (cores and stacks split over dies, granularity >= 1).
  set_static_power(p.static_power);
  budget_ = std::move(opt.workers);
  if (budget_) budget_->cores += std::uint64_t(p.cores);
  if (opt.memory) {
    memory_ = opt.memory;
    memory_model_ = "external";
  } else {
    if (!opt.make_memory) throw InternalError("Chip: no memory and no memory factory");
    MemoryBlock m = opt.make_memory("hbm");
    memory_ = m.port;
    owned_memory_ = std::move(m.block);
    memory_model_ = std::move(m.description);
  }
  alloc_.capacity = std::uint64_t(p.hbm.capacity_per_stack.si) * std::uint64_t(p.hbm.stacks);
  d2d_ = std::make_unique<DieCrossing>("d2d", p);
  for (int d = 0; d < p.dies; ++d) {
    die_ports_.push_back(std::make_unique<DieMemoryPort>(d, p_, *memory_, *d2d_));
  }
  dma_calendar_ = std::make_unique<WakeCalendar>("dma_calendar");
  for (int c = 0; c < p.cores; ++c) {
    cores_.push_back(std::make_unique<NeuronCore>(
        fmt::format("nc{}", c).c_str(), p.core, *die_ports_[std::size_t(die_of_core(c))],
        granularity_, dma_calendar_.get()));
  }
}

Chip::~Chip() = default;

void Chip::account_until(const sc_time& t) {
  if (owned_memory_) memory_->account_until(t);
}

int Chip::die_of_core(int i) const { return i / (p_.cores / p_.dies); }

std::uint64_t Chip::wakeups() const {
  std::uint64_t w = own_wakeups_;
  for (const auto& c : cores_) w += c->wakeups();
  return w;
}

std::size_t Chip::workers() const {
  std::size_t n = 0;
  for (const auto& pool : workers_) n += pool.all.size();
  return n;
}

std::size_t Chip::most_workers_on_a_core() const {
  std::size_t n = 0;
  for (const auto& pool : workers_) n = std::max(n, pool.all.size());
  return n;
}

// Each worker is a SystemC thread with a stack of its own (two of the kernel's memory mappings,
// 65,530 by default), never ended. Unbounded, a core kept one per program it ever ran at once,
// and a 144-chip rack at the detailed fidelity, whose op processes (up to 4,096 at once) put many
// ops on a chip together, spawned past the mappings ("(E518) stack setup failed"). So the
// workers of all the simulation's chips are bounded (CoreWorkerBudget, /sim/core_workers): a
// core may always have one; a further one only while the budget lasts. A program that finds its
// core's workers all busy and the budget spent waits, in the order programs were started on that
// core, until one of them finishes its program and takes the next (worker_loop). This cannot
// deadlock: a running program waits only on its own semaphores, on SBUF/PSUM space held by
// programs running on its core, and on the engines, DMA queues and memory, which serve it in
// turn; never on a program that has not started (which holds nothing) nor on another core or
// chip. So each running program ends and frees its worker, and a core with waiting programs has
// a worker (the first of each core is outside the budget's share). While no program has
// waited, a program starts exactly as before (a spawned thread and a notified idle one both run
// in this evaluation phase, in the order started), so results do not move where the bound does
// not bind; where it does, a waiting program starts when its core's worker frees (a limit of the
// simulator, not of the hardware: programs of different ops interleave less than unbounded).
void Chip::start_program(int core, Program& prog, Job& job) {
  if (workers_.empty()) workers_.resize(cores_.size());
  CoreWorkers& pool = workers_[std::size_t(core)];
  ++job.left;
  Worker* w = nullptr;
  for (auto& candidate : pool.all) {
    if (!candidate->prog) {
      w = candidate.get();
      break;
    }
  }
  if (!w && !pool.all.empty()) {
    if (budget_ && !budget_->may_add_extra()) {
      pool.waiting.push_back({&prog, &job});
      ++programs_waited_;
      return;
    }
    if (budget_) ++budget_->extra;
  }
  if (!w) {
    pool.all.push_back(std::make_unique<Worker>());
    w = pool.all.back().get();
    w->core = cores_[std::size_t(core)].get();
    // A child of the op process that needed it, which runs ops of every chip in turn (the
    // replay reuses its op processes): the chip's name keeps the names of its children apart.
    sc_core::sc_spawn([this, w, &pool] { worker_loop(*w, pool); },
                      fmt::format("{}_nc{}_worker{}", basename(), core, pool.all.size() - 1).c_str());
  }
  w->prog = &prog;
  w->job = &job;
  w->go.notify();  // immediate: the worker runs in this evaluation phase, as a spawned thread
}

void Chip::worker_loop(Worker& w, CoreWorkers& pool) {
  for (;;) {
    if (!w.prog) wait_counted(activity(), w.go);
    w.core->run(*w.prog);
    Job& job = *w.job;
    w.prog = nullptr;
    w.job = nullptr;
    if (--job.left == 0) job.done.notify();
    // A program that waited for a worker (start_program): the first in line runs now, on this
    // thread, without a wake-up of its own.
    if (pool.next < pool.waiting.size()) {
      const Pending p = pool.waiting[pool.next++];
      if (pool.next == pool.waiting.size()) {  // drained: reuse the storage
        pool.waiting.clear();
        pool.next = 0;
      }
      w.prog = p.prog;
      w.job = p.job;
    }
  }
}

OpStats Chip::fast_forward(const ComputeOp& op, const ComputeOp& counterpart,
                           const std::string& name, const sc_time& duration) {
  OpProfile scratch, cp_scratch;
  const OpProfile& pr = profile_of(table_.get(), op, scratch, this->name(), name);
  const OpProfile& cp = profile_of(table_.get(), counterpart, cp_scratch, this->name(), name);
  // Its engines' calibrated busy time counts as busy, as the op tier counts it (op_chip.cpp), so
  // that engine utilisation means the same at both tiers with fast-forward; the engines are not
  // held (the replay times the op from its counterpart, which held them).
  const int used = std::max(1, std::min(pr.cores_used, cores()));
  for (int c = 0; c < used; ++c) {
    NeuronCore& core = *cores_[std::size_t(c)];
    for (std::size_t e = 0; e < pr.engine_busy_s.size(); ++e) {
      if (!(pr.engine_busy_s[e] > 0)) continue;
      core.engine(EngineId(e)).count_busy(sc_time::from_seconds(pr.engine_busy_s[e] / double(used)));
    }
  }
  OpStats st = replay_profile(pr, cp, name, std::min(pr.cores_used, cores()), duration);
  ops_ += 1;
  flops_ += st.flops;
  hbm_bytes_ += st.hbm_bytes;
  return st;
}

OpStats Chip::execute(const ComputeOp& op, const std::string& name) {
  // Heads only with fast-forward inside ops on (and the profiles to time the rest); otherwise
  // every op runs whole without building its head or comparing keys.
  const bool heads = table_ && op_head_ < 1;
  const ComputeOp head = heads ? op_head(op, op_head_, cores()) : op;
  OpStats st;
  if (!heads || op_key(head) == op_key(op)) {
    st = run_lowered(op, name);
  } else {
    const OpStats h = run_lowered(head, name);
    OpProfile scratch, head_scratch;
    const OpProfile& pr = profile_of(table_.get(), op, scratch, this->name(), name);
    const OpProfile& ph = profile_of(table_.get(), head, head_scratch, this->name(), name);
    st = extend_head(pr, ph, h);
    heads_ += 1;
  }
  ops_ += 1;
  flops_ += st.flops;
  hbm_bytes_ += st.hbm_bytes;
  return st;
}

OpStats Chip::extend_head(const OpProfile& pr, const OpProfile& ph, const OpStats& h) {
  OpProfile rest;
  rest.read_bytes = std::max(0.0, pr.read_bytes - ph.read_bytes);
  rest.write_bytes = std::max(0.0, pr.write_bytes - ph.write_bytes);
  for (std::size_t e = 0; e < rest.engine_busy_s.size(); ++e) {
    rest.engine_busy_s[e] = std::max(0.0, pr.engine_busy_s[e] - ph.engine_busy_s[e]);
  }
  // The actions of the op beyond its head, counted when the rest ends (accruing until then).
  Actions beyond;
  for (const auto& [a, m] : pr.actions) {
    const auto it = ph.actions.find(a);
    const ActionMeter head = it == ph.actions.end() ? ActionMeter{} : it->second;
    if (m.rated_j > head.rated_j) {
      beyond.push_back({a, {std::max(0.0, m.quantity - head.quantity), m.rated_j - head.rated_j, 0}});
    }
  }
  // The rest's time alone; contention lengthens it as it waits for the engines (run_rest).
  const sc_time alone = pr.time_ps > ph.time_ps
                            ? sc_time(double(pr.time_ps - ph.time_ps), sc_core::SC_PS)
                            : sc_core::SC_ZERO_TIME;
  const std::uint64_t accrual = begin_accrual(beyond, sc_core::sc_time_stamp(), alone);
  run_rest(rest, alone, std::max(1, std::min(pr.cores_used, cores())));
  end_accrual(accrual);
  for (const auto& [a, m] : beyond) meter(a, 0).count_priced(m.quantity, m.rated_j);
  OpStats st = h;
  st.end_s = sc_core::sc_time_stamp().to_seconds();
  st.time_s = st.end_s - st.start_s;
  st.flops = pr.flops;
  st.hbm_bytes = pr.hbm_bytes;
  st.instructions = pr.instructions;
  st.cores_used = std::max(h.cores_used, std::min(pr.cores_used, cores()));
  return st;
}

void Chip::run_rest(const OpProfile& rest, const sc_time& duration, int cores_used) {
  // As the op tier replays an op (op_chip.cpp), in kOpPieces pieces of at least their share of
  // the rest's time alone. A piece holds each compute engine the op uses, on each used core, for
  // the whole piece: the tile model's engine queues are in order, and an op's instructions fill
  // them up to its end, so an op started beside it waits behind them (measured: holding only the
  // engines' busy time let such ops run up to 53 % faster than the tile model, docs/models/
  // fidelity.md). It occupies the DMA engines for the piece's bytes at their bandwidth (they serve
  // their queues in turn, packet by packet). It ends no earlier than all of them are free again,
  // so it waits behind work already queued on them, and its HBM reads and writes go to memory()
  // in slices over the piece.
  const auto& dma = p_.core.dma;
  const sc_time share = duration / double(kOpPieces);
  const int slices = op_slices(rest);
  SliceOp op;
  begin_slices(op);
  for (int piece = 0; piece < kOpPieces; ++piece) {
    const sc_time start = sc_core::sc_time_stamp();
    sc_time end = start + share;
    double bytes = 0;
    for (int k = 0; k < slices; ++k) {
      const PieceBytes b = slice_bytes(rest, piece * slices + k);
      bytes += double(b.read + b.write);
    }
    const sc_time moving = to_sc(transfer_time(
        Bytes(bytes / (double(cores_used) * double(dma.engines))), dma.engine_bandwidth));
    for (int c = 0; c < cores_used; ++c) {
      NeuronCore& core = *cores_[std::size_t(c)];
      if (moving > sc_core::SC_ZERO_TIME) {
        for (int e = 0; e < core.dma().engines(); ++e) {
          end = std::max(end, core.dma().engine(e).occupy(moving));
        }
      }
      for (std::size_t e = 0; e < rest.engine_busy_s.size(); ++e) {
        if (!(rest.engine_busy_s[e] > 0)) continue;
        const auto busy = sc_time::from_seconds(rest.engine_busy_s[e] /
                                                (double(cores_used) * double(kOpPieces)));
        end = std::max(end, core.engine(EngineId(e)).occupy(share, busy));
      }
    }
    // Its slices are issued by the chip's slice method (chip_model.hpp), which wakes the op's
    // thread at the piece's end.
    for (int k = 0; k < slices; ++k) {
      post_slice(start + share * (double(k) / double(slices)), op,
                 std::uint32_t(piece * slices + k), slice_bytes(rest, piece * slices + k));
    }
    if (end > start) {
      post_wake(end, op, std::uint32_t(kOpPieces * slices + piece));
      wait_woken(op, woken(op) + 1);
    }
  }
  end_slices(op);
}

OpStats Chip::run_lowered(const ComputeOp& op, const std::string& name) {
  OpStats st;
  st.name = name;
  st.start_s = sc_core::sc_time_stamp().to_seconds();
  auto steps = lower(op, name, p_, alloc_, granularity_);
  for (auto& step : steps) {
    Job job;
    for (std::size_t c = 0; c < step.per_core.size(); ++c) {
      Program* prog = step.per_core[c].get();
      if (!prog) continue;
      st.sbuf_bytes_per_partition = std::max(st.sbuf_bytes_per_partition, prog->sbuf_bytes_per_partition);
      st.psum_banks = std::max(st.psum_banks, prog->psum_banks);
      start_program(int(c), *prog, job);
    }
    st.cores_used = std::max(st.cores_used, job.left);
    if (job.left > 0) {
      ++own_wakeups_;
      wait_counted(activity(), job.done);
    }
    st.flops += step.flops;
    st.hbm_bytes += step.hbm_bytes;
    st.instructions += step.instructions;
  }
  st.end_s = sc_core::sc_time_stamp().to_seconds();
  st.time_s = st.end_s - st.start_s;
  return st;
}

namespace {

// Runs a single DMA instruction on `core` and waits for it.
sc_time run_single_dma(NeuronCore& core, Instr in, const std::string& name) {
  Program prog;
  prog.op_name = name;
  prog.done = prog.new_semaphore();
  in.signal(prog.done);
  prog.push(EngineId::sync, in);
  prog.done_target = 1;
  return core.run(prog);
}

}  // namespace

sc_time Chip::dma(int core, std::uint64_t hbm_addr, std::uint64_t bytes, MemoryPort& external,
                  bool to_external, int engines) {
  if (core < 0 || core >= cores()) {
    throw InputError(fmt::format("{}: no core {} (the chip has {})", name(), core, cores()));
  }
  Instr in;
  in.kind = Instr::Kind::dma;
  in.bytes = bytes;
  in.addr = hbm_addr;
  in.src = to_external ? DmaEndpoint::hbm : DmaEndpoint::external;
  in.dst = to_external ? DmaEndpoint::external : DmaEndpoint::hbm;
  in.external = &external;
  in.engines = std::uint16_t(std::max(1, engines));
  in.cross_engine = false;
  in.queue = 3;
  return run_single_dma(*cores_[std::size_t(core)], in, "fabric dma");
}

Chip::DmaResult Chip::dma_sbuf(int core, std::uint64_t bytes, bool to_sbuf, int engines,
                               bool cross_engine) {
  if (core < 0 || core >= cores()) {
    throw InputError(fmt::format("{}: no core {} (the chip has {})", name(), core, cores()));
  }
  NeuronCore& nc = *cores_[std::size_t(core)];
  Program prog;
  prog.op_name = "dma";
  prog.done = prog.new_semaphore();
  Semaphore* go = prog.new_semaphore();
  Instr in;
  in.kind = Instr::Kind::dma;
  in.bytes = bytes;
  in.addr = alloc_.alloc(bytes);
  in.src = to_sbuf ? DmaEndpoint::hbm : DmaEndpoint::sbuf;
  in.dst = to_sbuf ? DmaEndpoint::sbuf : DmaEndpoint::hbm;
  in.engines = std::uint16_t(std::max(1, engines));
  in.cross_engine = cross_engine;
  const sc_time trigger = sc_core::sc_time_stamp() + sc_time(1, sc_core::SC_NS);
  if (cross_engine) {
    // Another engine releases the DMA through a semaphore 1 ns from now.
    in.wait(go, 1);
    go->signal_at(trigger);
  }
  in.signal(prog.done);
  prog.push(EngineId::sync, in);
  prog.done_target = 1;
  const sc_time end = nc.run(prog);
  const auto& b = nc.dma().last();
  return DmaResult{b.trigger.to_seconds(), b.dge_start.to_seconds(), b.dge_end.to_seconds(),
                   b.start.to_seconds(), end.to_seconds()};
}

}  // namespace trnsim::model
