// SPDX-License-Identifier: MIT
// A workload in memory: per rank, a dependency graph of operations, plus the process groups the
// collectives run on. Readers (native JSON, Chakra .et) produce it; the replay engine consumes it.
// The format is specified in docs/trace-format.md.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trnsim/config/schema.hpp"
#include "trnsim/dtype.hpp"
#include "trnsim/units.hpp"

namespace trnsim::trace {

using Json = nlohmann::json;
using OpId = std::uint64_t;

enum class OpKind {
  gemm,
  elementwise,
  activation,
  reduction,
  softmax,
  norm,
  attention,
  mem_load,
  mem_store,
  all_reduce,
  all_gather,
  reduce_scatter,
  all_to_all,
  all_to_all_v,
  broadcast,
  send,
  recv,
  barrier,
  delay,
};

constexpr auto enum_names(OpKind) {
  using K = OpKind;
  using S = std::string_view;
  return std::array{
      std::pair{K::gemm, S("gemm")},
      std::pair{K::elementwise, S("elementwise")},
      std::pair{K::activation, S("activation")},
      std::pair{K::reduction, S("reduction")},
      std::pair{K::softmax, S("softmax")},
      std::pair{K::norm, S("norm")},
      std::pair{K::attention, S("attention")},
      std::pair{K::mem_load, S("mem_load")},
      std::pair{K::mem_store, S("mem_store")},
      std::pair{K::all_reduce, S("all_reduce")},
      std::pair{K::all_gather, S("all_gather")},
      std::pair{K::reduce_scatter, S("reduce_scatter")},
      std::pair{K::all_to_all, S("all_to_all")},
      std::pair{K::all_to_all_v, S("all_to_all_v")},
      std::pair{K::broadcast, S("broadcast")},
      std::pair{K::send, S("send")},
      std::pair{K::recv, S("recv")},
      std::pair{K::barrier, S("barrier")},
      std::pair{K::delay, S("delay")},
  };
}

using trnsim::DType;
using trnsim::dtype_bytes;

// The part of the work an op belongs to, for the report's breakdown and fast-forward's units:
// a training step's (forward .. gradient_sync) or an inference iteration's (prefill: a prompt's
// tokens, all at once; decode: one new token per sequence). The report lists only the phases
// its ops have.
enum class Phase { forward, backward, optimizer, gradient_sync, prefill, decode };

constexpr auto enum_names(Phase) {
  using P = Phase;
  using S = std::string_view;
  return std::array{std::pair{P::forward, S("forward")}, std::pair{P::backward, S("backward")},
                    std::pair{P::optimizer, S("optimizer")},
                    std::pair{P::gradient_sync, S("gradient_sync")},
                    std::pair{P::prefill, S("prefill")}, std::pair{P::decode, S("decode")}};
}

std::string_view kind_name(OpKind k);

// Compute kinds run on the NeuronCore engines; collective kinds name a group; point-to-point
// kinds name a peer.
bool is_compute(OpKind k);
bool is_collective(OpKind k);  // all_reduce .. broadcast and barrier
bool is_p2p(OpKind k);         // send, recv

// One operation of one rank. Only the fields of its kind are meaningful (see the table in
// docs/trace-format.md); visit() lists exactly those, so the native reader rejects the others.
struct Op {
  OpId id = 0;
  std::string name;
  OpKind kind = OpKind::delay;
  std::vector<OpId> deps;

  // compute shapes
  DType dtype = DType::bf16;
  std::uint64_t m = 0, k = 0, n = 0;
  std::uint64_t batch = 1;
  std::uint64_t elements = 0;
  std::uint64_t inputs = 2;
  std::uint64_t outputs = 1;
  std::uint64_t rows = 1;
  std::uint64_t heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = false;
  // What the producer recorded for a compute op whose shape it did not give (Chakra num_ops,
  // tensor_size). flops, when set, overrides the count derived from the shape.
  std::optional<double> flops;
  std::optional<std::uint64_t> tensor_bytes;

  // data movement and communication
  std::uint64_t bytes = 0;
  std::string group;
  std::vector<std::uint64_t> send_bytes;
  int root = 0;
  int peer = 0;
  std::int64_t tag = 0;

  Duration duration{};

