// SPDX-License-Identifier: MIT
// Replays a workload on a machine: a per-rank dependency scheduler dispatches each op as soon as
// its dependencies have finished, so compute and communication overlap as far as the machine's
// shared resources (engines, DMA queues, links) allow; collectives run as schedules of real
// transfers over the fabric. Everything here runs inside one SystemC simulation.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trnsim/params/replay.hpp"
#include "trnsim/replay/collectives.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/trace/workload.hpp"
#include "trnsim/units.hpp"

namespace trnsim::replay {

// What the replay needs from the hardware. Every call is made from a SystemC thread process and
// returns when the work is done (it waits in simulated time).
// Pieces one collective step sends to one peer at once (Machine::set_message): their id, counted
// over the run from 1 (0: a transfer whose pieces are sent with no others), and the transfers
// that carry them (one where the machine merges the pieces, one per piece elsewhere).
struct SentTogether {
  std::uint64_t id = 0;
  std::uint32_t transfers = 1;
};

class Machine {
 public:
  virtual ~Machine() = default;
  virtual int chip_count() const = 0;
  // A compute op (gemm .. attention) or a memory op (mem_load, mem_store) on `chip`.
  virtual void compute(int chip, const trace::Op& op) = 0;
  // Fast-forward: `op` is timed from `counterpart`, the op it repeats in the previous
  // micro-batch, which took `duration`, and is not simulated; the machine counts its
  // statistics, energy and memory traffic (model::ChipModel::fast_forward). The default waits
  // `duration`.
  virtual void fast_compute(int chip, const trace::Op& op, const trace::Op& counterpart,
                            const sc_core::sc_time& duration);
  // Combines `bytes` of received data with local data on `chip` (a collective's reduction).
  virtual void reduce(int chip, std::uint64_t bytes, trace::DType dtype) = 0;
  // The same without waiting: `done` runs when the reduction has finished (it must not wait).
  // Collectives reduce each received piece this way, so that reductions overlap one another's
  // latency and the arrival of later pieces. The default spawns a thread around reduce().
  virtual void start_reduce(int chip, std::uint64_t bytes, trace::DType dtype,
                            std::function<void()> done);
  // Moves `bytes` from `src`'s memory to `dst`'s memory over the fabric.
  virtual void transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) = 0;
  // The same without waiting: `done` runs when the data has arrived (it may run from a method
  // process: it must not wait). The default spawns a thread around transfer(); machines with a
  // non-blocking fabric override it, since a collective may have thousands of sends in flight
  // and every SystemC thread costs a stack.
  virtual void start_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow,
                              std::function<void()> done);
  // The traffic pattern of the transfers started from now on (model::TransferRequest::pattern:
  // replay::traffic_pattern), until set again. The default ignores it.
  virtual void set_pattern(std::uint8_t pattern) { (void)pattern; }
  // The pieces the transfers started from now on carry, until set again. Each piece's latency
  // runs to the arrival of the last of them, so that a message's latency means the same
  // whichever network carries it (docs/models/fidelity.md, "What each figure means at each
  // tier"). The default ignores it.
  virtual void set_message(SentTogether pieces) { (void)pieces; }
  // Whether start_pieces() sends several pieces to one destination as one transfer (a
  // flow-level network, where pieces started together share links alike anyway).
  virtual bool merges_pieces() const { return false; }
  // `pieces` pieces, `bytes` in all, from `src` to `dst` started together; `done` runs once
  // when all have arrived. Called only when merges_pieces(). `arrived`, if not empty, runs with
  // the number of pieces arrived so far as they arrive before the last (as the packet fabric
  // delivers pieces that share an output: one after another in the last round), so that a
  // receiver can reduce the first while the others arrive.
  virtual void start_pieces(int src, int dst, std::uint64_t bytes, std::uint32_t pieces,
                            std::uint64_t flow, std::function<void()> done,
                            std::function<void(std::uint32_t)> arrived) {
    (void)pieces, (void)arrived;
    start_transfer(src, dst, bytes, flow, std::move(done));
  }
  // Moves `bytes` (`pieces` pieces) from chip `src` of this data-parallel replica to chip `dst`
  // of the replica `distance` away over the scale-out network, when the replicas are folded
  // into this one (docs/scaling.md); `done` runs when the data has arrived. By symmetry the same
  // links carry what the replica `distance` the other way sends here. The default throws: a
  // machine without a folded scale-out network has no other replicas.
  // `arrived` as for start_pieces().
  virtual void start_replica_transfer(int src, int dst, int distance, std::uint64_t bytes,
                                      std::uint32_t pieces, std::uint64_t flow,
                                      std::function<void()> done,
                                      std::function<void(std::uint32_t)> arrived);
  // Charges the statistics (link bytes, energy) of a transfer that fast-forward did not
  // simulate, without taking simulated time. The default charges nothing.
  virtual void account_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) {
    (void)src, (void)dst, (void)bytes, (void)flow;
  }
  // Where the members of a collective run (their chips, `chips[i]` for member i) and the shape
  // of the machine between them, for topology-aware collectives. The default knows only the
  // chips.
  virtual GroupLayout layout(const std::vector<int>& chips) const {
    GroupLayout g;
    g.chip = chips;
    return g;
  }

  // The default start_transfer and start_reduce run on helper threads, at most
  // kMaxHelperProcesses alive at once (each has a stack); further work waits in order and runs
  // on the first helper to finish, so it starts later than it would have.
  static constexpr std::size_t kMaxHelperProcesses = 4096;
  // The most helper threads that were alive at once (0 for a machine that overrides both).
  std::size_t peak_helper_processes() const;

 private:
  struct Helpers;
  std::shared_ptr<Helpers> helpers_;
  void on_helper(std::function<void()> job);
};

