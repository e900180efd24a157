// SPDX-License-Identifier: MIT
// One inference iteration (docs/inference.md): a forward pass over a batch that mixes decode
// tokens (one query per sequence, reading its KV cache at its current length) and a prefill chunk
// (attention over the chunk and the prompt before it), with MoE routing, the dispatch and combine
// all-to-all of expert parallelism, tensor-parallel collectives, pipeline transfers, sampling and
// the runtime's costs per iteration, emitted as the native op kinds (gemm, attention, mem_store,
// collectives, delay) that the chip and fabric models time. IterationSource is the workload
// (a replay::WorkSource); IterationDriver runs it as a run::Driver of run::Simulation.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trnsim/infer/memory.hpp"
#include "trnsim/infer/model.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/run/replay_driver.hpp"

namespace trnsim::infer {

// Host-side costs of one iteration, as delays at the start of every rank's work. No public
// source gives them for the Neuron runtime: the defaults are stated assumptions
// (docs/inference.md), set them to 0 to leave them out.
struct RuntimeCosts {
  double launch_s = 15e-6;    // launching the compiled graph
  double sync_s = 10e-6;      // host-device synchronisation (inputs in, sampled tokens out)
  double schedule_s = 0;      // the serving scheduler's own work per iteration
};

struct IterationSpec {
  ModelParams model;
  Layout layout;
  ServingDtypes dtypes;
  std::uint64_t decode_seqs = 1;        // sequences decoding one token each
  std::uint64_t context = 1024;         // their KV cache length
  std::uint64_t prefill_tokens = 0;     // one prefill chunk (0: none)
  std::uint64_t prefill_context = 0;    // its prompt tokens already in the KV cache
  std::uint64_t sample_top_k = 50;      // candidates each TP rank keeps for sampling
  std::uint64_t seed = 1;               // MoE routing
  RuntimeCosts runtime;
  // Compiled shapes (the Neuron inference stack compiles for fixed batch sizes and sequence
  // lengths): a group's decode batch runs at the smallest batch bucket that holds it, the decode
  // context and the prefill chunk at the smallest sequence bucket; the padding is computed and
  // read like real rows. Empty: exact shapes.
  std::vector<std::uint64_t> batch_buckets, seq_buckets;
  // Disaggregated prefill and decode: two pools of `layout`, ranks [0, n) prefilling the chunk
  // and ranks [n, 2n) decoding the batch at the same time; each prefill rank sends each layer's
  // KV of the chunk to its counterpart as soon as that layer has written it (fabric transfers
  // that contend with both pools' own collectives).
  bool disaggregated = false;
};

// The shapes an iteration runs at: its spec's, or their buckets.
struct IterationShape {
  std::vector<std::uint64_t> decode;  // decode sequences per data-parallel group
  std::uint64_t context = 0, prefill_tokens = 0;
};

// The shapes `spec` runs at, without building its ops; InputError for a spec no iteration has
// (no token, a decode without context, buckets not increasing, a shape above its buckets).
IterationShape iteration_shape(const IterationSpec& spec);

// What an op is, for the breakdown of an iteration's time.
enum class Part {
  runtime,
  embedding,
  attention_proj,  // projections, norms and residual of the attention block
  attention,       // the attention op itself: scores, softmax and values over the KV cache
  kv_write,
  dense_ffn,
  router,
  experts,
  shared_experts,
  all_to_all,
  tp_collective,
  pipeline,
  sampling,
  kv_transfer,  // disaggregated: the chunk's KV sent to (received by) the decode pool
};
inline constexpr std::size_t kPartCount = 14;
const char* part_name(Part p);

// What one rank must move and compute at least (the roofline bounds of an iteration).
struct RankWork {
  double weight_bytes = 0;   // weights the rank's GEMMs read (routed experts: the active ones)
  double kv_read_bytes = 0;  // KV cache its attention reads
  double kv_write_bytes = 0;
  double kv_sent_bytes = 0;  // disaggregated: KV sent to the decode pool
  std::array<double, 6> flops{};  // by DType
};

class IterationSource : public replay::WorkSource {
 public:
  explicit IterationSource(const IterationSpec& spec);
  int num_ranks() const override { return w_.num_ranks(); }
  const std::map<std::string, std::vector<int>>& groups() const override { return w_.groups; }
  void begin(replay::Emitter& out) override { out.emit(w_.ranks); }
  // Fast-forward's units are the two blocks of a layer on a rank, position the layer: 0 its
  // attention (projections, KV write, attention; a disaggregated KV transfer), 1 its FFN (dense,
  // or MoE: router, shared and routed experts, dispatch and combine). A block's series is its
  // shape class on that rank (a hash of its ops' kinds and sizes on a grid of 10 % steps), so a
  // block is compared with the last block before it with the same shapes: a rank's attention
  // blocks are one series, its dense FFNs another, and an MoE block, whose routing gives the
  // rank different expert rows and combine bytes from one layer to the next, repeats the last
  // MoE block that gave it the same. The replay still checks that the ops match
  // (/sim/fast_forward_size_tolerance). Ops outside layers (runtime, embedding, sampling) are in
  // no unit. (Splitting the MoE block at the routed experts fast-forwards more but moved
  // DeepSeek-V3's EP-16 decode by -2.4 % against the full simulation: docs/inference.md.)
  std::optional<replay::UnitKey> unit_key(int rank, const trace::Op& op) const override {
    if (!op.layer) return std::nullopt;
    const int b = block(rank, op.id);
    return replay::UnitKey{series_[std::size_t(rank)].at({*op.layer, b}), *op.layer};
  }
  // Expert-parallel all-to-alls repeat in shape (the bytes in all, the most one rank sends or
  // receives) from layer to layer while the routing around them differs, so that the MoE blocks
  // of their first members are often simulated: they are timed from an earlier one of their
  // shape (docs/inference.md#speed measures what that moves).
  bool collectives_by_shape() const override { return true; }
  // The fast-forward block (above) of op `index` of `rank`.
  int block(int rank, std::size_t index) const { return blocks_[std::size_t(rank)][index]; }
  void calibration_ops(const replay::OpVisitor& visit) const override;

