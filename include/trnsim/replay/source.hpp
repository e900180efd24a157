// SPDX-License-Identifier: MIT
// Where a replay's ops come from: a trace read whole before the run (TraceSource), or a
// generator that emits work while the run goes on (a serving scheduler emits one iteration at a
// time, after seeing the previous one finish). The replay schedules, matches collectives,
// fast-forwards and records emitted ops exactly as it does a trace's.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trnsim/trace/workload.hpp"

namespace trnsim::replay {

// Fast-forward (FastForward in engine.hpp): the unit of repeated work an op belongs to. A rank's
// ops with one key are a unit; a unit is compared with the one before it in its `series` (the
// nearest lower `position`), and timed from it once the repetitions before it were steady.
// A training trace: series = phase, position = micro-batch. A serving generator: series = the
// iteration's shape class, position = the iteration.
struct UnitKey {
  std::int64_t series = 0;
  std::int64_t position = 0;
  auto operator<=>(const UnitKey&) const = default;
};

// The training rule, the default of WorkSource::unit_key(): forward, backward, prefill and
// decode ops with a micro-batch (trace::infer_phase, trace::infer_micro_batch) are keyed
// (phase, micro-batch); other ops belong to no unit.
std::optional<UnitKey> phase_unit_key(const trace::Op& op);

// A batch's number: 0 for the first emitted, then 1, 2, ...
using BatchId = std::uint32_t;

struct BatchOptions {
  // Fast-forward simulates the last unit of each series of a batch that nothing repeats:
  // whatever follows it in its own batch overlaps it, so its time is not the steady state's
  // (the last micro-batch of a training step). A source that emits a series one unit per batch,
  // each after the one before finished, sets this false: a unit's successor comes in a later
  // batch and nothing of its own batch overlaps it, so it may be fast-forwarded. A unit whose
  // successor does not repeat it is simulated either way.
  bool hold_back_last_unit = true;
};

// What the replay offers a source to hand it work.
class Emitter {
 public:
  virtual ~Emitter() = default;
  // Adds a batch of ops: `ranks` holds new ops of some ranks, each entry naming its rank
  // (RankTrace::rank, at most once per batch). An op's index in OpRecord counts the ops its rank
  // was given before it, over all batches. Dependencies name ops of the same rank in the same
  // batch (order across batches is the source's: it emits work when what it waits for has
  // finished); collectives match across ranks by their order on the group over all batches,
  // sends and receives by their order per (source, destination, tag), so members may come in
  // different batches. The ops are read where they are: `ranks` and their ops must stay in
  // place, unchanged, as long as the replay lives (keep each batch in a std::deque, say).
  // Throws TraceError for a rank out of range, a dependency cycle or a dependency on an op the
  // batch does not have, a group the source does not define or an op on a group its rank is
  // not a member of.
  virtual BatchId emit(std::span<const trace::RankTrace> ranks, BatchOptions options = {}) = 0;
};

// One batch, when its last op has finished (an empty batch: when it was emitted).
struct BatchDone {
  BatchId batch = 0;
  sc_core::sc_time start, end;  // its first op's start, its last op's end
};

// The visitor calibration_ops() calls on each op, with the rank that runs it.
using OpVisitor = std::function<void(int rank, const trace::Op&)>;

// A replay's work. The replay calls the source from its constructor (begin()) and from the
// simulation (finished()); neither may wait in simulated time. To act at a later time with no
// work running (a request that arrives while the machine is idle), emit a `delay` op and act
// when its batch finishes.
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // Ranks, fixed for the run (the placement maps each to a chip).
  virtual int num_ranks() const = 0;
  // The process groups collectives run on: members in group order. Read when a batch that uses
  // a group is emitted.
  virtual const std::map<std::string, std::vector<int>>& groups() const = 0;
  // At elaboration, before the simulation starts (time 0): the first batches (a trace: all of it).
  virtual void begin(Emitter& out) = 0;
  // A batch has finished (`done.end` is the simulated time now): the source may emit more.
  virtual void finished(const BatchDone& done, Emitter& out) { (void)done, (void)out; }
  // Fast-forward's unit of op `op` of `rank`, or none; called once per op as it is emitted.
  virtual std::optional<UnitKey> unit_key(int rank, const trace::Op& op) const {
    (void)rank;
    return phase_unit_key(op);
  }
  // Fast-forward of collectives by shape: a collective that no fast-forwarded unit times (its
  // first member to arrive is in a unit that is simulated) is timed from the latest earlier
  // collective of its group and kind whose bytes (in all, and the most one member sends or
  // receives) are within /sim/fast_forward_size_tolerance, once the two before it of that shape
  // took times within /sim/fast_forward_tolerance of each other. For sources whose collectives
  // repeat in shape but not in the units around them (expert-parallel all-to-alls, whose routing
  // differs in every layer); off for traces, so training runs are unchanged.
  virtual bool collectives_by_shape() const { return false; }
  // Every op shape the source may emit, for what must be measured before elaboration (the
  // op-level compute tier calibrates each distinct compute and memory op in child processes:
  // an op emitted later with a shape not visited here has no profile). Visited in a fixed
  // order: the order decides which op stands for a size grid, so it must be deterministic.
  virtual void calibration_ops(const OpVisitor& visit) const = 0;
};

// A trace read before the run: one batch of every rank's ops at elaboration. The workload must
// outlive the source and the replay.
class TraceSource : public WorkSource {
 public:
  explicit TraceSource(const trace::Workload& workload) : w_(workload) {}
  int num_ranks() const override { return w_.num_ranks(); }
  const std::map<std::string, std::vector<int>>& groups() const override { return w_.groups; }
  void begin(Emitter& out) override { out.emit(w_.ranks); }
  // Every op of every rank, rank by rank in trace order.
  void calibration_ops(const OpVisitor& visit) const override;
  const trace::Workload& workload() const { return w_; }

 private:
  const trace::Workload& w_;
};

}  // namespace trnsim::replay
