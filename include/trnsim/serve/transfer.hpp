// SPDX-License-Identifier: MIT
// Disaggregated serving's KV transfers (docs/serving.md#disaggregated-prefill-and-decode): what
// one transfer moves between which ranks (a trace workload), its time alone on the rack's fabric
// or over a cluster's EFA network (simulated by the run layer in a forked child, once per
// prompt length or grid point), and the network the engine shares among the transfers in flight
// (TransferNet: max-min fair rates on each prefill replica's egress and each decode replica's
// ingress).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/infer/iteration.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/serve/engine.hpp"
#include "trnsim/serve/timer.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::serve {

// A fluid network of links (capacity in units per second) carrying transfers (a size in units,
// over a set of links). The transfers in flight share each link max-min fairly (progressive
// filling: the most contended link fixes its transfers' rates first), recomputed whenever one
// starts or ends, so a transfer's time is its size over the rates it got. Deterministic; no
// SystemC (the serving engine runs in host time).
class TransferNet {
 public:
  int add_link(double capacity);
  // Sets a link's capacity from `now` on (>= the last advance): every transfer is moved on to
  // `now` at its old rate (those done by then: returned, as advance() does), then the rates are
  // recomputed. The serving engine lowers a replica's link while it iterates beside transfers.
  std::vector<std::uint64_t> set_capacity(int link, double capacity, double now);
  double capacity(int link) const { return capacity_.at(std::size_t(link)); }
  // Transfers in flight over `link`.
  int on_link(int link) const;
  // Starts transfer `key` of `size` units over `links` (at least one) at `now` (>= the last
  // advance). The rates of every transfer are recomputed.
  void start(std::uint64_t key, double size, const std::vector<int>& links, double now);
  // Moves every transfer on at its rate up to `now` and removes those done by then: their
  // keys, in the order they started.
  std::vector<std::uint64_t> advance(double now);
  // When the next transfer ends at the current rates (infinity: none in flight).
  double next_done() const;
  std::size_t active() const { return flows_.size(); }
  double rate(std::uint64_t key) const;  // current rate of a transfer in flight (0: none)

 private:
  struct Flow {
    std::uint64_t key = 0;
    double size = 0, left = 0, rate = 0;
    std::vector<int> links;
  };
  void share();
  std::vector<double> capacity_;
  std::vector<Flow> flows_;
  double now_ = 0;
};

// The KV cache of a `tokens`-token prompt moved from a prefill replica of `prefill.layout`
// (ranks [0, n_p), rank r on chip r / ranks-per-chip as an iteration places them) to a decode
// replica of `decode.layout` (ranks [decode_first, decode_first + n_d)). Each rank of the
// decode replica's first data-parallel group receives, for each layer of its pipeline stage,
// the KV it holds (tokens x infer::kv_bytes_per_token_layer_rank of the decode layout) from the
// prefill ranks of the first group that hold that layer's heads (the stage holding the layer;
// TP rank t_d x tp_p / tp_d, or the tp_p / tp_d ranks whose heads it takes, in equal parts).
// With one layout and decode_first = n it is each prefill rank sending each layer to rank r + n.
trace::Workload kv_handoff_workload(const infer::IterationSpec& prefill,
                                    const infer::IterationSpec& decode, std::uint64_t tokens,
                                    int decode_first);

// Where the transfers run: the rack's fabric (both pools in one UltraServer, the decode
// replica's ranks after the prefill replica's) or a cluster's EFA network (the prefill pool on
// UltraServer 0, the decode pool on UltraServer 1: the decode replica's first rank is the first
// of UltraServer 1).
struct TransferPath {
  config::LoadedConfig cfg;  // the rack, or the cluster (2 UltraServers, one replica over both)
  int decode_first = 0;
  int ranks_per_chip = 1;
  // EFA: each chip's NIC bandwidth per direction (the path's bandwidth follows from the chips a
  // transfer uses); 0: the rack's fabric, whose bandwidth is not stated to the engine.
  double nic_bandwidth = 0;
  std::string where;  // for the report
};

// Times KV transfers alone on `path`, simulated once per distinct prompt length (`exact`) or at
// the grid points around it, interpolated linearly (`grid`); the bytes are the workload's own.
// `bandwidth` of a cost: EFA, the path's (the total bytes over the busiest NIC's time), so that
// the engine can tell the latency from the time on the wire; 0 on the fabric.
class KvTransferTimer {
 public:
  KvTransferTimer(TransferPath path, const infer::IterationSpec& prefill,
                  const infer::IterationSpec& decode, TimingMode mode, int parallel,
                  int per_octave);
  const infer::IterationSpec& prefill() const { return prefill_; }
  const infer::IterationSpec& decode() const { return decode_; }
  TransferCost cost(std::uint64_t tokens);
  const std::map<std::uint64_t, TransferCost>& table() const { return simulated_; }
  std::uint64_t lookups() const { return lookups_; }
  const TransferPath& path() const { return path_; }
  double wall_s() const { return wall_s_; }

