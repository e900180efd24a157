// SPDX-License-Identifier: MIT
// The request level of a serving run (docs/serving.md): requests arrive, wait, are admitted when
// their KV blocks are free, run in continuously batched iterations (decode tokens and chunked
// prefills under a batch and token budget), are preempted (recompute) when the cache runs out,
// and finish. A plain discrete-event loop in host time; the time and energy of each iteration
// come from an IterationTimer, which on a rack simulates the iteration's shape on the rack models
// (serve/timer.hpp). No SystemC here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trnsim/serve/spec.hpp"

namespace trnsim::serve {

struct Request {
  std::uint64_t id = 0;
  double arrival_s = 0;
  std::uint64_t input_tokens = 1, output_tokens = 1;
};

// What decides an iteration's time: its decode sequences and their KV length (the batch's mean,
// rounded up: the KV bytes read and the attention's work are linear in the sum of the lengths),
// its prefill tokens and the prompt tokens cached before them (their token-weighted mean).
struct Shape {
  std::uint64_t decode = 0, context = 0, prefill = 0, prefill_context = 0;
  auto operator<=>(const Shape&) const = default;
};

struct IterationCost {
  double time_s = 0;
  double dynamic_j = 0;  // the replica's chips and fabric, during the iteration
  // Disaggregated, beside KV transfers (IterationTimer::cost_beside): the share of their alone
  // rate that the transfers on the replica's link get while the iteration runs.
  double transfer_share = 1;
};

// Moving one request's KV cache from a prefill replica to a decode replica (disaggregated).
struct TransferCost {
  double time_s = 0;
  double dynamic_j = 0;  // the two replicas' chips and the fabric, during the transfer
  double bytes = 0;      // KV bytes sent, all ranks
  // The path's bandwidth (bytes/s) when known (EFA): time_s - bytes / bandwidth is latency,
  // which transfers sharing the path do not stretch. 0: all of time_s is time on the wire.
  double bandwidth = 0;
};
// The time and energy of a transfer between two simulated prompt lengths, `f` of the way from
// `a` to `b` (linear: a transfer's terms are its bytes' and a fixed part); bytes and bandwidth
// are the caller's, which knows them exactly.
inline TransferCost interpolate_transfer(const TransferCost& a, const TransferCost& b, double f) {
  TransferCost out;
  out.time_s = (1 - f) * a.time_s + f * b.time_s;
  out.dynamic_j = (1 - f) * a.dynamic_j + f * b.dynamic_j;
  return out;
}

class IterationTimer {
 public:
  virtual ~IterationTimer() = default;
  virtual IterationCost cost(const Shape& shape) = 0;
  // Disaggregated: the iteration of a prefill (or, `decode_pool`, a decode) replica with
  // `transfers` KV transfers in flight on its link (from or to it) when it starts; by default
  // as alone (docs/serving.md#contention).
  virtual IterationCost cost_beside(const Shape& shape, int transfers, bool decode_pool) {
    (void)transfers;
    (void)decode_pool;
    return cost(shape);
  }
  // The KV cache of a `tokens`-token prompt moved from a prefill replica to a decode replica,
  // alone on its path (disaggregated runs only; the engine shares the path among the transfers
  // in flight).
  virtual TransferCost kv_transfer(std::uint64_t tokens);
  // Static power of one replica's chips (priced over the whole run, idle time included).
  virtual double static_w() const = 0;
};

// One request's life, as measured.
struct RequestRecord {
  Request req;
  double first_scheduled_s = -1, first_token_s = -1, finish_s = -1;
  std::uint64_t preemptions = 0;
  int replica = 0;         // co-located: its replica; disaggregated: its prefill replica
  int decode_replica = -1;  // disaggregated: its decode replica (-1: none, one output token)
  // Disaggregated: when its KV transfer started and ended (-1: none), and how long it would have
  // taken alone on its path (the rest: sharing the path with other transfers).
  double transfer_start_s = -1, transfer_end_s = -1, transfer_alone_s = 0;
  bool refused = false;  // its KV could never fit the replica's cache
  bool warmup = false;
  // Inter-token gaps (after the first token), seconds.
  std::vector<float> itl_s;
};

// One iteration of one replica, for the figures over time.
struct IterationRecord {
  int replica = 0;  // disaggregated: prefill replicas first, then decode replicas
  double start_s = 0, end_s = 0;
  Shape shape;
  std::uint64_t batch = 0;      // sequences in it
  std::uint64_t kv_blocks = 0;  // used after it
  std::uint64_t waiting = 0;    // requests queued at its start
  std::uint64_t in_system = 0;  // requests waiting or running on the replica at its start
  std::uint64_t tokens_out = 0;
};

// Per pool of a disaggregated run, over all its iterations (not only those kept as records):
// the sequences in them and the KV blocks their replica used after each, summed (whole numbers,
// so in any order), and the most blocks used after one.
struct PoolTotals {
  std::uint64_t iterations = 0, batch = 0, kv_blocks = 0, kv_blocks_max = 0;
};

struct EngineOptions {
  SchedulerParams scheduler;
  int replicas = 1;
  std::uint64_t kv_blocks = 0;  // per replica (all its data-parallel groups)
  // Disaggregated (prefill_replicas > 0): replicas [0, prefill_replicas) prefill prompts and
  // sample their first tokens; the others (replicas - prefill_replicas of them, with
  // decode_kv_blocks each) receive the KV cache and decode. 0: every replica co-located.
  int prefill_replicas = 0;
  std::uint64_t decode_kv_blocks = 0;
  std::uint64_t max_iteration_records = 1u << 20;
  // The most iterations kept evenly spaced over the whole run (`EngineResult::sampled`).
  std::size_t max_sampled = 1024;
};

struct EngineResult {
  std::vector<RequestRecord> requests;  // by id
  std::vector<IterationRecord> iterations;  // the first max_iteration_records, in start order
  // Every sampled_stride-th iteration (by start order: 0, stride, 2 stride, ...), in start
  // order; the stride doubles (and every other one is dropped) when they reach max_sampled, so
  // they span the whole run past the records' cap.
  std::vector<IterationRecord> sampled;
  std::uint64_t sampled_stride = 1;
  PoolTotals pools[2];  // disaggregated: prefill, decode
  std::uint64_t iterations_total = 0, preemptions = 0, refused = 0;
  // Disaggregated: KV transfers, their bytes and the time they took (summed), and the layout
  // of the pools (prefill_replicas 0: co-located).
  std::uint64_t transfers = 0;
  double transfer_bytes = 0, transfer_s = 0;
  int prefill_replicas = 0;
  std::uint64_t kv_blocks = 0, decode_kv_blocks = 0;
  double end_s = 0;
  double dynamic_j = 0;
};

// Where requests come from: an open stream (all requests known with their arrival times) or a
// closed loop (each user's next request arrives a think time after its previous one finished).
struct Workload {
  std::vector<Request> open;  // sorted by arrival
  // closed loop: `users` users, each issuing its requests in turn from `lengths` (in order)
  std::uint64_t users = 0;
  double think_s = 0;
  std::vector<Request> lengths;
};

// `timer` times every replica's iterations and the KV transfers; `decode_timer`, when given, the
// decode replicas' iterations (a decode pool of another layout).
EngineResult simulate(const Workload& w, const EngineOptions& o, IterationTimer& timer,
                      std::uint64_t warmup_requests, IterationTimer* decode_timer = nullptr);

}  // namespace trnsim::serve
