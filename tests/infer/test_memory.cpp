// SPDX-License-Identifier: MIT
// Models as data, KV bytes per token, weights per rank, KV capacity and the paged allocator, all
// against values worked out by hand (docs/inference.md shows the arithmetic).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "../common/files.hpp"

#include "trnsim/error.hpp"
#include "trnsim/infer/memory.hpp"
#include "trnsim/infer/model.hpp"

using namespace trnsim;
using namespace trnsim::infer;

namespace {

ModelParams model(const std::string& name) {
  return load_model(std::string(TRNSIM_SOURCE_DIR) + "/configs/models/" + name + ".json");
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (trnsim::test::fresh_dir("infer-memory", name) / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& path) {
  try {
    load_model(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

constexpr double kTrn2Hbm = 4.0 * 24 * 1024 * 1024 * 1024;  // 4 stacks x 24 GiB

}  // namespace

TEST(InferModel, EveryBundledModelLoads) {
  for (const char* n : {"deepseek-v3", "qwen3-235b-a22b", "qwen3-30b-a3b", "llama-4-maverick",
                        "llama-3.1-8b", "llama-3.1-70b"}) {
    EXPECT_EQ(model(n).name, n);
  }
}

// Llama 3.1 8B: embedding and LM head 2 x 128256 x 4096 = 1,050,673,152, final norm 4096; a
// layer: q and o 2 x 4096^2, k and v 2 x 4096 x 1024, FFN 3 x 4096 x 14336, two norms:
// 218,112,000; x 32 = 6,979,584,000. Total 8,030,261,248: the published parameter count.
TEST(InferModel, Llama8bParameterCountIsThePublishedOne) {
  const auto m = model("llama-3.1-8b");
  EXPECT_EQ(m.total_params(), 8'030'261'248ULL);
  EXPECT_EQ(m.active_params(), m.total_params());
}

// DeepSeek-V3: 671B total and 37B active per token (the technical report's figures, without
// the MTP module).
TEST(InferModel, DeepSeekV3CountsAreThePublishedOnes) {
  const auto m = model("deepseek-v3");
  EXPECT_NEAR(double(m.total_params()) / 1e9, 671.0, 1.0);
  EXPECT_NEAR(double(m.active_params()) / 1e9, 37.0, 1.0);
  EXPECT_FALSE(m.is_moe(2));
  EXPECT_TRUE(m.is_moe(3));
}

// Llama 4 Maverick: MoE on layers 1, 3, 5, ... (interleave_moe_layer_step 2).
TEST(InferModel, MaverickInterleavesMoeLayers) {
  const auto m = model("llama-4-maverick");
  EXPECT_FALSE(m.is_moe(0));
  EXPECT_TRUE(m.is_moe(1));
  EXPECT_FALSE(m.is_moe(46));
  EXPECT_TRUE(m.is_moe(47));
}

TEST(InferModel, BadInputNamesFileAndPointer) {
  const auto unknown = write_temp("m1.json", R"({"name": "x", "layers": 2, "hidden": 8, "vocab": 8,
      "dense_ffn": 8, "attention": {"type": "gqa", "heads": 2, "kv_heads": 1, "head_dims": 4}})");
  EXPECT_NE(error_of(unknown).find(unknown + ":/attention/head_dims: unknown key"),
            std::string::npos)
      << error_of(unknown);
  const auto missing = write_temp("m2.json", R"({"name": "x", "layers": 2, "hidden": 8,
      "vocab": 8, "dense_ffn": 8, "attention": {"type": "mla", "heads": 2}})");
  EXPECT_NE(error_of(missing).find(missing + ":/attention/q_lora_rank: mla attention needs"),
            std::string::npos)
      << error_of(missing);
  const auto topk = write_temp("m3.json", R"({"name": "x", "layers": 2, "hidden": 8, "vocab": 8,
      "dense_ffn": 8, "attention": {"type": "gqa", "heads": 2, "kv_heads": 1, "head_dim": 4},
      "moe": {"experts": 4, "top_k": 5, "expert_ffn": 8}})");
  EXPECT_NE(error_of(topk).find(topk + ":/moe/top_k: expected at most experts (4), got 5"),
            std::string::npos)
      << error_of(topk);
  const auto type = write_temp("m4.json", R"({"name": "x", "layers": "two", "hidden": 8,
      "vocab": 8, "dense_ffn": 8, "attention": {"type": "gqa", "heads": 2, "kv_heads": 1,
      "head_dim": 4}})");
  EXPECT_NE(error_of(type).find(type + ":/layers: expected"), std::string::npos) << error_of(type);
}

// MLA caches the 512-wide latent and 64 rope dims: 576 x 2 B = 1152 B per token and layer in
// BF16, 576 B in FP8; every rank of a TP group holds all of it.
TEST(InferKv, MlaBytesPerTokenByHand) {
  const auto m = model("deepseek-v3");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer(m, DType::bf16), 1152.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer(m, DType::fp8), 576.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer_rank(m, Layout{.tp = 8}, DType::bf16), 1152.0);
}