  // The producer's own label for the op (Chakra op_type, e.g. "M" for a matmul); informational.
  std::optional<std::string> source_type;
  // Where the op sits in the model, for the report (infer_phase() and infer_layer() guess them
  // from the bundled generator's names when a trace leaves them out).
  std::optional<Phase> phase;
  std::optional<int> layer;
  // The micro-batch the op works on, for fast-forward of repeated micro-batches (infer_micro_batch()
  // guesses it from the bundled generator's names).
  std::optional<int> micro_batch;

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::Required;
    v.field("id", id, "unique within the rank", Required{});
    v.field("op", kind, "operation kind", Required{});
    v.field("name", name, "label for reports");
    v.field("deps", deps, "ids of ops of this rank that must finish first");
    v.field("source_type", source_type, "the producer's label for the op (informational)");
    v.field("phase", phase, "part of the training step or inference iteration, for reports");
    v.field("layer", layer, "model layer, for reports", AtLeast{0});
    v.field("micro_batch", micro_batch, "micro-batch, for fast-forward of repeated micro-batches",
            AtLeast{0});
    auto compute_extras = [&] {
      v.field("flops", flops, "arithmetic work as recorded by the producer", AtLeast{0});
      v.field("tensor_bytes", tensor_bytes, "tensor size as recorded by the producer");
    };
    switch (kind) {
      case OpKind::gemm:
        // zero dimensions are rejected by check_structure()
        v.field("m", m, "rows of A and C", Required{});
        v.field("k", k, "inner dimension", Required{});
        v.field("n", n, "columns of B and C", Required{});
        v.field("dtype", dtype, "element type", Required{});
        v.field("batch", batch, "independent products", AtLeast{1});
        compute_extras();
        break;
      case OpKind::elementwise:
        v.field("elements", elements, "output elements", Required{});
        v.field("dtype", dtype, "element type", Required{});
        v.field("inputs", inputs, "input elements per output element", AtLeast{1});
        compute_extras();
        break;
      case OpKind::activation:
        v.field("elements", elements, "elements", Required{});
        v.field("dtype", dtype, "element type", Required{});
        compute_extras();
        break;
      case OpKind::reduction:
        v.field("elements", elements, "input elements", Required{});
        v.field("dtype", dtype, "element type", Required{});
        v.field("outputs", outputs, "output elements", AtLeast{1});
        compute_extras();
        break;
      case OpKind::softmax:
      case OpKind::norm:
        v.field("elements", elements, "elements", Required{});
        v.field("dtype", dtype, "element type", Required{});
        v.field("rows", rows, "independent rows", AtLeast{1});
        compute_extras();
        break;
      case OpKind::attention:
        v.field("batch", batch, "batch", Required{});
        v.field("heads", heads, "heads", Required{});
        v.field("seq_q", seq_q, "query length", Required{});
        v.field("seq_kv", seq_kv, "key/value length", Required{});
        v.field("head_dim", head_dim, "head dimension", Required{});
        v.field("dtype", dtype, "element type", Required{});
        v.field("causal", causal, "causal mask (halves the work)");
        compute_extras();
        break;
      case OpKind::mem_load:
      case OpKind::mem_store:
        v.field("bytes", bytes, "bytes moved", Required{});
        break;
      case OpKind::all_reduce:
      case OpKind::reduce_scatter:
        v.field("group", group, "process group", Required{});
        v.field("bytes", bytes, "bytes per rank before the collective", Required{});
        v.field("dtype", dtype, "element type of the reduction");
        break;
      case OpKind::all_gather:
      case OpKind::all_to_all:
        v.field("group", group, "process group", Required{});
        v.field("bytes", bytes, "bytes per rank", Required{});
        break;
      case OpKind::all_to_all_v:
        v.field("group", group, "process group", Required{});
        v.field("send_bytes", send_bytes, "bytes to each group member, in group order",
                Required{});
        break;
      case OpKind::broadcast:
        v.field("group", group, "process group", Required{});
        v.field("bytes", bytes, "bytes broadcast", Required{});
        v.field("root", root, "rank that holds the data", Required{});
        break;
      case OpKind::send:
      case OpKind::recv:
        v.field("peer", peer, "the other rank", Required{});
        v.field("bytes", bytes, "bytes transferred", Required{});
        v.field("tag", tag, "matches sends to receives");
        break;
      case OpKind::barrier:
        v.field("group", group, "process group", Required{});
        break;
      case OpKind::delay:
        v.field("duration", duration, "time the rank is occupied", Required{});
        break;
    }
  }
};

struct RankTrace {
  int rank = 0;
  std::vector<Op> ops;
};

// How many recorded GPU kernels a reader replaced by Trainium compute and how many kept their
// recorded durations, with the recorded time of each, per operator.
struct OperatorCoverage {
  std::size_t kernels = 0;  // recorded compute kernels (GPU ops with a duration)
  std::size_t mapped = 0;   // of them, run as (or folded into) a mapped compute op
  double recorded_seconds = 0.0, mapped_seconds = 0.0;
  double unmapped_scale = 1.0;  // factor applied to the kept durations
  struct Entry {
    std::size_t kernels = 0;
    double seconds = 0.0;
  };
  std::map<std::string, Entry> mapped_ops, unmapped_ops;  // by operator (or kernel) name

  void add(const OperatorCoverage& o);
  // Two or more lines: the shares mapped, then the operators kept as recorded durations, the
  // largest recorded time first (at most `top` of them).
  std::string describe(std::size_t top = 8) const;
};

