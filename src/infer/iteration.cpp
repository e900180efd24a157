// SPDX-License-Identifier: MIT
// One inference iteration as ops of the native kinds (docs/inference.md, "An iteration"). The
// layer structure follows tools/moe/build.py's forward pass; what differs is inference's: a
// batch of decode and prefill tokens instead of a micro-batch, attention over a KV cache, the
// expert GEMMs of the experts a batch activates, and sampling.
#include "trnsim/infer/iteration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_set>

#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"
#include "trnsim/log.hpp"
#include "trnsim/run/estimate.hpp"

namespace trnsim::infer {

const char* part_name(Part p) {
  static constexpr std::array<const char*, kPartCount> names{
      "runtime",   "embedding",    "attention_proj", "attention",      "kv_write",
      "dense_ffn", "router",       "experts",        "shared_experts", "all_to_all",
      "tp_collective", "pipeline", "sampling", "kv_transfer"};
  return names[std::size_t(p)];
}

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// The experts each token of a data-parallel group is routed to: top_k distinct experts drawn
// uniformly from a hash of (seed, layer, group, token), the same in every run. `pick(expert)` is
// called for each, token after token (no routes are kept: a prefill chunk has thousands of
// tokens in each of 58 layers).
template <typename Pick>
void route(const IterationSpec& s, std::uint64_t layer, int group, std::uint64_t tokens,
           Pick&& pick) {
  const auto& e = *s.model.moe;
  std::vector<std::uint64_t> picked;
  picked.reserve(e.top_k);
  for (std::uint64_t t = 0; t < tokens; ++t) {
    std::uint64_t x = splitmix64(s.seed ^ splitmix64(layer * 1'000'003ULL + std::uint64_t(group)) ^
                                 splitmix64(t + 0x51ed27ULL));
    picked.clear();
    while (picked.size() < e.top_k) {
      x = splitmix64(x);
      const std::uint64_t ex = x % e.experts;
      if (std::find(picked.begin(), picked.end(), ex) == picked.end()) picked.push_back(ex);
    }
    for (const std::uint64_t ex : picked) pick(ex);
  }
}

}  // namespace

// Builds every rank's ops: rank = (stage x dp + group) x tp + t.
class IterationBuilder {
 public:
  explicit IterationBuilder(IterationSource& src) : src_(src), s_(src.spec_), m_(s_.model) {}

  void build() {
    const Layout& l = s_.layout;
    n_ = l.ranks();
    const int n = n_ * (s_.disaggregated ? 2 : 1);
    src_.w_.name = fmt::format("{} {} B={} C={} P={}{}", m_.name, l.text(), s_.decode_seqs,
                               s_.context, s_.prefill_tokens,
                               s_.disaggregated ? " disaggregated" : "");
    src_.w_.ranks.resize(std::size_t(n));
    src_.parts_.resize(std::size_t(n));
    src_.blocks_.resize(std::size_t(n));
    src_.work_.resize(std::size_t(n));
    for (int r = 0; r < n; ++r) {
      pool_ = r / n_;
      const int lr = r % n_;
      const int stage = lr / l.stage_ranks(), group = (lr % l.stage_ranks()) / l.tp;
      if (l.tp > 1) {
        src_.w_.groups[tp_group(stage, group)].push_back(r);
      }
      if (l.ep > 1) src_.w_.groups[ep_group(stage)].push_back(r);
    }
    src_.series_.resize(std::size_t(n));
    for (int r = 0; r < n; ++r) {
      build_rank(r);
      layer_series(r);
    }
  }

 private:
  // Group names; a disaggregated iteration's pools have their own ("p0.tp.s0.g0").
  std::string pool_prefix() const { return s_.disaggregated ? fmt::format("p{}.", pool_) : ""; }
  std::string tp_group(int stage, int group) const {
    return fmt::format("{}tp.s{}.g{}", pool_prefix(), stage, group);
  }
  std::string ep_group(int stage) const { return fmt::format("{}ep.s{}", pool_prefix(), stage); }

  // The shapes the iteration runs at (compiled buckets applied).
  // Disaggregated: pool 0 prefills, pool 1 decodes.
  std::uint64_t decode_of(int group) const {
    return s_.disaggregated && pool_ == 0 ? 0 : src_.shape_.decode[std::size_t(group)];
  }
  std::uint64_t prefill_of(int group) const {
    if (s_.disaggregated && pool_ == 1) return 0;
    return group == 0 ? src_.shape_.prefill_tokens : 0;
  }
  std::uint64_t tokens_of(int group) const { return decode_of(group) + prefill_of(group); }

