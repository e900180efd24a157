// SPDX-License-Identifier: MIT
#include "trnsim/infer/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "trnsim/error.hpp"
#include "trnsim/units.hpp"

namespace trnsim::infer {

namespace {

[[noreturn]] void bad_layout(const std::string& what) {
  throw InputError(fmt::format("--layout: {}", what));
}

double gb(double bytes) { return bytes / 1e9; }

}  // namespace

std::string Layout::text() const { return fmt::format("tp={},dp={},ep={},pp={}", tp, dp, ep, pp); }

Layout parse_layout(const std::string& s) {
  Layout l;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      bad_layout(fmt::format("expected key=value items (tp, dp, ep, pp), got \"{}\"", item));
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    int v = 0;
    try {
      std::size_t used = 0;
      v = std::stoi(value, &used);
      if (used != value.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      bad_layout(fmt::format("{}: expected an integer, got \"{}\"", key, value));
    }
    if (v < 1 || v > 1 << 20) bad_layout(fmt::format("{}: expected 1 to 1048576, got {}", key, v));
    if (key == "tp") l.tp = v;
    else if (key == "dp") l.dp = v;
    else if (key == "ep") l.ep = v;
    else if (key == "pp") l.pp = v;
    else bad_layout(fmt::format("unknown key \"{}\" (expected tp, dp, ep or pp)", key));
  }
  return l;
}

void check_layout(const ModelParams& m, const Layout& l) {
  const auto& a = m.attention;
  auto divides = [&](const char* what, std::uint64_t n, int by, const char* key) {
    if (n % std::uint64_t(by) != 0) {
      bad_layout(fmt::format("{}={} does not divide {}'s {} ({})", key, by, m.name, what, n));
    }
  };
  if (l.ep != 1 && !(l.ep == l.dp && l.tp == 1) && l.ep != l.tp) {
    bad_layout(fmt::format("{}: expert parallelism is modelled over data-parallel attention "
                           "(ep = dp, tp = 1), inside each tensor-parallel group (ep = tp) or "
                           "not at all (ep = 1)",
                           l.text()));
  }
  if (l.ep > 1 && !m.moe) bad_layout(fmt::format("ep={}: {} has no experts", l.ep, m.name));
  divides("query heads", a.heads, l.tp, "tp");
  if (a.type == AttentionType::gqa && a.kv_heads % std::uint64_t(l.tp) != 0 &&
      std::uint64_t(l.tp) % a.kv_heads != 0) {
    bad_layout(fmt::format("tp={} neither divides nor is a multiple of {}'s KV heads ({})", l.tp,
                           m.name, a.kv_heads));
  }
  if (m.dense_ffn > 0) divides("dense FFN width", m.dense_ffn, l.tp, "tp");
  if (m.moe) {
    divides("experts", m.moe->experts, l.ep, "ep");
    if (l.ep == 1) divides("expert width", m.moe->expert_ffn, l.tp, "tp");
    if (m.moe->shared_experts) divides("shared expert width", m.moe->shared_ffn.value_or(m.moe->expert_ffn), l.tp, "tp");
  }
  if (std::uint64_t(l.pp) > m.layers) {
    bad_layout(fmt::format("pp={}: {} has only {} layers", l.pp, m.name, m.layers));
  }
}

double kv_bytes_per_token_layer(const ModelParams& m, DType kv) {
  const auto& a = m.attention;
  const double b = dtype_bytes(kv);
  if (a.type == AttentionType::mla) return double(a.kv_lora_rank + a.qk_rope_head_dim) * b;
  return 2.0 * double(a.kv_heads * a.head_dim) * b;
}

double kv_bytes_per_token_layer_rank(const ModelParams& m, const Layout& l, DType kv) {
  const auto& a = m.attention;
  if (a.type == AttentionType::mla) return kv_bytes_per_token_layer(m, kv);
  const std::uint64_t kv_local = std::max<std::uint64_t>(1, a.kv_heads / std::uint64_t(l.tp));
  return 2.0 * double(kv_local * a.head_dim) * dtype_bytes(kv);
}

std::pair<std::uint64_t, std::uint64_t> stage_layers(const ModelParams& m, const Layout& l,
                                                     int stage) {
  const auto pp = std::uint64_t(l.pp), s = std::uint64_t(stage);
  return {s * m.layers / pp, (s + 1) * m.layers / pp};
}

WeightBytes weight_bytes_rank(const ModelParams& m, const Layout& l, const ServingDtypes& d,
                              int stage) {
  const auto& a = m.attention;
  const double w = dtype_bytes(d.weights), hb = dtype_bytes(DType::bf16);
  const auto tp = std::uint64_t(l.tp), h = m.hidden;
  const std::uint64_t hl = a.heads / tp;
  // One layer's attention on a rank: (split linear params, replicated linear params, norms).
  double attn = 0;
  if (a.type == AttentionType::gqa) {
    const std::uint64_t kvl = std::max<std::uint64_t>(1, a.kv_heads / tp);
    attn = double(h * (hl + 2 * kvl) * a.head_dim + hl * a.head_dim * h) * w + double(h) * hb;
  } else {
    const std::uint64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double replicated = double(h * a.q_lora_rank + h * (a.kv_lora_rank + a.qk_rope_head_dim));
    const double split = double(a.q_lora_rank * hl * qk +
                                a.kv_lora_rank * hl * (a.qk_nope_head_dim + a.v_head_dim) +
                                hl * a.v_head_dim * h);
    attn = (replicated + split) * w + double(h + a.q_lora_rank + a.kv_lora_rank) * hb;
  }
  WeightBytes out;
  const auto [first, last] = stage_layers(m, l, stage);
  for (std::uint64_t layer = first; layer < last; ++layer) {
    out.attention += attn;
    if (m.is_moe(layer)) {
      const auto& e = *m.moe;
      out.other += double(h + m.router_params()) * hb;
      const double expert = double(m.expert_params()) * w;
      out.experts += l.ep > 1 ? double(e.experts / std::uint64_t(l.ep)) * expert
                              : double(e.experts) * expert / double(tp);
      out.shared += double(m.shared_params()) * w / double(tp);
    } else {
      out.dense_ffn += double(3 * h * m.dense_ffn) * w / double(tp) + double(h) * hb;
    }
  }
  // Embedding on the first stage, LM head and final norm on the last, vocabulary-parallel.
  const double table = double(m.vocab * h) * hb / double(tp);
  if (stage == 0) out.other += table;
  if (stage == l.pp - 1) {
    out.other += double(h) * hb;
    if (!(m.tied_embeddings && l.pp == 1)) out.other += table;
  }
  return out;
}

double activation_bytes_rank(const ModelParams& m, const Layout& l, const ServingDtypes& d,
                             std::uint64_t tokens, std::uint64_t sequences) {
  const auto& a = m.attention;
  const auto tp = std::uint64_t(l.tp);
  std::uint64_t widest = a.type == AttentionType::gqa
                             ? (a.heads / tp + 2 * std::max<std::uint64_t>(1, a.kv_heads / tp)) * a.head_dim
                             : (a.heads / tp) * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim);
  widest = std::max(widest, 2 * m.dense_ffn / tp);
  if (m.moe) {
    const std::uint64_t per = l.ep > 1 ? m.moe->expert_ffn : m.moe->expert_ffn / tp;
    // A token's k expert rows are live at once after the dispatch.
    widest = std::max(widest, 2 * per * m.moe->top_k);
  }
  const double per_token = double(4 * m.hidden + widest) * dtype_bytes(d.activations);
  return 2.0 * double(tokens) * per_token + double(sequences) * double(m.vocab / tp) * 4.0;
}

