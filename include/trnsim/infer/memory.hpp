// SPDX-License-Identifier: MIT
// Where a model's bytes go on a chip when it serves (docs/inference.md): the layout that shards it
// over chips, its weights per chip, the KV cache per token, what HBM has left for the KV cache
// beside the weights, activations and a stated reserve, and the paged blocks the cache is handed
// out in.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trnsim/dtype.hpp"
#include "trnsim/infer/model.hpp"

namespace trnsim::infer {

// How a replica of the model is spread over ranks (one rank per chip or logical core, as
// /replay/placement places training ranks): pp pipeline stages, each of dp attention groups of tp
// ranks. Attention and dense FFNs are tensor-parallel over a group (dp > 1: data-parallel
// attention, each group on its own sequences); routed experts either tensor-parallel over the
// group (ep = 1) or expert-parallel over the stage's dp ranks (ep = dp, tp = 1: the layout of
// DeepSeek-style expert-parallel decode, with a dispatch and a combine all-to-all per MoE layer).
struct Layout {
  int tp = 1, dp = 1, ep = 1, pp = 1;
  int ranks() const { return tp * dp * pp; }
  int stage_ranks() const { return tp * dp; }
  std::string text() const;  // "tp=8,dp=1,ep=1,pp=1"
};

// "tp=8", "dp=16,ep=16", "tp=4,pp=2" (missing keys are 1); InputError naming --layout otherwise.
Layout parse_layout(const std::string& s);
// InputError naming --layout when `model` cannot be split so (heads, KV heads, widths, experts
// or layers not divisible; a combination this slice does not model).
void check_layout(const ModelParams& model, const Layout& layout);

// The types a model is served in. Weights: bf16, fp8, mxfp8, mxfp4 (linear layers; embeddings,
// norms and the router stay bf16). KV cache: bf16 or fp8. Activations and collectives: bf16.
struct ServingDtypes {
  DType weights = DType::bf16, kv = DType::bf16, activations = DType::bf16;
};

// KV cache bytes one token adds to one layer, whole model: MLA caches the latent and the rope
// key, (kv_lora_rank + qk_rope_head_dim) x bytes; GQA caches a key and a value per KV head,
// 2 x kv_heads x head_dim x bytes.
double kv_bytes_per_token_layer(const ModelParams& m, DType kv);
// The same on one rank of `layout`: GQA's KV heads are split over tp (each rank keeps at least
// one: replicated when tp > kv_heads); MLA's latent is not split by heads, so every rank of a
// tp group holds all of it.
double kv_bytes_per_token_layer_rank(const ModelParams& m, const Layout& layout, DType kv);

// The layers of pipeline stage `stage`: [first, last).
std::pair<std::uint64_t, std::uint64_t> stage_layers(const ModelParams& m, const Layout& layout,
                                                     int stage);

// Weight bytes on one rank of a stage, by part.
struct WeightBytes {
  double attention = 0, dense_ffn = 0, experts = 0, shared = 0, other = 0;  // other: router, norms, embeddings
  double total() const { return attention + dense_ffn + experts + shared + other; }
};
WeightBytes weight_bytes_rank(const ModelParams& m, const Layout& layout, const ServingDtypes& d,
                              int stage);

// What is left for the KV cache on the fullest rank (the stage with the most weights).
struct KvCapacity {
  double hbm = 0, weights = 0, activations = 0, reserve = 0;
  double kv = 0;                      // hbm - weights - activations - reserve (may be < 0)
  double kv_bytes_per_token = 0;      // on a rank: all the rank's layers
  std::uint64_t block_tokens = 0;     // tokens per paged block
  std::uint64_t blocks_per_chip = 0;  // whole blocks that fit in `kv`
  std::uint64_t tokens_per_chip = 0;  // blocks x block_tokens
  std::uint64_t tokens_per_replica = 0;  // a token's KV spans a tp group and the pp stages; dp groups hold different sequences
  int stage = 0;                      // the stage of the fullest rank
};

struct CapacityOptions {
  double hbm_bytes = 0;               // one chip's (or logical core's share of) HBM capacity
  double reserve_fraction = 0.10;     // of hbm_bytes, kept free (vLLM's gpu_memory_utilization 0.9)
  std::uint64_t block_tokens = 16;    // vLLM's default block size
  std::uint64_t max_tokens = 256;     // tokens of the largest iteration (activation workspace)
  std::uint64_t max_sequences = 256;  // sequences sampled at once (logits)
};

// Activation workspace of a rank for `tokens` tokens and `sequences` sampled sequences: the
// residual stream and its norm, the widest projection output of a layer and the FFN's
// intermediate, double-buffered, plus the fp32 logits of the rank's vocabulary shard.
double activation_bytes_rank(const ModelParams& m, const Layout& layout, const ServingDtypes& d,
                             std::uint64_t tokens, std::uint64_t sequences);

KvCapacity kv_capacity(const ModelParams& m, const Layout& layout, const ServingDtypes& d,
                       const CapacityOptions& o);

// InputError (exit 2) naming the model, the layout and the bytes when the weights, activations
// and reserve of the fullest rank exceed its HBM.
void check_fits(const ModelParams& m, const Layout& layout, const KvCapacity& c,
                const std::string& chip);

// A paged KV cache: fixed blocks of `block_tokens` tokens handed to sequences as they grow.
class BlockAllocator {
 public:
  BlockAllocator(std::uint64_t total_blocks, std::uint64_t block_tokens);
  static std::uint64_t blocks_for(std::uint64_t tokens, std::uint64_t block_tokens);
  // Grows (never shrinks) sequence `seq` to `tokens` tokens; false, with nothing changed, when
  // the free blocks do not suffice.
  bool reserve(std::uint64_t seq, std::uint64_t tokens);
  // Frees all of a sequence's blocks (none: nothing happens).
  void release(std::uint64_t seq);
  std::uint64_t free_blocks() const { return total_ - used_; }
  std::uint64_t used_blocks() const { return used_; }
  std::uint64_t blocks_of(std::uint64_t seq) const;

 private:
  std::uint64_t total_, block_tokens_, used_ = 0;
  std::map<std::uint64_t, std::uint64_t> blocks_;  // sequence -> blocks held
};

}  // namespace trnsim::infer