  // -- op helpers: each returns the new op's id ---------------------------------------------
  trace::OpId add(trace::Op op, Part part, std::vector<trace::OpId> deps) {
    auto& ops = rank_->ops;
    op.id = ops.size();
    deps.erase(std::remove(deps.begin(), deps.end(), kNone), deps.end());
    op.deps = std::move(deps);
    op.phase = s_.prefill_tokens > 0 ? trace::Phase::prefill : trace::Phase::decode;
    if (layer_ >= 0) op.layer = layer_;
    ops.push_back(std::move(op));
    parts_->push_back(part);
    blocks_->push_back(block_);
    return ops.back().id;
  }
  std::string nm(const std::string& what) const {
    return layer_ >= 0 ? fmt::format("l{}.{}", layer_, what) : what;
  }
  void count_flops(DType d, double flops) { work_->flops[std::size_t(d)] += flops; }

  trace::OpId gemm(const std::string& what, Part part, std::vector<trace::OpId> deps,
                   std::uint64_t m, std::uint64_t k, std::uint64_t n, DType d,
                   std::uint64_t batch = 1, bool weights = true) {
    trace::Op op;
    op.name = nm(what);
    op.kind = trace::OpKind::gemm;
    op.m = m, op.k = k, op.n = n, op.batch = batch, op.dtype = d;
    count_flops(d, 2.0 * double(m) * double(k) * double(n) * double(batch));
    if (weights) work_->weight_bytes += double(k * n * batch) * dtype_bytes(d);
    return add(std::move(op), part, std::move(deps));
  }
  trace::OpId vec(trace::OpKind kind, const std::string& what, Part part,
                  std::vector<trace::OpId> deps, std::uint64_t elements, std::uint64_t rows = 1,
                  std::uint64_t inputs_or_outputs = 0) {
    trace::Op op;
    op.name = nm(what);
    op.kind = kind;
    op.elements = elements;
    op.dtype = DType::bf16;
    if (kind == trace::OpKind::norm || kind == trace::OpKind::softmax) op.rows = rows;
    if (kind == trace::OpKind::elementwise && inputs_or_outputs) op.inputs = inputs_or_outputs;
    if (kind == trace::OpKind::reduction && inputs_or_outputs) op.outputs = inputs_or_outputs;
    return add(std::move(op), part, std::move(deps));
  }
  trace::OpId attention(const std::string& what, std::vector<trace::OpId> deps, std::uint64_t batch,
                        std::uint64_t seq_q, std::uint64_t seq_kv, std::uint64_t head_dim,
                        double kv_bytes) {
    trace::Op op;
    op.name = nm(what);
    op.kind = trace::OpKind::attention;
    op.batch = batch, op.heads = 1, op.seq_q = seq_q, op.seq_kv = seq_kv, op.head_dim = head_dim;
    op.dtype = s_.dtypes.kv;
    count_flops(s_.dtypes.kv, 4.0 * double(batch * seq_q) * double(seq_kv) * double(head_dim));
    work_->kv_read_bytes += kv_bytes;
    return add(std::move(op), Part::attention, std::move(deps));
  }
  trace::OpId collective(trace::OpKind kind, const std::string& what, Part part,
                         std::vector<trace::OpId> deps, const std::string& group,
                         std::uint64_t bytes) {
    trace::Op op;
    op.name = nm(what);
    op.kind = kind;
    op.group = group;
    op.bytes = bytes;
    op.dtype = s_.dtypes.activations;
    return add(std::move(op), part, std::move(deps));
  }
  trace::OpId a2a(const std::string& what, std::vector<trace::OpId> deps,
                  std::vector<std::uint64_t> send) {
    trace::Op op;
    op.name = nm(what);
    op.kind = trace::OpKind::all_to_all_v;
    op.group = ep_group(stage_);
    op.send_bytes = std::move(send);
    return add(std::move(op), Part::all_to_all, std::move(deps));
  }
  trace::OpId delay(const std::string& what, double seconds, std::vector<trace::OpId> deps) {
    trace::Op op;
    op.name = what;
    op.kind = trace::OpKind::delay;
    op.duration = Duration{seconds};
    return add(std::move(op), Part::runtime, std::move(deps));
  }
  trace::OpId tp_all_reduce(const std::string& what, std::vector<trace::OpId> deps,
                            std::uint64_t tokens) {
    if (s_.layout.tp == 1) return kNone;
    return collective(trace::OpKind::all_reduce, what, Part::tp_collective, std::move(deps),
                      tp_group(stage_, group_), tokens * m_.hidden * act_bytes());
  }
  std::uint64_t act_bytes() const { return std::uint64_t(dtype_bytes(s_.dtypes.activations)); }