// GQA caches K and V per KV head: Llama 3.1 8B 2 x 8 x 128 x 2 B = 4096 B (BF16), 2048 B (FP8);
// TP 4 keeps 2 KV heads per rank (1024 B), TP 16 replicates one per rank (512 B).
TEST(InferKv, GqaBytesPerTokenByHand) {
  const auto m = model("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer(m, DType::bf16), 4096.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer(m, DType::fp8), 2048.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer_rank(m, Layout{.tp = 4}, DType::bf16), 1024.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer_rank(m, Layout{.tp = 16}, DType::bf16), 512.0);
  // Qwen3-235B: 2 x 4 x 128 x 2 B.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_layer(model("qwen3-235b-a22b"), DType::bf16), 2048.0);
}

TEST(InferWeights, UnshardedBf16IsTwoBytesPerParameter) {
  const auto m = model("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(weight_bytes_rank(m, Layout{}, ServingDtypes{}, 0).total(),
                   2.0 * 8'030'261'248.0);
  // FP8 linear layers: the 6,979,584,000 - 32 x 8192 linear parameters take 1 B, the rest
  // (embeddings 1,050,673,152, norms 32 x 8192 + 4096) 2 B.
  const double linear = 6'979'584'000.0 - 32 * 8192.0;
  const double rest = 1'050'673'152.0 + 32 * 8192.0 + 4096.0;
  EXPECT_DOUBLE_EQ(
      weight_bytes_rank(m, Layout{}, ServingDtypes{.weights = DType::fp8}, 0).total(),
      linear + 2 * rest);
}

// Llama 3.1 8B, BF16, one Trn2 chip (96 GiB), batch of 1 token: weights 16,060,522,496 B;
// activations 2 x (4 x 4096 + 2 x 14336) x 2 B + 128256 x 4 B of logits = 693,248 B; reserve
// 10 % = 10,307,921,510.4 B; left 76,710,077,849.6 B; 32 layers x 4096 B = 131,072 B per token,
// 16-token blocks of 2 MiB: 36,578 blocks, 585,248 tokens.
TEST(InferCapacity, Llama8bOnOneTrn2ChipByHand) {
  const auto m = model("llama-3.1-8b");
  CapacityOptions o;
  o.hbm_bytes = kTrn2Hbm;
  o.max_tokens = 1;
  o.max_sequences = 1;
  const auto c = kv_capacity(m, Layout{}, ServingDtypes{}, o);
  EXPECT_DOUBLE_EQ(c.weights, 16'060'522'496.0);
  EXPECT_DOUBLE_EQ(c.activations, 693'248.0);
  EXPECT_DOUBLE_EQ(c.kv_bytes_per_token, 131'072.0);
  EXPECT_EQ(c.blocks_per_chip, 36'578u);
  EXPECT_EQ(c.tokens_per_chip, 585'248u);
  EXPECT_EQ(c.tokens_per_replica, 585'248u);
  EXPECT_NO_THROW(check_fits(m, Layout{}, c, "trn2"));
}

// DeepSeek-V3's 1.3 TB of BF16 weights cannot sit on one 96 GiB chip: refused, naming the model,
// the layout and the bytes.
TEST(InferCapacity, RefusesLayoutWhoseWeightsDoNotFit) {
  const auto m = model("deepseek-v3");
  CapacityOptions o;
  o.hbm_bytes = kTrn2Hbm;
  const auto c = kv_capacity(m, Layout{}, ServingDtypes{}, o);
  EXPECT_GT(c.weights, 1.3e12);
  try {
    check_fits(m, Layout{}, c, "trn2");
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model deepseek-v3 with layout tp=1,dp=1,ep=1,pp=1"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("GB of weights"), std::string::npos) << msg;
  }
  // Spread over 64 ranks, expert-parallel with data-parallel attention, in FP8, it fits.
  const Layout ep64{.tp = 1, .dp = 64, .ep = 64, .pp = 1};
  const auto fits = kv_capacity(m, ep64, ServingDtypes{.weights = DType::fp8}, o);
  EXPECT_NO_THROW(check_fits(m, ep64, fits, "trn2"));
  EXPECT_EQ(fits.tokens_per_replica, fits.tokens_per_chip * 64);
}

TEST(InferLayout, ParsesAndRefuses) {
  const auto l = parse_layout("tp=4,pp=2");
  EXPECT_EQ(l.tp, 4);
  EXPECT_EQ(l.pp, 2);
  EXPECT_EQ(l.ranks(), 8);
  EXPECT_THROW(parse_layout("tp=x"), InputError);
  EXPECT_THROW(parse_layout("xp=2"), InputError);
  EXPECT_THROW(check_layout(model("llama-3.1-8b"), parse_layout("tp=3")), InputError);
  EXPECT_THROW(check_layout(model("llama-3.1-8b"), parse_layout("ep=2,dp=2")), InputError);
  EXPECT_NO_THROW(check_layout(model("deepseek-v3"), parse_layout("dp=16,ep=16")));
}

TEST(InferBlocks, PagedAllocatorByHand) {
  BlockAllocator a(10, 16);
  EXPECT_TRUE(a.reserve(1, 17));  // 2 blocks
  EXPECT_EQ(a.blocks_of(1), 2u);
  EXPECT_TRUE(a.reserve(2, 128));  // 8 blocks
  EXPECT_EQ(a.free_blocks(), 0u);
  EXPECT_FALSE(a.reserve(3, 1));
  EXPECT_TRUE(a.reserve(1, 32));  // still 2 blocks
  EXPECT_FALSE(a.reserve(1, 33));
  EXPECT_EQ(a.blocks_of(1), 2u);
  a.release(2);
  EXPECT_EQ(a.free_blocks(), 8u);
  EXPECT_TRUE(a.reserve(1, 33));
  EXPECT_EQ(a.used_blocks(), 3u);
}
