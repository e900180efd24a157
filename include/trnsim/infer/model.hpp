// SPDX-License-Identifier: MIT
// An LLM's shapes as data (configs/models/<name>.json, docs/inference.md): layers, widths,
// attention (grouped-query or DeepSeek's multi-head latent attention) and mixture of experts.
// Adding a model is a data file, not code.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnsim/config/schema.hpp"

namespace trnsim::infer {

enum class AttentionType { gqa, mla };

constexpr auto enum_names(AttentionType) {
  using S = std::string_view;
  return std::array{std::pair{AttentionType::gqa, S("gqa")},
                    std::pair{AttentionType::mla, S("mla")}};
}

struct AttentionParams {
  AttentionType type = AttentionType::gqa;
  std::uint64_t heads = 0;
  // gqa
  std::uint64_t kv_heads = 0, head_dim = 0;
  // mla: queries through a low-rank latent, keys and values through a compressed latent
  // (kv_lora_rank) that is what the KV cache holds, with qk_rope_head_dim rope dims beside it.
  std::uint64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0,
                v_head_dim = 0;

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::Required;
    v.field("type", type, "gqa (grouped-query) or mla (multi-head latent)", Required{});
    v.field("heads", heads, "query heads", Required{}, AtLeast{1});
    v.field("kv_heads", kv_heads, "gqa: key/value heads");
    v.field("head_dim", head_dim, "gqa: width of a head");
    v.field("q_lora_rank", q_lora_rank, "mla: query latent width");
    v.field("kv_lora_rank", kv_lora_rank, "mla: compressed KV latent width (cached)");
    v.field("qk_nope_head_dim", qk_nope_head_dim, "mla: query/key dims without rope, per head");
    v.field("qk_rope_head_dim", qk_rope_head_dim, "mla: rope dims (cached beside the latent)");
    v.field("v_head_dim", v_head_dim, "mla: value dims per head");
  }
};

struct MoeParams {
  std::uint64_t experts = 0, top_k = 0, expert_ffn = 0;
  std::uint64_t shared_experts = 0;
  std::optional<std::uint64_t> shared_ffn;  // width of a shared expert; none: expert_ffn
  std::uint64_t first_dense_layers = 0;     // DeepSeek's first_k_dense_replace
  std::uint64_t interleave = 1;             // layer l >= first_dense_layers is MoE iff (l+1) % interleave == 0

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::Required;
    v.field("experts", experts, "routed experts", Required{}, AtLeast{1});
    v.field("top_k", top_k, "experts each token is routed to", Required{}, AtLeast{1});
    v.field("expert_ffn", expert_ffn, "intermediate width of an expert", Required{}, AtLeast{1});
    v.field("shared_experts", shared_experts, "experts every token passes through");
    v.field("shared_ffn", shared_ffn, "intermediate width of a shared expert (default expert_ffn)",
            AtLeast{1});
    v.field("first_dense_layers", first_dense_layers, "leading layers with a dense FFN");
    v.field("interleave", interleave, "MoE every n-th layer (Llama 4: 2)", AtLeast{1});
  }
};

struct ModelParams {
  std::string name, description;
  std::vector<std::string> sources;
  std::uint64_t layers = 0, hidden = 0, vocab = 0;
  std::uint64_t dense_ffn = 0;  // intermediate width of a dense layer's FFN (SwiGLU)
  bool tied_embeddings = false;
  AttentionParams attention;
  std::optional<MoeParams> moe;

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::Required;
    v.field("name", name, "model name", Required{});
    v.field("description", description, "what the model is");
    v.field("sources", sources, "where each value comes from");
    v.field("layers", layers, "decoder layers", Required{}, AtLeast{1});
    v.field("hidden", hidden, "model width", Required{}, AtLeast{1});
    v.field("vocab", vocab, "vocabulary size", Required{}, AtLeast{1});
    v.field("dense_ffn", dense_ffn, "intermediate width of a dense FFN", Required{});
    v.field("tied_embeddings", tied_embeddings, "the LM head shares the embedding table");
    v.field("attention", attention, "attention", Required{});
    v.field("moe", moe, "mixture of experts (absent: dense)");
  }

  bool is_moe(std::uint64_t layer) const;
  // Parameters of one part, whole model (no sharding).
  std::uint64_t attention_params() const;  // one layer's projections and norms
  std::uint64_t dense_ffn_params() const;  // one dense layer's FFN and norm
  std::uint64_t expert_params() const;     // one routed expert
  std::uint64_t shared_params() const;     // a layer's shared experts
  std::uint64_t router_params() const;
  std::uint64_t embedding_params() const;  // embedding table and LM head (once when tied)
  std::uint64_t total_params() const;
  std::uint64_t active_params() const;     // per token: top_k routed experts of each MoE layer
};

// Reads a model file; ConfigError "file:/pointer: what was expected" on bad input (unknown keys,
// wrong types, fields the attention type needs but lacks).
ModelParams load_model(const std::string& path);

// `name_or_path`: a file, or the name of configs/models/<name>.json under `models_dir`.
std::string model_path(const std::string& name_or_path, const std::string& models_dir);

}  // namespace trnsim::infer