  // Disaggregated: the prefill pool sends a layer's KV of the chunk to its counterpart in the
  // decode pool once written; the send does not hold up the rank's next layer.
  void send_kv(trace::OpId written, std::uint64_t prefill, double kv_tok) {
    if (!s_.disaggregated || prefill == 0) return;
    trace::Op op;
    op.name = nm("kv_send");
    op.kind = trace::OpKind::send;
    op.peer = rank_->rank + n_;
    op.bytes = std::uint64_t(double(prefill) * kv_tok);
    op.tag = layer_;
    work_->kv_sent_bytes += double(op.bytes);
    add(std::move(op), Part::kv_transfer, {written});
  }

  // -- the layers -------------------------------------------------------------------------------
  trace::OpId attention_block(trace::OpId x) {
    block_ = 0;
    const auto& a = m_.attention;
    const std::uint64_t T = tokens_of(group_), h = m_.hidden, B = decode_of(group_),
                        P = prefill_of(group_), tp = std::uint64_t(s_.layout.tp);
    const std::uint64_t hl = a.heads / tp;
    const DType w = s_.dtypes.weights;
    const double kv_tok = kv_bytes_per_token_layer_rank(m_, s_.layout, s_.dtypes.kv);
    const auto n1 = vec(trace::OpKind::norm, "attn_norm", Part::attention_proj, {x}, T * h, T);
    // KV bytes the attention of this rank reads for the decode tokens and for the chunk (its
    // prompt before it and, causally, half of itself on average).
    const std::uint64_t chunk_kv = s_.prefill_context + ceil_div(P, 2);
    std::vector<trace::OpId> outs;
    std::uint64_t o_in = 0;
    if (a.type == AttentionType::gqa) {
      const std::uint64_t kvl = std::max<std::uint64_t>(1, a.kv_heads / tp), g = hl / kvl;
      const auto qkv = gemm("qkv", Part::attention_proj, {n1}, T, h, (hl + 2 * kvl) * a.head_dim, w);
      outs.push_back(vec(trace::OpKind::elementwise, "kv_write", Part::kv_write, {qkv},
                         T * 2 * kvl * a.head_dim, 1, 1));
      work_->kv_write_bytes += double(T) * kv_tok;
      send_kv(outs.back(), P, kv_tok);
      // A KV head's query heads share its keys: they are the rows of one product per KV head.
      if (B > 0) {
        outs.push_back(attention("attn.decode", {qkv}, B * kvl, g, src_.shape_.context, a.head_dim,
                                 double(B * src_.shape_.context) * kv_tok));
      }
      if (P > 0) {
        outs.push_back(attention("attn.prefill", {qkv}, kvl, P * g, chunk_kv, a.head_dim,
                                 double(chunk_kv) * kv_tok));
      }
      o_in = hl * a.head_dim;
    } else {
      const std::uint64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim,
                          latent = a.kv_lora_rank + a.qk_rope_head_dim;
      const auto qa = gemm("q_a", Part::attention_proj, {n1}, T, h, a.q_lora_rank, w);
      const auto qn = vec(trace::OpKind::norm, "q_norm", Part::attention_proj, {qa},
                          T * a.q_lora_rank, T);
      const auto qb = gemm("q_b", Part::attention_proj, {qn}, T, a.q_lora_rank, hl * qk, w);
      const auto kva = gemm("kv_a", Part::attention_proj, {n1}, T, h, latent, w);
      const auto kvn = vec(trace::OpKind::norm, "kv_norm", Part::attention_proj, {kva},
                           T * a.kv_lora_rank, T);
      outs.push_back(vec(trace::OpKind::elementwise, "kv_write", Part::kv_write, {kvn},
                         T * latent, 1, 1));
      work_->kv_write_bytes += double(T) * kv_tok;
      send_kv(outs.back(), P, kv_tok);
      if (B > 0) {
        // Decode absorbs kv_b into the query and the output (W_UK, W_UV): attention is one
        // multi-query product per sequence over the cached latent, read once (keys and values
        // are the same latent: a head_dim of half its width reads it once).
        const auto uk = gemm("kv_b.uk", Part::attention_proj, {qb}, B, a.qk_nope_head_dim,
                             a.kv_lora_rank, w, hl);
        const auto at = attention("attn.decode", {uk, kvn}, B, hl, src_.shape_.context,
                                  latent / 2, double(B * src_.shape_.context) * kv_tok);
        outs.push_back(gemm("kv_b.uv", Part::attention_proj, {at}, B, a.kv_lora_rank,
                            a.v_head_dim, w, hl));
      }
      if (P > 0) {
        // Prefill decompresses the latent of the prompt and the chunk into per-head keys and
        // values (kv_b) and runs multi-head attention over them (head dims 192 and 128).
        const std::uint64_t ctx = s_.prefill_context + P;
        const auto kvb = gemm("kv_b", Part::attention_proj, {kvn}, ctx, a.kv_lora_rank,
                              hl * (a.qk_nope_head_dim + a.v_head_dim), w);
        outs.push_back(attention("attn.prefill", {qb, kvb}, hl, P, chunk_kv,
                                 (qk + a.v_head_dim) / 2, double(ctx) * kv_tok));
      }
      o_in = hl * a.v_head_dim;
    }
    const auto o = gemm("o", Part::attention_proj, outs, T, o_in, h, w);
    const auto ar = tp_all_reduce("attn_ar", {o}, T);
    return vec(trace::OpKind::elementwise, "attn_residual", Part::attention_proj,
               {ar == kNone ? o : ar, x}, T * h, 1, 2);
  }