 private:
  double bandwidth(const trace::Workload& w) const;
  TransferPath path_;
  infer::IterationSpec prefill_, decode_;
  TimingMode mode_;
  int parallel_, per_octave_;
  std::map<std::uint64_t, TransferCost> simulated_;
  std::map<std::uint64_t, std::pair<double, double>> bytes_;  // bytes, bandwidth by tokens
  std::uint64_t lookups_ = 0;
  double wall_s_ = 0;
};

// A pool's iteration beside KV transfers (docs/serving.md#contention): `iteration` (a replica's
// ranks [0, n)) placed at ranks [first, first + n) of `handoff`'s ranks (peers, broadcast roots
// and groups moved with it), and `copies` copies of `handoff`'s sends and receives after the
// iteration's ops on each rank, all starting at once (no dependencies; each copy's tags apart
// from the others' and the iteration's), a copy's sends (receives) between one pair of ranks
// as one op of their bytes. `iteration` may have no ranks (the transfers alone).
// iteration_ops[rank]: the rank's first ops, the iteration's (the rest: the transfers').
struct BesideWorkload {
  trace::Workload w;
  std::vector<std::size_t> iteration_ops;
};
BesideWorkload beside_workload(const trace::Workload& iteration, int first,
                               const trace::Workload& handoff, int copies);

// What one simulation of a BesideWorkload measured: when the iteration's last op ended and
// when the transfers' last op ended (0: none), seconds from the start.
struct BesideTimes {
  double iteration_s = 0, transfers_s = 0;
};
BesideTimes beside_times(const BesideWorkload& b, const std::vector<replay::OpRecord>& records);

// The share of their alone rate that transfers got while an iteration ran beside them, from
// three simulated times: the transfers alone (`alone_s`), beside the iteration (`beside_s`), and
// the iteration beside them (`iteration_s`). A fluid reading: the transfers moved at share f
// while the iteration ran and at their alone rate after it, so f x min(iteration_s, beside_s) +
// max(0, beside_s - iteration_s) = alone_s. Clamped to [kMinShare, 1].
inline constexpr double kMinShare = 1e-3;
double transfer_share(double alone_s, double beside_s, double iteration_s);

// The transfers in flight that a contended iteration is simulated beside: 1, 2, 4 or 8 (the
// largest of them at most `k`; 0 for none).
int transfer_bucket(int k);

// A pool's iteration timer whose KV transfers (prefill pool: the transfers it hands over) come
// from a KvTransferTimer, and whose iterations, with contention on, are timed beside the
// transfers in flight on the replica's links (cost_beside).
class PoolTimer : public RackTimer {
 public:
  // `base`: the pool's (with one layout for both pools, this timer times both).
  PoolTimer(const config::LoadedConfig& cfg, const infer::IterationSpec& base, TimingMode mode,
            int parallel, int per_octave, KvTransferTimer* transfers,
            const run::CacheSettings& cache = {}, const resolve::RackPlan* rack = nullptr)
      : RackTimer(cfg, base, mode, parallel, per_octave, cache, rack), transfers_(transfers),
        spec_(base), timing_(mode), jobs_(std::max(1, parallel)), octave_(per_octave) {}
  TransferCost kv_transfer(std::uint64_t tokens) override;
  // Contention on, the transfers beside an iteration being hand-offs of `tokens` prompt tokens
  // (the run's mean prompt); 0: off (cost_beside is cost).
  void contend(std::uint64_t tokens) { reference_tokens_ = tokens; }
  // The iteration of `shape` with `transfers` KV transfers in flight on the replica's link: its
  // time alone (cost) plus what the fabric added when the iteration was simulated beside
  // transfer_bucket(transfers) hand-offs of the reference prompt (both timed at the pool's
  // place on the transfer path, `exact`: at `shape`, `grid`: at its cell's lowest corner), and
  // the share of their rate the transfers got meanwhile (transfer_share).
  // The prefill pool's iteration on the prefill replica's ranks of the path, the decode pool's
  // on the decode replica's.
  IterationCost cost_beside(const Shape& shape, int transfers, bool decode_pool) override;

  struct Contended {
    bool decode_pool = false;
    Shape shape;  // as simulated (grid: the cell's lowest corner)
    int transfers = 0;
    std::uint64_t tokens = 0;  // the reference prompt
    double alone_s = 0, beside_s = 0;  // the iteration at this place, without and with them
    double transfers_alone_s = 0, transfers_beside_s = 0;
    double share = 1;
    std::uint64_t lookups = 0;
  };
  const std::vector<Contended>& contended() const { return contended_; }
  double contention_wall_s() const { return contention_wall_s_; }

 private:
  KvTransferTimer* transfers_;
  infer::IterationSpec spec_;
  TimingMode timing_;
  int jobs_, octave_;
  std::uint64_t reference_tokens_ = 0;
  std::vector<Contended> contended_;
  // By pool, shape, transfers, tokens; the iteration alone at its place by pool, shape, tokens;
  // the transfers alone by copies and tokens.
  std::map<std::tuple<bool, Shape, int, std::uint64_t>, std::size_t> contended_at_;
  std::map<std::tuple<bool, Shape, std::uint64_t>, double> alone_at_;
  std::map<std::pair<int, std::uint64_t>, double> transfers_alone_;
  double contention_wall_s_ = 0;
};

}  // namespace trnsim::serve