// An op that did not finish because its peers never arrived: the replay's deadlock report.
class ReplayError : public TraceError {
 public:
  using TraceError::TraceError;
};

struct OpRecord {
  int rank = 0;
  // The op's place among the ops its rank was given, over all batches (a trace: the index into
  // workload.ranks[rank].ops); Replay::op() finds it.
  std::size_t index = 0;
  sc_core::sc_time start, end;
};

struct CollectiveRecord {
  std::string group;
  int sequence = 0;  // k: the k-th collective of the group
  trace::OpKind kind = trace::OpKind::all_reduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  int members = 0;
  std::uint64_t bytes = 0;        // op size (per rank, as in the trace)
  std::uint64_t wire_bytes = 0;   // bytes all members put on the fabric
  int rings = 0;                  // rings run at once (ring family)
  sc_core::sc_time first_arrival, last_arrival, end;
  bool fast_forwarded = false;  // timed from an earlier micro-batch's instance, not simulated
  // Where the member that finished last spent its time, from its arrival to its end (they add
  // up to it): launch and descriptor generation (fixed runtime costs), waiting for the
  // semaphore handshakes, waiting for data, and reducing what arrived (not overlapped with the
  // arrival of later pieces).
  struct Breakdown {
    double launch_s = 0, descriptor_s = 0, sync_s = 0, wire_s = 0, reduce_s = 0;
  } breakdown;
};

// Fast-forward of repeated work (docs/models/fidelity.md#fast-forward). A rank's ops of one
// UnitKey (WorkSource::unit_key(); a training trace: one phase and micro-batch) are a unit; a
// unit repeats the one before it in its series (the previous micro-batch) when their ops match
// one to one (kind, group, peer, dtype, dependencies within the unit) with sizes within
// `size_tolerance`. Once two repetitions in a row took times within `tolerance` of each other,
// the next repetition is timed, not simulated: a compute op takes its counterpart's time
// (Machine::fast_compute counts its statistics); a collective waits for its members and then the
// time its counterpart took from the last arrival; a send takes its counterpart's time. Their
// bytes are charged to the links (Machine::account_transfer).
struct FastForward {
  bool enabled = false;
  double tolerance = 0.02;
  double size_tolerance = 0.10;
  // Collectives by shape (WorkSource::collectives_by_shape); unset: as the source asks.
  std::optional<bool> collectives_by_shape;
};

// What fast-forward did, for the report.
struct FastForwardStats {
  std::uint64_t units = 0;               // (rank, unit key) units of the work
  std::uint64_t repeating_units = 0;     // units that repeat the one before them in their series
  std::uint64_t units_fast_forwarded = 0;
  std::uint64_t ops_fast_forwarded = 0;  // compute ops, sends and collective memberships timed,
                                         // not simulated
  std::uint64_t compute_fast_forwarded = 0;  // of which compute and memory ops
  std::uint64_t collectives_fast_forwarded = 0;
  std::uint64_t transfers_accounted = 0;
  double bytes_accounted = 0;
};

// Groups whose collectives cross the scale-out network between UltraServers (docs/scaling.md).
// They run recursive halving-doubling. A folded group has only this replica's member and
// stands for `replicas` members, one per replica; the other replicas are not simulated.
struct ScaleOutGroups {
  std::map<std::string, int> folded;  // group -> replicas
  std::set<std::string> unfolded;     // groups whose members are all simulated
};

// Replays the work of a source (source.hpp) on a machine. The source's begin() runs in the
// constructor; its finished() from the simulation, whenever a batch it emitted has finished.
// The most op processes (SystemC threads, each with a stack) a replay of `ranks` ranks keeps
// busy at once, over all ranks: 16 a rank, at least 4,096 and at most 24,576 (engine.cpp says
// why). The run's estimate counts against the same bound.
std::size_t max_live_op_processes(int ranks);

class Replay : public sc_core::sc_module {
 public:
  // `rank_to_chip[r]` is the chip of rank r (identity when empty). Throws TraceError when the
  // source has more ranks than the machine has chips, or for a bad batch (Emitter::emit).
  // `source` must outlive the replay.
  Replay(const sc_core::sc_module_name& name, WorkSource& source, Machine& machine,
         const config::ReplayParams& params, std::vector<int> rank_to_chip = {},
         FastForward fast_forward = {}, ScaleOutGroups scale_out = {});
  // A trace: the same with a TraceSource of `workload` (which must outlive the replay).
  Replay(const sc_core::sc_module_name& name, const trace::Workload& workload, Machine& machine,
         const config::ReplayParams& params, std::vector<int> rank_to_chip = {},
         FastForward fast_forward = {}, ScaleOutGroups scale_out = {});
  ~Replay() override;

  // After sc_start() returned: throws ReplayError naming the ops, groups and ranks that never
  // finished (a collective some member never reached, a recv without a send).
  void check_finished() const;

  const std::vector<OpRecord>& records() const;
  // The op of a record: the `index`-th op given to `rank` (throws std::out_of_range past them).
  const trace::Op& op(int rank, std::size_t index) const;
  // Batches emitted so far (a trace: 1).
  std::size_t batches() const;
  const std::vector<CollectiveRecord>& collectives() const;
  sc_core::sc_time makespan() const;
  FastForwardStats fast_forward_stats() const;
  // The most op processes that were alive at once (at most 16 per rank, 4,096 to 24,576).
  std::size_t peak_live_ops() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  void start();
};

}  // namespace trnsim::replay