  trace::OpId dense_ffn(trace::OpId x) {
    const std::uint64_t T = tokens_of(group_), h = m_.hidden,
                        fl = m_.dense_ffn / std::uint64_t(s_.layout.tp);
    const DType w = s_.dtypes.weights;
    const auto n2 = vec(trace::OpKind::norm, "ffn_norm", Part::dense_ffn, {x}, T * h, T);
    const auto gu = gemm("ffn_gate_up", Part::dense_ffn, {n2}, T, h, 2 * fl, w);
    const auto act = vec(trace::OpKind::activation, "ffn_act", Part::dense_ffn, {gu}, T * fl);
    const auto dn = gemm("ffn_down", Part::dense_ffn, {act}, T, fl, h, w);
    const auto ar = tp_all_reduce("ffn_ar", {dn}, T);
    return vec(trace::OpKind::elementwise, "ffn_residual", Part::dense_ffn,
               {ar == kNone ? dn : ar, x}, T * h, 1, 2);
  }

  // The routed experts' GEMMs of `tokens` rows spread over `active` experts: one grouped GEMM
  // per projection, `active` weight matrices of ceil(tokens / active) rows each.
  trace::OpId expert_gemms(std::vector<trace::OpId> deps, std::uint64_t tokens,
                           std::uint64_t active, std::uint64_t width) {
    if (active == 0) return kNone;
    const std::uint64_t rows = ceil_div(tokens, active), h = m_.hidden;
    const DType w = s_.dtypes.weights;
    const auto gu = gemm("experts.gate_up", Part::experts, std::move(deps), rows, h, 2 * width, w,
                         active);
    const auto act = vec(trace::OpKind::activation, "experts.act", Part::experts, {gu},
                         active * rows * width);
    return gemm("experts.down", Part::experts, {act}, rows, width, h, w, active);
  }

