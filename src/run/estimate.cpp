// SPDX-License-Identifier: MIT
#include "trnsim/run/estimate.hpp"

#include <systemc>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "chip/lowering.hpp"
#include "chip/op_profile.hpp"
#include "common/activity.hpp"
#include "calibrate.hpp"
#include "compute_ops.hpp"
#include "trnsim/error.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/replay/engine.hpp"

namespace trnsim::run {

using trace::OpKind;

namespace {

double ceil_log2(double n) { return n <= 1 ? 0 : std::ceil(std::log2(n)); }

// Upper bounds for one member of a collective on `n` members of `bytes` (the trace's size),
// whatever algorithm runs: the messages of its data steps before they are cut into pieces, and
// the bytes it sends. The ring family sends 2(n-1)/n of the data (reduce-scatter then
// all-gather) on each of at most `rings` rings, 2 (n-1) messages per ring; mesh, halving-
// doubling, hierarchical and dimension-ordered torus plans stay within 4 n messages and 2 B.
struct MemberBound {
  double messages = 0, bytes = 0;
};

MemberBound member_bound(const trace::Op& op, double n, double rings) {
  const double b = double(op.bytes);
  switch (op.kind) {
    case OpKind::all_reduce:
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
      return {std::max(rings, 2.0) * 2 * n, 2 * b};
    case OpKind::all_to_all: return {n, b};
    case OpKind::all_to_all_v: {
      double sum = 0;
      for (auto s : op.send_bytes) sum += double(s);
      return {n, sum};
    }
    // A chain of pieces, a binomial tree or the root sending to all: every member but the root
    // receives the data once, so the members send n B together.
    case OpKind::broadcast: return {n + 2 * ceil_log2(n), b};
    case OpKind::barrier: return {ceil_log2(n), 0};
    default: return {};
  }
}

// Peak MAC rate of a chip over its data types: compute takes at least flops / (2 x this).
double peak_macs_per_s(const config::ChipParams& p) {
  const auto& t = p.core.tensor;
  const auto& r = t.macs_per_pe_cycle;
  const double rate = std::max({r.fp32, r.bf16, r.fp16, r.fp8, r.mxfp8, r.mxfp4});
  return double(p.cores) * double(t.rows) * double(t.cols) * rate * t.clock.si;
}

std::string gb(double bytes) { return fmt::format("{:.3g} GB", bytes / 1e9); }

}  // namespace

EventUnits event_units(const registry::Implementation& network,
                       const registry::Implementation& compute, const resolve::RackPlan& plan) {
  const auto& c = compute.capabilities;
  return {network.capabilities.events_per_packet, c.events_per_instruction,
          c.needs_calibration || plan.fast_forward, c.times_op_heads};
}

WorkEstimate estimate_work(const trace::Workload& w, const resolve::RackPlan& plan,
                           const config::ReplayParams& replay) {
  registry::Registry r;
  registry::register_builtin_models(r);
  const auto& network = r.get(registry::Role::network, plan.fabric.model, "/rack/fabric/model");
  const auto& compute = r.get(registry::Role::compute, plan.chip.compute_model, "/chip/compute/model");
  return estimate_work(w, plan, replay, event_units(network, compute, plan));
}

WorkEstimate estimate_work(const trace::Workload& w, const resolve::RackPlan& plan,
                           const config::ReplayParams& replay, const EventUnits& units) {
  WorkEstimate e;
  const auto& chip = plan.chip.params;
  const bool packets = units.per_packet;
  const double packet_bytes = double(std::max<std::uint64_t>(1, plan.fabric.packet_bytes));
  const double hops = double(plan.fabric.diameter) + 1;
  const double chunk = std::max(1.0, std::floor(replay.collectives.chunk_bytes.si));
  const double dma_packet = std::max(1.0, chip.core.dma.packet_bytes.si);
  // Rings that run at once: both directions of up to half a chip's links' worth of cycles.
  double degree = 2;
  if (!plan.topology.torus_dims().empty() || plan.topology.first_tier_chips() == 0) {
    std::vector<double> links(plan.topology.chip_count(), 0);
    for (const auto& l : plan.topology.links()) {
      const auto& a = plan.topology.node(l.a);
      const auto& b = plan.topology.node(l.b);
      if (!a.chip || !b.chip || a.chip == b.chip) continue;
      degree = std::max({degree, ++links[a.chip->v], ++links[b.chip->v]});
    }
  }
  const bool tile = units.per_instruction;
  const double peak = peak_macs_per_s(chip);
  // Instructions of each distinct compute op, counted once (model::lowered_instructions).
  std::unordered_map<model::OpFields, double, model::OpFieldsHash> lowered;
  std::vector<std::string> notes;
  // A tile chip that fast-forwards inside ops lowers only each op's head (model::op_head).
  const bool heads = units.op_heads && plan.chip.op_head < 1;
  e.whole_ops = tile && units.op_heads && !plan.fast_forward;
  const auto instructions_of = [&](const trace::Op& op) {
    const auto c = to_compute_op(op, chip, notes);
    if (!c) return 0.0;
    const auto [it, fresh] = lowered.try_emplace(model::op_fields(*c), 0.0);
    if (fresh) {
      try {
        it->second = model::lowered_instructions(
            heads ? model::op_head(*c, plan.chip.op_head, chip.cores) : *c, chip,
            plan.chip.granularity);
      } catch (const InputError&) {
        // An op the lowering refuses fails with its own message when it runs.
      }
    }
    return it->second;
  };
  double calibration_peak = 0;

  double messages = 0;
  for (const auto& rank : w.ranks) {
    e.ops += rank.ops.size();
    std::vector<double> programs;  // of this rank's compute ops (tile model)
    for (std::size_t index = 0; index < rank.ops.size(); ++index) {
      const trace::Op& op = rank.ops[index];
      if (trace::is_compute(op.kind) || op.kind == OpKind::mem_load || op.kind == OpKind::mem_store) {
        const double n = instructions_of(op);
        if (n > e.largest_op_instructions) {
          e.largest_op_instructions = n;
          e.largest_op = trace::locate(w, rank.rank, index);
        }
        if (tile) {
          e.instructions += n;
          e.events += kEventsPerInstruction * n;
          programs.push_back(n);
        }
      }
      e.dependencies += op.deps.size();
      e.events += kEventsPerOp;
      double sent = 0, msgs = 0, flows = 0;
      if (trace::is_collective(op.kind)) {
        const auto g = w.groups.find(op.group);
        const double n = g == w.groups.end() ? 1 : double(g->second.size());
        if (n <= 1 && op.kind != OpKind::all_to_all_v) continue;
        const MemberBound m = member_bound(op, n, degree);
        // Cut into pieces, a message of b bytes is at most b / chunk_bytes + 1 of them; a step
        // has one handshake per peer it receives from, at most one per data message.
        msgs = 2 * m.messages + std::ceil(m.bytes / chunk);
        flows = 2 * m.messages;
        sent = m.bytes;
      } else if (op.kind == OpKind::send) {
        msgs = flows = 1;
        sent = double(op.bytes);
      } else if (op.kind == OpKind::mem_load || op.kind == OpKind::mem_store) {
        e.events += kEventsPerDmaPacket * std::ceil(double(op.bytes) / dma_packet);
      }
      messages += msgs;
      if (packets) {
        const double p = std::ceil(sent / packet_bytes) + msgs;
        e.packets += p;
        e.events += kEventsPerPacketHop * hops * p;
      } else {
        e.events += kEventsPerMessage * flows;
      }
    }
    // Compute ops that may run at once: those at the same depth of the rank's dependency graph
    // (ASAP level), at most the replay's live ops; the rank holds that many largest programs.
    // The rank's ops by id and in dependency order, used by both passes below.
    const auto by_id = trace::index_by_id(rank);
    const auto order = trace::topological_order(rank);
    std::size_t width = 0;
    if (!programs.empty()) {
      std::vector<std::size_t> level(rank.ops.size(), 0);
      std::unordered_map<std::size_t, std::size_t> at_level;
      for (std::size_t i : order) {
        const trace::Op& op = rank.ops[i];
        for (trace::OpId d : op.deps) {
          const auto it = by_id.find(d);
          if (it != by_id.end()) level[i] = std::max(level[i], level[it->second] + 1);
        }
        if (trace::is_compute(op.kind) || op.kind == OpKind::mem_load || op.kind == OpKind::mem_store) {
          width = std::max(width, ++at_level[level[i]]);
        }
      }
    }
    const std::size_t live = std::min({programs.size(), kLiveOpsPerRank, width});
    std::partial_sort(programs.begin(), programs.begin() + std::ptrdiff_t(live), programs.end(),
                      std::greater<>());
    for (std::size_t i = 0; i < live; ++i) {
      e.program_bytes += kProgramBytesPerInstruction * programs[i];
    }
    e.running_tile_ops += live;
    // The longest chain of this rank: delays as written, compute at the chip's peak.
    // Ops live at once never depend on one another, so at most one of them lies on the rank's
    // longest chain of dependent ops (of `chain` ops): at most n - chain + 1 are live at once.
    std::vector<double> done(rank.ops.size(), 0);
    std::vector<std::uint64_t> depth(rank.ops.size(), 1);
    std::uint64_t chain = 0;
    for (std::size_t i : order) {
      const trace::Op& op = rank.ops[i];
      double start = 0;
      for (trace::OpId d : op.deps) {
        const auto it = by_id.find(d);
        if (it != by_id.end()) {
          start = std::max(start, done[it->second]);
          depth[i] = std::max(depth[i], depth[it->second] + 1);
        }
      }
      chain = std::max(chain, depth[i]);
      double t = 0;
      if (op.kind == OpKind::delay) t = op.duration.si;
      if (trace::is_compute(op.kind) && peak > 0) t = trace::op_flops(op) / (2 * peak);
      done[i] = start + t;
      if (done[i] > e.end_s) {
        e.end_s = done[i];
        e.end_rank = rank.rank;
      }
    }
    e.live_processes += rank.ops.size() - chain + (chain > 0 ? 1 : 0);
    e.longest_chain = std::max(e.longest_chain, chain);
  }
  // The calibration runs each distinct op once on the tile model, kCalibrationJobs children at a
  // time, each holding one op's program.
  if (units.calibrates) {
    // The ops the calibration simulates (run/calibrate.hpp), each once.
    std::unordered_set<model::OpFields, model::OpFieldsHash> seen;
    for (const model::ComputeOp& c :
         calibration_set(plan.chip, replay::TraceSource(w), units.op_heads).ops) {
      if (!seen.insert(model::op_fields(c)).second) continue;
      double n = 0;
      try {
        n = model::lowered_instructions(c, chip, plan.chip.granularity);
      } catch (const InputError&) {
      }
      ++e.calibration_shapes;
      e.calibration_instructions += n;
      calibration_peak = std::max(calibration_peak, n);
    }
    e.events += kEventsPerInstruction * e.calibration_instructions;
    const double jobs = double(std::min<std::uint64_t>(kCalibrationJobs, e.calibration_shapes));
    e.program_bytes =
        std::max(e.program_bytes, jobs * kProgramBytesPerInstruction * calibration_peak);
  }
  e.messages = std::uint64_t(std::min(messages, 1.8e19));
  // The replay's bound on live op processes.
  e.live_processes = std::min<std::uint64_t>(e.live_processes,
                                             replay::max_live_op_processes(w.num_ranks()));
  e.op_bytes = kBytesPerOp * double(e.ops) + kBytesPerCriticalPathOp * double(e.longest_chain) +
               kBytesPerDependency * double(e.dependencies);
  e.message_bytes = kBytesPerMessage * messages;
  e.packet_bytes = kBytesPerPacket * e.packets;
  e.fixed_bytes = kFixedBytes;
  e.process_bytes = double(e.live_processes) * kBytesPerOpProcess +
                    double(e.running_tile_ops) * kBytesPerRunningTileOp;
  e.chips = plan.topology.chip_count();
  e.links = plan.topology.links().size();
  e.rack_bytes = double(e.chips) * (packets ? kRackBytesPerChipPacket : kRackBytesPerChipFlow) +
                 double(e.links) *
                     (packets ? kRackBytesPerLinkPacket : kRackBytesPerLinkFlow);
  return e;
}

double work_budget(const config::SimParams& sim) {
  return sim.work_budget > 0 ? double(sim.work_budget) : kDefaultWorkBudget;
}

void check_budgets(double events, double bytes, const config::SimParams& sim,
                   const std::string& what, const std::string& detail, const std::string& change) {
  const double memory = double(config::memory_budget(sim));
  if (!(bytes <= memory)) {
    throw InputError(fmt::format(
        "{}: needs about {} of memory ({}), more than the memory budget of {} "
        "(/sim/memory_budget); {}, or raise the budget with --set sim.memory_budget=",
        what, gb(bytes), detail, gb(memory), change));
  }
  if (!(events <= work_budget(sim))) {
    throw InputError(fmt::format(
        "{}: needs about {:.3g} simulation events ({}), more than the work budget of {:.3g} "
        "events (/sim/work_budget, about a day at 10^12); {}, or raise the budget with --set "
        "sim.work_budget=",
        what, events, detail, work_budget(sim), change));
  }
}

void check_estimate(const WorkEstimate& e, const config::SimParams& sim, const std::string& what) {
  // What to change: the op whose lowered program dominates, fast-forward (a tile chip then
  // simulates each op's head and times the rest from its profile), or the budget.
  const std::string heads = e.whole_ops ? "; or simulate each op's head only, timing the rest "
                                          "from its profile, with --set sim.fast_forward=true"
                                        : "";
  const std::string largest =
      e.largest_op.empty()
          ? std::string()
          : fmt::format("; its largest op, {}, lowers to {:.4g} tile-model instructions "
                        "(split it, or make it smaller){}",
                        e.largest_op, e.largest_op_instructions, heads);
  const double budget = double(config::memory_budget(sim));
  if (e.memory_bytes() > budget) {
    throw TraceError(fmt::format(
        "{}: the run needs about {} of memory (start-up: {}; {} ops: {}; {:.4g} collective pieces and sends: "
        "{}; {:.4g} packets: {}; {} op processes: {}; tile-model programs: {}; the rack's {} chips "
        "and {} links: {}), more than the memory budget of {} (/sim/memory_budget){}; or raise it with --set sim.memory_budget=",
        what, gb(e.memory_bytes()), gb(e.fixed_bytes), e.ops, gb(e.op_bytes), double(e.messages),
        gb(e.message_bytes), e.packets, gb(e.packet_bytes), e.live_processes,
        gb(e.process_bytes), gb(e.program_bytes), e.chips, e.links, gb(e.rack_bytes), gb(budget),
        e.program_bytes > e.memory_bytes() / 2 ? largest : std::string()));
  }
  if (e.events > work_budget(sim)) {
    throw TraceError(fmt::format(
        "{}: the run needs about {:.3g} simulation events ({} ops, {:.4g} collective pieces and "
        "sends, {:.4g} packets, {:.4g} tile-model instructions, {:.4g} more to calibrate {} "
        "distinct ops), more than the work budget of {:.3g} events (/sim/work_budget){}; or "
        "raise it with --set sim.work_budget=",
        what, e.events, e.ops, double(e.messages), e.packets, e.instructions,
        e.calibration_instructions, e.calibration_shapes, work_budget(sim), largest));
  }
  // The most a run simulates (model::run_bounded()).
  const double max_s = sc_core::sc_time::from_value(model::kLastRunTick).to_seconds();
  if (e.end_s >= max_s) {
    throw TraceError(fmt::format(
        "{}: rank {}'s longest chain of ops alone takes at least {:.4g} s (its delays, and its "
        "compute at the chip's peak rate), beyond the {:.4g} s a run simulates (2^63 ticks of "
        "the kernel's 1 ps)",
        what, e.end_rank, e.end_s, max_s));
  }
}

}  // namespace trnsim::run