  const trace::Workload& workload() const { return w_; }
  Part part(int rank, std::size_t index) const { return parts_[std::size_t(rank)][index]; }
  const RankWork& work(int rank) const { return work_[std::size_t(rank)]; }
  const IterationSpec& spec() const { return spec_; }
  const IterationShape& shape() const { return shape_; }

 private:
  IterationSpec spec_;
  IterationShape shape_;
  trace::Workload w_;
  std::vector<std::vector<Part>> parts_;
  std::vector<RankWork> work_;
  std::vector<std::vector<std::uint8_t>> blocks_;  // [rank][op]: its fast-forward block
  // [rank]: (layer, block) -> fast-forward series
  std::vector<std::map<std::pair<std::int64_t, int>, std::int64_t>> series_;
  // calibration_ops()'s distinct ops, in the order first met (found on its first call).
  mutable std::optional<std::vector<std::pair<std::uint32_t, std::uint32_t>>> distinct_ops_;
  friend class IterationBuilder;
};

// The iteration as a simulation's workload: its ranks placed by /replay/placement.
class IterationDriver : public run::ReplayDriver {
 public:
  // `source` must outlive the driver and the RunData it fills.
  explicit IterationDriver(IterationSource& source);
  ~IterationDriver() override;
  void plan(const run::Setup& s) override;
  const replay::WorkSource& source() const override { return source_; }
  void elaborate(const run::Setup& s, replay::Machine& machine) override;
  std::string name() const override;
  void collect(run::RunData& d) const override;

 private:
  IterationSource& source_;
};

}  // namespace trnsim::infer