  trace::OpId moe(trace::OpId x) {
    const auto& e = *m_.moe;
    const Layout& l = s_.layout;
    const std::uint64_t T = tokens_of(group_), h = m_.hidden, tp = std::uint64_t(l.tp);
    const std::uint64_t unit = h * act_bytes();
    trace::OpId n2 = kNone, topk = kNone, shared = kNone;
    if (T > 0) {
      n2 = vec(trace::OpKind::norm, "moe_norm", Part::router, {x}, T * h, T);
      const auto rt = gemm("router", Part::router, {n2}, T, h, e.experts, DType::bf16);
      const auto sm = vec(trace::OpKind::softmax, "router_softmax", Part::router, {rt},
                          T * e.experts, T);
      topk = vec(trace::OpKind::reduction, "router_topk", Part::router, {sm}, T * e.experts, 1,
                 T * e.top_k);
      if (e.shared_experts) {
        const std::uint64_t ws = e.shared_experts * e.shared_ffn.value_or(e.expert_ffn) / tp;
        const auto sgu = gemm("shared_gate_up", Part::shared_experts, {n2}, T, h, 2 * ws,
                              s_.dtypes.weights);
        const auto sact = vec(trace::OpKind::activation, "shared_act", Part::shared_experts,
                              {sgu}, T * ws);
        shared = gemm("shared_down", Part::shared_experts, {sact}, T, ws, h, s_.dtypes.weights);
      }
    }
    trace::OpId tail = kNone;
    if (l.ep == 1 || l.tp > 1) {
      // ep = 1: every expert on every rank of the group, each split over tp. ep = tp (expert
      // parallel inside the tensor-parallel group): every rank of the group has all its tokens
      // (after the attention's all-reduce) and holds experts [t x per, (t + 1) x per) whole,
      // t its place in the group; it runs the rows routed to them, and the all-reduce that
      // follows sums the experts' outputs of the group's ranks (no all-to-all).
      std::vector<std::uint64_t> count(e.experts, 0);
      route(s_, std::uint64_t(layer_), group_, T, [&count](std::uint64_t ex) { ++count[ex]; });
      std::uint64_t rows = T * e.top_k, width = e.expert_ffn / tp;
      auto from = count.begin(), to = count.end();
      if (l.ep > 1) {
        const auto per = e.experts / std::uint64_t(l.ep);
        const auto t = std::uint64_t((rank_->rank % n_) % l.tp);
        from = count.begin() + std::ptrdiff_t(t * per);
        to = from + std::ptrdiff_t(per);
        rows = std::accumulate(from, to, std::uint64_t(0));
        width = e.expert_ffn;
      }
      const auto active =
          std::uint64_t(std::count_if(from, to, [](std::uint64_t c) { return c > 0; }));
      if (T == 0) return x;
      const auto perm = vec(trace::OpKind::elementwise, "permute", Part::experts, {topk, n2},
                            T * e.top_k * h, 1, 1);
      const auto out = expert_gemms({perm}, rows, active, width);
      tail = vec(trace::OpKind::reduction, "unpermute", Part::experts,
                 {out == kNone ? perm : out, shared},
                 T * e.top_k * h, 1, T * h);
      const auto ar = tp_all_reduce("moe_ar", {tail}, T);
      if (ar != kNone) tail = ar;
    } else {
      // Expert parallel over the stage's dp ranks (tp = 1): rank `group_` holds experts
      // [group_ x per, (group_ + 1) x per).
      const auto ep = std::uint64_t(l.ep), per = e.experts / ep;
      const EpRouting& routing = ep_routing();
      const auto me = std::uint64_t(group_);
      std::vector<std::uint64_t> dispatch(ep, 0), combine(ep, 0), local(per, 0);
      for (std::uint64_t o = 0; o < ep; ++o) {
        dispatch[o] = routing.to_owner[me * ep + o] * unit;
        combine[o] = routing.to_owner[o * ep + me] * unit;
      }
      for (std::uint64_t i = 0; i < per; ++i) local[i] = routing.per_expert[me * per + i];
      const auto perm = T > 0 ? vec(trace::OpKind::elementwise, "permute", Part::experts,
                                    {topk, n2}, T * e.top_k * h, 1, 1)
                              : kNone;
      const auto disp = a2a("dispatch", {perm == kNone ? x : perm}, dispatch);
      std::uint64_t rows = 0, active = 0;
      for (auto c : local) rows += c, active += c > 0 ? 1 : 0;
      const auto out = expert_gemms({disp}, rows, active, e.expert_ffn);
      const auto comb = a2a("combine", {out == kNone ? disp : out}, combine);
      if (T == 0) return comb;
      tail = vec(trace::OpKind::reduction, "unpermute", Part::experts, {comb, shared},
                 T * e.top_k * h, 1, T * h);
    }
    return vec(trace::OpKind::elementwise, "moe_residual", Part::experts, {tail, x}, T * h, 1, 2);
  }