struct Workload {
  int version = 1;
  std::string name;
  Json metadata = Json::object();
  std::map<std::string, std::vector<int>> groups;
  std::vector<RankTrace> ranks;  // ranks[r].rank == r
  // Things a reader tolerated (Chakra: dependencies on absent nodes, ...); never errors.
  std::vector<std::string> warnings;
  // Readers of recorded traces (Chakra from PyTorch): how much of the recorded GPU time became
  // Trainium compute. Summed over ranks.
  std::optional<OperatorCoverage> coverage;
  // How the reader took the trace's units, and why (Chakra); empty for native traces.
  std::string units;
  // Where op `index` of rank `rank` (`op`) is in the files read, for messages after reading: the
  // native reader says "file:/rank_ops/2/ops/7 (name)", the Chakra reader "prefix.3.et: node 12
  // (name)". Empty for a workload built in memory; locate() falls back to the rank and op id.
  std::function<std::string(int rank, std::size_t index, const Op& op)> where;

  int num_ranks() const { return static_cast<int>(ranks.size()); }
};

// ---- helpers for the replay engine ---------------------------------------------------------

// Position of each op id in rank.ops. Throws TraceError on a duplicate id.
std::unordered_map<OpId, std::size_t> index_by_id(const RankTrace& rank);

// Indices into rank.ops in an order that respects every dependency; among ready ops the one
// earliest in the file goes first, so a file already in dependency order keeps its order.
// Collectives of one group are matched across ranks in this order. Throws TraceError naming the
// ops of a cycle, or a dependency on an absent op.
std::vector<std::size_t> topological_order(const RankTrace& rank);

// The ops of one dependency cycle in run order (each depends on the one before it, the first on
// the last), or empty when the rank has none. The Chakra reader uses it to break cycles.
std::vector<std::size_t> find_cycle(const RankTrace& rank);

// Removes dependencies until the rank has no cycle: whenever the ops left wait on each other,
// `choose` is given one cycle (as find_cycle returns it) and names the edge to drop as (index of
// the depending op, id of its dependency); the edge must be one of the cycle's. Returns the edges
// dropped, in order. Only for readers of real-world traces; native traces reject cycles.
using CycleBreaker =
    std::function<std::pair<std::size_t, OpId>(const std::vector<std::size_t>& cycle)>;
std::vector<std::pair<std::size_t, OpId>> break_cycles(RankTrace& rank,
                                                       const CycleBreaker& choose);

// Arithmetic work of one op (conventions in docs/trace-format.md) and its sum over a rank.
double op_flops(const Op& op);
double total_flops(const RankTrace& rank);

// The op's phase: its `phase` field, else a guess from the names of the bundled generator
// (tools/moe_gen.py): *_grad_rs, *_grad_ar and *_param_ag are gradient_sync, *_adam optimizer,
// names with a .dgrad, .wgrad or .bwd part backward, other l<N>. names forward. None otherwise.
std::optional<Phase> infer_phase(const Op& op);
// The op's layer: its `layer` field, else N of a name that starts "l<N>.". None otherwise.
std::optional<int> infer_layer(const Op& op);
// The op's micro-batch: its `micro_batch` field, else M of a name that starts "l<N>.m<M>.".
std::optional<int> infer_micro_batch(const Op& op);

// Bytes an op puts on the fabric from this rank (collectives, sends) or moves to/from HBM.
double comm_bytes(const Op& op);

// Names an op in error messages: the native reader says "file:/rank_ops/2/ops/7", the Chakra
// reader "prefix.3.et: node 12". The default says "rank 3, op 12 (name)".
using Locator = std::function<std::string(int rank, std::size_t op_index)>;

// Names op `index` of rank `rank` by w.where, else as "rank 3 op 12 (name)".
std::string locate(const Workload& w, int rank, std::size_t index);

// Whole-workload checks; each throws TraceError with a message naming what is wrong.
// validate() runs all of them (readers call it before returning).
void check_structure(const Workload& w, const Locator& where = {});   // ranks, ids, deps, cycles
void check_groups(const Workload& w, const Locator& where = {});      // groups and their use
void check_collectives(const Workload& w, const Locator& where = {});  // k-th collective agrees
void check_send_recv(const Workload& w, const Locator& where = {});   // sends pair with recvs
void validate(const Workload& w, const Locator& where = {});

// A few lines for `trnsim trace info`: ranks, ops by kind, groups, flops and bytes.
std::string describe(const Workload& w);
// The same as JSON: name, ranks, ops, ops_by_kind, groups (sizes), flops, matmul_flops,
// busiest_rank_flops, communication_bytes, memory_bytes, delay_s, units, coverage, warnings.
Json describe_json(const Workload& w);

}  // namespace trnsim::trace