KvCapacity kv_capacity(const ModelParams& m, const Layout& l, const ServingDtypes& d,
                       const CapacityOptions& o) {
  KvCapacity c;
  c.hbm = o.hbm_bytes;
  c.reserve = o.reserve_fraction * o.hbm_bytes;
  c.activations = activation_bytes_rank(m, l, d, o.max_tokens, o.max_sequences);
  // The fullest stage decides: the fewest KV bytes left.
  double best_left = 0;
  for (int s = 0; s < l.pp; ++s) {
    const double weights = weight_bytes_rank(m, l, d, s).total();
    const auto [first, last] = stage_layers(m, l, s);
    const double per_token = double(last - first) * kv_bytes_per_token_layer_rank(m, l, d.kv);
    const double left = c.hbm - weights - c.activations - c.reserve;
    const double tokens = per_token > 0 ? left / per_token : 0;
    if (s == 0 || tokens < best_left) {
      best_left = tokens;
      c.stage = s;
      c.weights = weights;
      c.kv = left;
      c.kv_bytes_per_token = per_token;
    }
  }
  c.block_tokens = o.block_tokens;
  const double block_bytes = c.kv_bytes_per_token * double(o.block_tokens);
  c.blocks_per_chip =
      c.kv > 0 && block_bytes > 0 ? std::uint64_t(std::floor(c.kv / block_bytes)) : 0;
  c.tokens_per_chip = c.blocks_per_chip * o.block_tokens;
  c.tokens_per_replica = c.tokens_per_chip * std::uint64_t(l.dp);
  return c;
}

void check_fits(const ModelParams& m, const Layout& l, const KvCapacity& c,
                const std::string& chip) {
  if (c.kv > 0 && c.blocks_per_chip > 0) return;
  throw InputError(fmt::format(
      "model {} with layout {} ({} ranks) does not fit {}: a rank of stage {} needs {:.2f} GB of "
      "weights + {:.2f} GB of activations + {:.2f} GB reserve = {:.2f} GB, leaving {:.3f} GB for "
      "the KV cache of its {:.0f} GB HBM (one {}-token block needs {:.0f} bytes)",
      m.name, l.text(), l.ranks(), chip, c.stage, gb(c.weights), gb(c.activations), gb(c.reserve),
      gb(c.weights + c.activations + c.reserve), gb(c.kv), gb(c.hbm), c.block_tokens,
      c.kv_bytes_per_token * double(c.block_tokens)));
}

BlockAllocator::BlockAllocator(std::uint64_t total_blocks, std::uint64_t block_tokens)
    : total_(total_blocks), block_tokens_(block_tokens) {
  if (block_tokens < 1) throw InputError("KV cache blocks must hold at least one token");
}

std::uint64_t BlockAllocator::blocks_for(std::uint64_t tokens, std::uint64_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

bool BlockAllocator::reserve(std::uint64_t seq, std::uint64_t tokens) {
  const std::uint64_t have = blocks_of(seq), want = blocks_for(tokens, block_tokens_);
  if (want <= have) return true;
  if (want - have > free_blocks()) return false;
  used_ += want - have;
  blocks_[seq] = want;
  return true;
}

void BlockAllocator::release(std::uint64_t seq) {
  const auto it = blocks_.find(seq);
  if (it == blocks_.end()) return;
  used_ -= it->second;
  blocks_.erase(it);
}

std::uint64_t BlockAllocator::blocks_of(std::uint64_t seq) const {
  const auto it = blocks_.find(seq);
  return it == blocks_.end() ? 0 : it->second;
}

}  // namespace trnsim::infer