  // Expert parallelism: where the tokens of every data-parallel group of the stage go in the
  // current layer, drawn once per (pool, layer) for all the stage's ranks (each rank needs every
  // group's routes for its combine and its experts' rows).
  struct EpRouting {
    std::vector<std::uint64_t> to_owner;    // [group x ep + owner]: routes of the group's tokens
    std::vector<std::uint64_t> per_expert;  // [expert]: routes to the expert, over all groups
  };
  const EpRouting& ep_routing() {
    const auto& e = *m_.moe;
    const auto key = std::pair{pool_, layer_};
    if (const auto it = ep_routing_.find(key); it != ep_routing_.end()) return it->second;
    const auto ep = std::uint64_t(s_.layout.ep), per = e.experts / ep;
    EpRouting r;
    r.to_owner.assign(std::uint64_t(s_.layout.dp) * ep, 0);
    r.per_expert.assign(e.experts, 0);
    for (int g = 0; g < s_.layout.dp; ++g) {
      route(s_, std::uint64_t(layer_), g, tokens_of(g), [&](std::uint64_t ex) {
        ++r.to_owner[std::uint64_t(g) * ep + ex / per];
        ++r.per_expert[ex];
      });
    }
    return ep_routing_.emplace(key, std::move(r)).first->second;
  }

  // Fast-forward's series of each block of each layer of rank r (IterationSource::unit_key): a
  // hash of what
  // the replay compares when it asks whether a unit repeats another (replay::FastForward: kind,
  // group, peer, dtype, root, FLOPs, bytes, elements, dependencies), sizes on a grid of 10 %
  // steps, so that layers with the same shapes (an MoE layer's routing gives this rank the same
  // rows and all-to-all bytes) are one series and each is compared with the last layer before it
  // of its series rather than with the layer just before it.
  void layer_series(int r) {
    const auto& ops = src_.w_.ranks[std::size_t(r)].ops;
    const auto& blocks = src_.blocks_[std::size_t(r)];
    std::map<std::pair<std::int64_t, int>, std::uint64_t> h;
    auto q = [](double x) {
      return x <= 0 ? std::uint64_t(0) : std::uint64_t(1 + std::floor(std::log(x) / std::log(1.1)));
    };
    for (const auto& op : ops) {
      if (!op.layer) continue;
      const int block = blocks[op.id];
      std::uint64_t& x =
          h.try_emplace(std::pair{*op.layer, block}, 0x1a7e5ULL + std::uint64_t(block)).first->second;
      for (std::uint64_t v :
           {std::uint64_t(op.kind), std::hash<std::string>{}(op.group), std::uint64_t(op.peer),
            std::uint64_t(op.dtype), std::uint64_t(op.root), q(trace::op_flops(op)),
            q(trace::comm_bytes(op)), q(double(op.elements)), std::uint64_t(op.deps.size())}) {
        x = splitmix64(x ^ v);
      }
    }
    auto& series = src_.series_[std::size_t(r)];
    for (const auto& [at, x] : h) series.emplace(at, std::int64_t(x >> 1));
  }

