// SPDX-License-Identifier: MIT
#include "trnsim/infer/model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::infer {

namespace {

constexpr std::uint64_t kMaxModelFileBytes = 1 << 20;

}  // namespace

bool ModelParams::is_moe(std::uint64_t layer) const {
  return moe && layer >= moe->first_dense_layers && (layer + 1) % moe->interleave == 0;
}

std::uint64_t ModelParams::attention_params() const {
  const auto& a = attention;
  const std::uint64_t h = hidden;
  std::uint64_t p = h;  // the input norm
  if (a.type == AttentionType::gqa) {
    p += h * (a.heads + 2 * a.kv_heads) * a.head_dim + a.heads * a.head_dim * h;
  } else {
    const std::uint64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    p += h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * a.heads * qk;
    p += h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    p += a.kv_lora_rank * a.heads * (a.qk_nope_head_dim + a.v_head_dim);
    p += a.heads * a.v_head_dim * h;
  }
  return p;
}

std::uint64_t ModelParams::dense_ffn_params() const { return 3 * hidden * dense_ffn + hidden; }

std::uint64_t ModelParams::expert_params() const { return moe ? 3 * hidden * moe->expert_ffn : 0; }

std::uint64_t ModelParams::shared_params() const {
  if (!moe) return 0;
  return moe->shared_experts * 3 * hidden * moe->shared_ffn.value_or(moe->expert_ffn);
}

std::uint64_t ModelParams::router_params() const { return moe ? hidden * moe->experts : 0; }

std::uint64_t ModelParams::embedding_params() const {
  return vocab * hidden * (tied_embeddings ? 1 : 2) + hidden;  // + the final norm
}

std::uint64_t ModelParams::total_params() const {
  std::uint64_t p = embedding_params();
  for (std::uint64_t l = 0; l < layers; ++l) {
    p += attention_params();
    if (is_moe(l)) {
      p += hidden + router_params() + moe->experts * expert_params() + shared_params();
    } else {
      p += dense_ffn_params();
    }
  }
  return p;
}

std::uint64_t ModelParams::active_params() const {
  std::uint64_t p = embedding_params();
  for (std::uint64_t l = 0; l < layers; ++l) {
    p += attention_params();
    if (is_moe(l)) {
      p += hidden + router_params() + moe->top_k * expert_params() + shared_params();
    } else {
      p += dense_ffn_params();
    }
  }
  return p;
}

ModelParams load_model(const std::string& path) {
  const std::string text = read_input_file(path, kMaxModelFileBytes);
  const config::Json j = config::parse_json<ConfigError>(text, path);
  config::Provenance prov;
  prov.record("", path);
  ModelParams m;
  config::JsonReader::read(j, "", prov, m);
  auto fail = [&](const std::string& ptr, const std::string& what) {
    throw ConfigError(config::located(prov, ptr, what));
  };
  const auto& a = m.attention;
  auto need = [&](const char* key, std::uint64_t v) {
    if (v < 1) {
      fail(fmt::format("/attention/{}", key),
           fmt::format("{} attention needs \"{}\" >= 1", config::enum_name(a.type), key));
    }
  };
  if (a.type == AttentionType::gqa) {
    need("kv_heads", a.kv_heads);
    need("head_dim", a.head_dim);
    if (a.heads % a.kv_heads != 0) {
      fail("/attention/kv_heads", fmt::format("expected a divisor of heads ({}), got {}", a.heads,
                                              a.kv_heads));
    }
  } else {
    need("q_lora_rank", a.q_lora_rank);
    need("kv_lora_rank", a.kv_lora_rank);
    need("qk_nope_head_dim", a.qk_nope_head_dim);
    need("qk_rope_head_dim", a.qk_rope_head_dim);
    need("v_head_dim", a.v_head_dim);
  }
  if (m.moe) {
    if (m.moe->top_k > m.moe->experts) {
      fail("/moe/top_k", fmt::format("expected at most experts ({}), got {}", m.moe->experts,
                                     m.moe->top_k));
    }
    if (m.moe->first_dense_layers >= m.layers) {
      fail("/moe/first_dense_layers",
           fmt::format("expected fewer than layers ({}), got {}", m.layers,
                       m.moe->first_dense_layers));
    }
  }
  bool any_dense = !m.moe;
  for (std::uint64_t l = 0; l < m.layers && !any_dense; ++l) any_dense = !m.is_moe(l);
  if (any_dense && m.dense_ffn < 1) {
    fail("/dense_ffn", "expected >= 1: the model has dense layers");
  }
  return m;
}

std::string model_path(const std::string& name_or_path, const std::string& models_dir) {
  namespace fs = std::filesystem;
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json")) {
    return name_or_path;
  }
  const fs::path p = fs::path(models_dir) / (name_or_path + ".json");
  if (!fs::exists(p)) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(models_dir, ec)) {
      if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError(fmt::format("--model: no model \"{}\" in {} (models: {})", name_or_path,
                                 models_dir, list));
  }
  return p.string();
}

}  // namespace trnsim::infer