  void build_rank(int r) {
    const Layout& l = s_.layout;
    rank_ = &src_.w_.ranks[std::size_t(r)];
    rank_->rank = r;
    parts_ = &src_.parts_[std::size_t(r)];
    blocks_ = &src_.blocks_[std::size_t(r)];
    work_ = &src_.work_[std::size_t(r)];
    pool_ = r / n_;
    const int lr = r % n_;
    stage_ = lr / l.stage_ranks();
    group_ = (lr % l.stage_ranks()) / l.tp;
    layer_ = -1;
    const std::uint64_t T = tokens_of(group_), h = m_.hidden;
    const auto tp = std::uint64_t(l.tp);
    trace::OpId x = kNone;
    const auto& rt = s_.runtime;
    if (rt.launch_s > 0) x = delay("runtime.launch", rt.launch_s, {x});
    if (rt.sync_s > 0) x = delay("runtime.sync", rt.sync_s, {x});
    if (rt.schedule_s > 0) x = delay("runtime.schedule", rt.schedule_s, {x});
    if (stage_ == 0) {
      if (T > 0) {
        // The embedding rows of the batch's tokens, gathered from HBM.
        trace::Op op;
        op.name = "embedding";
        op.kind = trace::OpKind::mem_load;
        op.bytes = T * h * act_bytes();
        x = add(std::move(op), Part::embedding, {x});
      }
    } else if (T > 0) {
      trace::Op op;
      op.name = "stage_in";
      op.kind = trace::OpKind::recv;
      op.peer = r - l.stage_ranks();
      op.bytes = T * h * act_bytes();
      x = add(std::move(op), Part::pipeline, {x});
    }
    const auto [first, last] = stage_layers(m_, l, stage_);
    if (s_.disaggregated && pool_ == 1 && group_ == 0 && src_.shape_.prefill_tokens > 0) {
      // The chunk's KV arrives layer by layer, beside this pool's own work.
      const double kv_tok = kv_bytes_per_token_layer_rank(m_, l, s_.dtypes.kv);
      trace::OpId prev = kNone;
      block_ = 0;
      for (std::uint64_t layer = first; layer < last; ++layer) {
        layer_ = int(layer);
        trace::Op op;
        op.name = nm("kv_recv");
        op.kind = trace::OpKind::recv;
        op.peer = r - n_;
        op.bytes = std::uint64_t(double(src_.shape_.prefill_tokens) * kv_tok);
        op.tag = layer_;
        prev = add(std::move(op), Part::kv_transfer, {prev});
      }
    }
    for (std::uint64_t layer = first; layer < last; ++layer) {
      layer_ = int(layer);
      if (T > 0) x = attention_block(x);
      block_ = 1;
      x = m_.is_moe(layer) ? moe(x) : (T > 0 ? dense_ffn(x) : x);
    }
    layer_ = -1;
    if (T == 0) return;
    if (stage_ + 1 < l.pp) {
      trace::Op op;
      op.name = "stage_out";
      op.kind = trace::OpKind::send;
      op.peer = r + l.stage_ranks();
      op.bytes = T * h * act_bytes();
      add(std::move(op), Part::pipeline, {x});
      return;
    }
    // Sampling: the last token of each sequence through the final norm and the LM head (its
    // vocabulary split over tp), softmax and top-k; tp ranks gather their candidates.
    const std::uint64_t S = decode_of(group_) + (prefill_of(group_) > 0 ? 1 : 0),
                        v = m_.vocab / tp;
    const auto fn = vec(trace::OpKind::norm, "final_norm", Part::sampling, {x}, S * h, S);
    const auto lm = gemm("lm_head", Part::sampling, {fn}, S, h, v, DType::bf16);
    const auto sm = vec(trace::OpKind::softmax, "sample_softmax", Part::sampling, {lm}, S * v, S);
    const auto tk = vec(trace::OpKind::reduction, "sample_topk", Part::sampling, {sm}, S * v, 1,
                        S * s_.sample_top_k);
    if (tp > 1) {
      collective(trace::OpKind::all_gather, "sample_gather", Part::sampling, {tk},
                 tp_group(stage_, group_), S * s_.sample_top_k * 8);
    }
  }

  static constexpr trace::OpId kNone = ~trace::OpId(0);
  IterationSource& src_;
  const IterationSpec& s_;
  const ModelParams& m_;
  trace::RankTrace* rank_ = nullptr;
  std::vector<Part>* parts_ = nullptr;
  std::vector<std::uint8_t>* blocks_ = nullptr;
  std::uint8_t block_ = 0;  // the fast-forward block of the ops being added (unit_key)
  RankWork* work_ = nullptr;
  int n_ = 1;  // ranks of a pool
  int stage_ = 0, group_ = 0, layer_ = -1, pool_ = 0;
  std::map<std::pair<int, int>, EpRouting> ep_routing_;  // by (pool, layer)
};

namespace {

// The smallest bucket that holds `n` (n itself without buckets, 0 for 0); InputError naming
// `option` when none does.
std::uint64_t bucket(std::uint64_t n, const std::vector<std::uint64_t>& buckets,
                     const char* option, const char* what) {
  if (buckets.empty() || n == 0) return n;
  for (auto b : buckets) {
    if (b >= n) return b;
  }
  throw InputError(fmt::format("{}: {} {} is above the largest compiled bucket ({})", option,
                               what, n, buckets.back()));
}

}  // namespace

IterationShape iteration_shape(const IterationSpec& spec) {
  check_layout(spec.model, spec.layout);
  if (spec.decode_seqs == 0 && spec.prefill_tokens == 0) {
    throw InputError("--batch and --prefill-tokens: an iteration needs at least one token");
  }
  if (spec.decode_seqs > 0 && spec.context == 0) {
    throw InputError("--context: decode tokens need a context of at least 1");
  }
  for (const auto* b : {&spec.batch_buckets, &spec.seq_buckets}) {
    if (!std::is_sorted(b->begin(), b->end()) || (!b->empty() && b->front() == 0)) {
      throw InputError(fmt::format("--{}: expected increasing sizes of at least 1",
                                   b == &spec.batch_buckets ? "batch-buckets" : "seq-buckets"));
    }
  }
  // Each data-parallel group runs its own compiled graph: its batch is padded to a batch
  // bucket, the decode context and the prefill chunk to sequence buckets.
  IterationShape shape;
  const auto dp = std::uint64_t(spec.layout.dp);
  for (std::uint64_t g = 0; g < dp; ++g) {
    const std::uint64_t exact = spec.decode_seqs / dp + (g < spec.decode_seqs % dp ? 1 : 0);
    shape.decode.push_back(bucket(exact, spec.batch_buckets, "--batch-buckets", "batch"));
  }
  shape.context = spec.decode_seqs > 0
                      ? bucket(spec.context, spec.seq_buckets, "--seq-buckets", "context")
                      : spec.context;
  shape.prefill_tokens =
      bucket(spec.prefill_tokens, spec.seq_buckets, "--seq-buckets", "prefill chunk");
  return shape;
}

IterationSource::IterationSource(const IterationSpec& spec)
    : spec_(spec), shape_(iteration_shape(spec)) {
  IterationBuilder(*this).build();
}

// Each distinct compute and memory op once, at its first place in rank order: the calibration
// keeps the first op of a shape (and of a size grid) and ignores the other kinds, so what it
// calibrates is what visiting every op gives, without a grid key formatted for each of the
// 200,000 ops of a rack-wide MoE iteration.
void IterationSource::calibration_ops(const replay::OpVisitor& visit) const {
  // Found once: the run's op calibration and its flow calibration both ask.
  if (!distinct_ops_) {
    using Key = std::tuple<trace::OpKind, DType, std::uint64_t, std::uint64_t, std::uint64_t,
                           std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                           std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                           std::uint64_t, std::uint64_t, bool>;
    struct KeyHash {
      std::size_t operator()(const Key& k) const {
        std::uint64_t h = 0;
        std::apply([&h](const auto&... f) { ((h = splitmix64(h ^ std::uint64_t(f))), ...); }, k);
        return std::size_t(h);
      }
    };
    std::unordered_set<Key, KeyHash> seen;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ops;  // (rank, op)
    for (std::size_t rank = 0; rank < w_.ranks.size(); ++rank) {
      for (std::size_t i = 0; i < w_.ranks[rank].ops.size(); ++i) {
        const trace::Op& op = w_.ranks[rank].ops[i];
        if (!trace::is_compute(op.kind) && op.kind != trace::OpKind::mem_load &&
            op.kind != trace::OpKind::mem_store) {
          continue;
        }
        // The builder sets no producer-recorded flops or tensor_bytes (which the key leaves out).
        if (seen.emplace(op.kind, op.dtype, op.m, op.k, op.n, op.batch, op.elements, op.inputs,
                         op.outputs, op.rows, op.heads, op.seq_q, op.seq_kv, op.head_dim, op.bytes,
                         op.causal)
                .second) {
          ops.emplace_back(std::uint32_t(rank), std::uint32_t(i));
        }
      }
    }
    distinct_ops_ = std::move(ops);
  }
  for (const auto& [rank, i] : *distinct_ops_) visit(w_.ranks[rank].rank, w_.ranks[rank].ops[i]);
}

IterationDriver::IterationDriver(IterationSource& source) : source_(source) {}
IterationDriver::~IterationDriver() = default;

std::string IterationDriver::name() const { return source_.workload().name; }

void IterationDriver::plan(const run::Setup& s) {
  const auto& w = source_.workload();
  place(resolve::place_ranks(s.plan.placement, w.num_ranks(), s.plan.topology.chip_count()), w);
  const run::EventUnits units{s.models.network->capabilities.events_per_packet,
                              s.models.compute->capabilities.events_per_instruction};
  run::check_estimate(run::estimate_work(w, s.plan, s.loaded.config.replay, units),
                      s.loaded.config.sim, fmt::format("iteration {}", name()));
}

void IterationDriver::elaborate(const run::Setup& s, replay::Machine& machine) {
  start_replay(s, machine, source_);
}

void IterationDriver::collect(run::RunData& d) const {
  d.workload = &source_.workload();
  collect_replay(d);
}

}  // namespace trnsim::infer
