// SPDX-License-Identifier: MIT
// The iteration generator's ops and what they must move (hand-computed), and `trnsim bench
// iteration` end to end: a batch-1 decode on one chip is no faster than its weights over the
// HBM bandwidth, the same seed gives the same time, a layout that does not fit exits 2.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include <string>

#include "../common/run_trnsim.hpp"
#include "trnsim/error.hpp"
#include "trnsim/infer/iteration.hpp"

using namespace trnsim;
using namespace trnsim::infer;

namespace {

ModelParams load(const std::string& name) {
  return load_model(std::string(TRNSIM_SOURCE_DIR) + "/configs/models/" + name + ".json");
}

std::size_t count(const trace::RankTrace& r, trace::OpKind k) {
  std::size_t n = 0;
  for (const auto& op : r.ops) n += op.kind == k ? 1 : 0;
  return n;
}

nlohmann::json bench(const std::string& args) {
  const auto r = test::run_trnsim("bench iteration --json " + args, false);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

// DeepSeek-V3 in FP8 on 8 data-parallel, expert-parallel ranks with 6 decodes: ranks 6 and 7
// have no sequence of their own.
IterationSpec deepseek_ep8_two_idle() {
  IterationSpec s;
  s.model = load("deepseek-v3");
  s.layout = Layout{.tp = 1, .dp = 8, .ep = 8};
  s.decode_seqs = 6;
  s.dtypes.weights = DType::fp8;
  return s;
}

}  // namespace

// Llama 3.1 8B, batch 1, context 1024, BF16, one rank. Weights its GEMMs read: per layer qkv
// 4096 x 6144, o 4096^2, gate/up 4096 x 28672, down 14336 x 4096 = 218,103,808 parameters,
// x 32; the LM head 4096 x 128256; 2 B each: 15,009,316,864 B (the embedding table is gathered
// by rows, not read). KV read: 32 layers x 1024 tokens x 4096 B = 134,217,728 B.
TEST(InferIteration, Llama8bDecodeReadsItsWeightsAndKvByHand) {
  IterationSpec s;
  s.model = load("llama-3.1-8b");
  const IterationSource src(s);
  EXPECT_EQ(src.num_ranks(), 1);
  EXPECT_DOUBLE_EQ(src.work(0).weight_bytes, 15'009'316'864.0);
  EXPECT_DOUBLE_EQ(src.work(0).kv_read_bytes, 134'217'728.0);
  EXPECT_DOUBLE_EQ(src.work(0).kv_write_bytes, 32 * 4096.0);
  const auto& ops = src.workload().ranks[0];
  EXPECT_EQ(count(ops, trace::OpKind::attention), 32u);
  EXPECT_EQ(count(ops, trace::OpKind::all_reduce), 0u);
  EXPECT_EQ(count(ops, trace::OpKind::delay), 2u);  // launch and sync
}

// TP 8: two all-reduces per layer and the sampling gather; each rank reads an eighth of the
// split weights.
TEST(InferIteration, TensorParallelAddsCollectives) {
  IterationSpec s;
  s.model = load("llama-3.1-70b");
  s.layout = Layout{.tp = 8};
  s.decode_seqs = 4;
  const IterationSource src(s);
  EXPECT_EQ(src.num_ranks(), 8);
  const auto& ops = src.workload().ranks[3];
  EXPECT_EQ(count(ops, trace::OpKind::all_reduce), 2u * 80);
  EXPECT_EQ(count(ops, trace::OpKind::all_gather), 1u);
  EXPECT_EQ(src.groups().at("tp.s0.g0").size(), 8u);
}

// DeepSeek-V3, expert parallel over 8 data-parallel ranks: a dispatch and a combine per MoE
// layer (58) on every rank, even one with no sequence of its own; the tokens each rank sends
// are the tokens the others receive.
TEST(InferIteration, ExpertParallelDispatchAndCombineBalance) {
  const IterationSource src(deepseek_ep8_two_idle());
  std::uint64_t sent = 0, received = 0;
  for (int r = 0; r < 8; ++r) {
    const auto& ops = src.workload().ranks[std::size_t(r)];
    EXPECT_EQ(count(ops, trace::OpKind::all_to_all_v), 2u * 58) << r;
    for (const auto& op : ops.ops) {
      if (op.kind != trace::OpKind::all_to_all_v || op.layer != 3) continue;
      for (auto b : op.send_bytes) (op.name.ends_with("dispatch") ? sent : received) += b;
    }
  }
  // 6 tokens x top-8 x 7168 x 2 B dispatched in layer 3, and as many combined.
  EXPECT_EQ(sent, 6u * 8 * 7168 * 2);
  EXPECT_EQ(received, sent);
  EXPECT_EQ(count(src.workload().ranks[7], trace::OpKind::attention), 0u);
}

// A rank with no sequence of its own still runs the MoE layers in order: its dispatch of a
// layer waits for its combine of the layer before (the first MoE layer's for the runtime's
// launch and sync), as a busy rank's waits for its attention. Without that dependency an idle
// rank posted all 58 dispatches at once, so fast-forward found the previous unit of its series
// unfinished and simulated nearly all of its layers.
TEST(InferIteration, IdleRanksDispatchAfterTheLayerBefore) {
  const IterationSource src(deepseek_ep8_two_idle());
  const auto& ops = src.workload().ranks[7].ops;
  std::map<std::string, trace::OpId> id;
  for (const auto& op : ops) id[op.name] = op.id;
  int dispatches = 0;
  for (const auto& op : ops) {
    if (!op.name.ends_with("dispatch")) continue;
    ++dispatches;
    ASSERT_TRUE(op.layer.has_value());
    const std::string before =
        *op.layer == 3 ? std::string("runtime.sync") : fmt::format("l{}.combine", *op.layer - 1);
    ASSERT_TRUE(id.count(before)) << before;
    EXPECT_EQ(op.deps, std::vector<trace::OpId>{id[before]}) << op.name;
  }
  EXPECT_EQ(dispatches, 58);
}

TEST(InferIteration, SameSeedSameOpsOtherSeedOtherRouting) {
  IterationSpec s;
  s.model = load("qwen3-30b-a3b");
  s.decode_seqs = 16;
  const IterationSource a(s), b(s);
  EXPECT_DOUBLE_EQ(a.work(0).weight_bytes, b.work(0).weight_bytes);
  s.seed = 2;
  const IterationSource c(s);
  EXPECT_NE(a.work(0).weight_bytes, c.work(0).weight_bytes);  // other experts active
}

// Fast-forward's units: the attention blocks of a rank are one series (they repeat one
// another exactly), its dense FFNs another; an MoE block's series is its shape, so two MoE
// blocks of a rank share a series exactly when their expert rows and combine bytes agree
// (within the 10 % grid: here they are integers of tokens, equal or not).
TEST(InferIteration, FastForwardSeriesFollowTheBlocksShapes) {
  IterationSpec s;
  s.model = load("deepseek-v3");
  s.layout = Layout{.tp = 1, .dp = 8, .ep = 8};
  s.decode_seqs = 8;
  s.dtypes.weights = DType::fp8;
  const IterationSource src(s);
  for (int r : {0, 5}) {
    const auto& ops = src.workload().ranks[std::size_t(r)].ops;
    std::map<int, std::int64_t> attn, ffn, experts;
    std::map<int, std::pair<std::uint64_t, std::uint64_t>> moe_shape;  // rows x experts, combine
    for (const auto& op : ops) {
      const auto key = src.unit_key(r, op);
      ASSERT_EQ(key.has_value(), op.layer.has_value()) << op.name;
      if (!key) continue;
      EXPECT_EQ(key->position, *op.layer);
      const int block = src.block(r, op.id);
      auto& m = block == 0 ? attn : block == 1 ? ffn : experts;
      const auto [it, fresh] = m.emplace(*op.layer, key->series);
      if (!fresh) {
        EXPECT_EQ(it->second, key->series) << op.name;  // one key per block
      }
      if (op.name.ends_with("experts.gate_up")) moe_shape[*op.layer].first = op.m * op.batch;
      if (op.name.ends_with("combine")) {
        for (auto b : op.send_bytes) moe_shape[*op.layer].second += b;
      }
    }
    ASSERT_EQ(attn.size(), 61u);
    ASSERT_EQ(ffn.size(), 61u);
    EXPECT_TRUE(experts.empty());
    for (const auto& [l, series] : attn) EXPECT_EQ(series, attn.at(0)) << l;
    EXPECT_EQ(ffn.at(1), ffn.at(0));
    EXPECT_EQ(ffn.at(2), ffn.at(0));
    EXPECT_NE(ffn.at(3), ffn.at(0));
    int same = 0;
    for (int a = 3; a < 61; ++a) {
      for (int b = a + 1; b < 61; ++b) {
        const bool equal_shape = moe_shape.at(a) == moe_shape.at(b);
        EXPECT_EQ(ffn.at(a) == ffn.at(b), equal_shape) << a << " " << b;
        same += equal_shape ? 1 : 0;
      }
    }
    EXPECT_GT(same, 0);  // some MoE blocks repeat one another
  }
}

// Expert parallelism inside a TP group (ep = tp): Qwen3-30B-A3B, tp=4, ep=4: each rank holds 32
// of the 128 experts whole (n = 2 x 768) and runs the rows routed to them; the experts the 4
// ranks run in a layer are the experts the same batch activates on one rank (the routing is
// the group's, the same seed), and the all-reduce after the MoE combines them (no all-to-all).
TEST(InferIteration, ExpertParallelInsideTensorParallelGroups) {
  IterationSpec s;
  s.model = load("qwen3-30b-a3b");
  s.decode_seqs = 16;
  const IterationSource one(s);
  s.layout = Layout{.tp = 4, .ep = 4};
  const IterationSource four(s);
  ASSERT_EQ(four.num_ranks(), 4);
  auto experts_in_layer = [](const trace::RankTrace& r, int layer, std::uint64_t* n) {
    for (const auto& op : r.ops) {
      if (op.layer == layer && op.name.ends_with("experts.gate_up")) {
        if (n) *n = op.n;
        return op.batch;
      }
    }
    return std::uint64_t(0);
  };
  for (int layer : {0, 17, 47}) {
    std::uint64_t total = 0;
    for (int r = 0; r < 4; ++r) {
      std::uint64_t n = 0;
      const std::uint64_t active = experts_in_layer(four.workload().ranks[std::size_t(r)], layer, &n);
      EXPECT_LE(active, 32u);
      if (active > 0) {
        EXPECT_EQ(n, 2u * 768);
      }
      total += active;
    }
    EXPECT_EQ(total, experts_in_layer(one.workload().ranks[0], layer, nullptr)) << layer;
  }
  const auto& r2 = four.workload().ranks[2];
  EXPECT_EQ(count(r2, trace::OpKind::all_to_all_v), 0u);
  EXPECT_EQ(count(r2, trace::OpKind::all_reduce), 2u * 48);  // attention and MoE, per layer
  s.layout = Layout{.tp = 2, .ep = 4};
  EXPECT_THROW(IterationSource{s}, InputError);
}

TEST(InferIteration, RefusesAnEmptyBatch) {
  IterationSpec s;
  s.model = load("llama-3.1-8b");
  s.decode_seqs = 0;
  EXPECT_THROW(IterationSource{s}, InputError);
}

// A batch-1 decode on one Trn2 chip takes at least its bytes over the 2.9 TB/s HBM: the bound
// is (15,009,316,864 + 134,217,728 + 131,072) B / 2.9e12 B/s = 5,221.95 us.
TEST(InferIterationCli, Batch1DecodeIsBoundedByWeightBytesOverHbm) {
  const auto j = bench("--config configs/racks/trn2-ultraserver.json --model llama-3.1-8b "
                       "--batch 1 --context 1024");
  const double bound_ns = (15'009'316'864.0 + 134'217'728.0 + 131'072.0) / 2.9e12 * 1e9;
  EXPECT_NEAR(j["bounds"]["memory_ns"].get<double>(), bound_ns, 1e-6 * bound_ns);
  EXPECT_GE(j["time_ns"].get<double>(), bound_ns);
  EXPECT_EQ(j["bound_limit"], "memory");
  EXPECT_GT(j["breakdown_ns"]["dense_ffn"].get<double>(), 0);
}

TEST(InferIterationCli, DeterministicForASeed) {
  const std::string args = "--config configs/racks/trn2-ultraserver.json --model qwen3-30b-a3b "
                           "--layout tp=4 --batch 8 --context 2048 --prefill-tokens 128 --seed 7";
  const auto a = bench(args), b = bench(args);
  EXPECT_EQ(a["time_ns"], b["time_ns"]);
  EXPECT_EQ(a["breakdown_ns"], b["breakdown_ns"]);
}

TEST(InferIterationCli, RefusedLayoutExitsTwoNamingModelLayoutAndBytes) {
  const auto r = test::run_trnsim(
      "bench iteration --config configs/racks/trn2-ultraserver.json --model deepseek-v3 "
      "--layout tp=1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model deepseek-v3 with layout tp=1,dp=1,ep=1,pp=1"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("GB of weights"), std::string::npos) << r.out;
  const auto bad = test::run_trnsim("bench iteration --model llama-3.1-8b --layout tp=3");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--layout: tp=3 does not divide"), std::string::npos) << bad.out;
}

// Compiled shapes: batch 3 at context 1000 runs at the buckets 4 and 1024. KV read: 32 layers x
// 4 x 1024 x 4096 B = 536,870,912 B (exact: 32 x 3 x 1000 x 4096 = 393,216,000); the QKV GEMM
// has 4 rows; a context beyond the largest bucket is refused.
TEST(InferIteration, BucketPaddingByHand) {
  IterationSpec s;
  s.model = load("llama-3.1-8b");
  s.decode_seqs = 3;
  s.context = 1000;
  const IterationSource exact(s);
  EXPECT_DOUBLE_EQ(exact.work(0).kv_read_bytes, 393'216'000.0);
  s.batch_buckets = {1, 2, 4, 8};
  s.seq_buckets = {512, 1024, 2048};
  const IterationSource padded(s);
  EXPECT_EQ(padded.shape().decode, std::vector<std::uint64_t>{4});
  EXPECT_EQ(padded.shape().context, 1024u);
  EXPECT_DOUBLE_EQ(padded.work(0).kv_read_bytes, 536'870'912.0);
  EXPECT_DOUBLE_EQ(padded.work(0).weight_bytes, exact.work(0).weight_bytes);
  for (const auto& op : padded.workload().ranks[0].ops) {
    if (op.name == "l0.qkv") {
      EXPECT_EQ(op.m, 4u);
    }
  }
  // Padded rows cost 4/3 of the exact GEMM FLOPs of the layers.
  EXPECT_GT(padded.work(0).flops[std::size_t(DType::bf16)],
            exact.work(0).flops[std::size_t(DType::bf16)] * 1.3);
  s.context = 4096;
  EXPECT_THROW(IterationSource{s}, InputError);
}

// A decode run of 40 steps from context 1000 with sequence buckets 1024 and 2048: steps at
// contexts 1000..1024 (25) run at bucket 1024, 1025..1039 (15) at 2048; two shapes simulated,
// reuse 1 - 2/40 = 95 %, total 25 x t(1024) + 15 x t(2048).
TEST(InferIterationCli, DecodeRunSimulatesEachBucketOnce) {
  const std::string base = "--config configs/racks/trn2-ultraserver.json --model llama-3.1-8b "
                           "--batch 2 --seq-buckets 1024,2048 ";
  const auto run = bench(base + "--context 1000 --decode-steps 40");
  const auto& d = run["decode_run"];
  EXPECT_EQ(d["steps"], 40);
  EXPECT_EQ(d["shapes_simulated"], 2);
  EXPECT_DOUBLE_EQ(d["reuse_rate"].get<double>(), 0.95);
  const double t1 = bench(base + "--context 1024")["time_ns"].get<double>();
  const double t2 = bench(base + "--context 1025")["time_ns"].get<double>();
  EXPECT_GT(t2, t1);  // twice the keys read
  EXPECT_DOUBLE_EQ(d["total_time_ns"].get<double>(), 25 * t1 + 15 * t2);
  EXPECT_EQ(test::run_trnsim("bench iteration --model llama-3.1-8b --decode-steps 4 "
                             "--prefill-tokens 16").code,
            2);
}

// --capacity: no simulation. DeepSeek-V3 with an FP8 KV cache: 61 layers x 576 B = 35,136 B per
// token on every rank; 64 data-parallel groups hold 64 times a chip's tokens.
TEST(InferIterationCli, CapacityOnlyByHand) {
  const auto j = bench("--capacity --model deepseek-v3 --layout dp=64,ep=64 --weights-dtype fp8 "
                       "--kv-dtype fp8");
  EXPECT_FALSE(j.contains("time_ns"));
  const auto& c = j["capacity"];
  EXPECT_DOUBLE_EQ(c["kv_bytes_per_token"].get<double>(), 35136.0);
  EXPECT_EQ(c["kv_tokens_per_replica"].get<std::uint64_t>(),
            64 * c["kv_tokens_per_chip"].get<std::uint64_t>());
  EXPECT_EQ(c["kv_tokens_per_chip"].get<std::uint64_t>() % 16, 0u);
}

// Disaggregated, Llama 3.1 8B, TP 1: rank 0 prefills 512 tokens and sends each of the 32 layers'
// KV, 512 x 4096 B = 2,097,152 B, to rank 1, which decodes 4 sequences meanwhile: 67,108,864 B.
TEST(InferIteration, DisaggregatedKvTransferByHand) {
  IterationSpec s;
  s.model = load("llama-3.1-8b");
  s.decode_seqs = 4;
  s.prefill_tokens = 512;
  s.disaggregated = true;
  const IterationSource src(s);
  ASSERT_EQ(src.num_ranks(), 2);
  EXPECT_DOUBLE_EQ(src.work(0).kv_sent_bytes, 67'108'864.0);
  const auto& prefill = src.workload().ranks[0].ops;
  const auto& decode = src.workload().ranks[1].ops;
  EXPECT_EQ(count(src.workload().ranks[0], trace::OpKind::send), 32u);
  EXPECT_EQ(count(src.workload().ranks[1], trace::OpKind::recv), 32u);
  for (const auto& op : prefill) {
    EXPECT_NE(op.name, "l0.attn.decode");
    if (op.kind == trace::OpKind::send) {
      EXPECT_EQ(op.peer, 1);
      EXPECT_EQ(op.bytes, 2'097'152u);
    }
  }
  for (const auto& op : decode) {
    EXPECT_NE(op.name, "l0.attn.prefill");
    if (op.kind == trace::OpKind::recv) {
      EXPECT_EQ(op.peer, 0);
    }
  }
}

// The same on the Trn2 UltraServer: the bytes, the chips they go between (rank r on chip r) and
// the fabric carrying at least them.
TEST(InferIterationCli, DisaggregatedTransferBytesAndRoute) {
  const auto j = bench("--config configs/racks/trn2-ultraserver.json --model llama-3.1-8b "
                       "--batch 4 --context 1024 --prefill-tokens 512 --disaggregate");
  const auto& k = j["kv_transfer"];
  EXPECT_DOUBLE_EQ(k["bytes"].get<double>(), 67'108'864.0);
  ASSERT_EQ(k["pairs"].size(), 1u);
  EXPECT_EQ(k["pairs"][0]["from_chip"], 0);
  EXPECT_EQ(k["pairs"][0]["to_chip"], 1);
  EXPECT_GE(k["network_bytes"].get<double>(), 67'108'864.0);
  EXPECT_GT(j["breakdown_ns"]["kv_transfer"].get<double>(), 0);
  EXPECT_EQ(test::run_trnsim("bench iteration --model llama-3.1-8b --disaggregate").code, 2);
}

// Interpolation over batch: batch 9 lies between the grid's batch sizes 8 and 10 (1 to 4, then
// 4 x {1, 1.25, 1.5, 1.75} x 2^k), so one step at context 1024 (a grid point) simulates those two
// and is timed halfway: (t(8) + t(10)) / 2; the held-back step is batch 9 simulated exactly.
TEST(InferIterationCli, InterpolatedBatchLiesHalfwayBetweenGridBatches) {
  const std::string base = "--config configs/racks/trn2-ultraserver.json --model llama-3.1-8b "
                           "--context 1024 ";
  const auto d = bench(base + "--batch 9 --decode-steps 1 --interpolate --held-back 1")["decode_run"];
  EXPECT_EQ(d["shapes_simulated"], 2);
  EXPECT_EQ(d["batch_grid"], nlohmann::json::array({8, 10}));
  const double t8 = bench(base + "--batch 8")["time_ns"].get<double>();
  const double t9 = bench(base + "--batch 9")["time_ns"].get<double>();
  const double t10 = bench(base + "--batch 10")["time_ns"].get<double>();
  EXPECT_NEAR(d["total_time_ns"].get<double>(), (t8 + t10) / 2, 1e-6 * t10);
  ASSERT_EQ(d["held_back"].size(), 1u);
  EXPECT_DOUBLE_EQ(d["held_back"][0]["exact_ns"].get<double>(), t9);
  EXPECT_NEAR(d["held_back"][0]["error"].get<double>(), ((t8 + t10) / 2 - t9) / t9, 1e-9);
}

// MoE layers fast-forward: DeepSeek-V3 expert-parallel over 16 ranks at decode. Most blocks
// repeat an earlier block of their shape and are timed from it; the iteration's time stays
// within 1 % of the one simulated in full (measured: +0.007 %).
TEST(InferIterationCli, MoeLayersFastForwardAndAgreeWithTheFullSimulation) {
  const std::string args = "--config configs/racks/trn3-gen2-ultraserver.json --model deepseek-v3 "
                           "--layout dp=16,ep=16 --weights-dtype fp8 --batch 16 --context 1024 ";
  const auto on = bench(args);
  const auto off = bench(args + "--set sim.fast_forward=false");
  const auto& ff = on["fast_forward"];
  EXPECT_EQ(ff["units"], 16 * 61 * 2);
  EXPECT_GT(ff["units_fast_forwarded"].get<double>(), 0.4 * ff["units"].get<double>());
  EXPECT_NEAR(on["time_ns"].get<double>(), off["time_ns"].get<double>(),
              0.01 * off["time_ns"].get<double>());
  EXPECT_EQ(off["fast_forward"]["units_fast_forwarded"], 0);
  // The expert-parallel all-to-alls whose first member's block is simulated are timed from an
  // earlier all-to-all of their shape (IterationSource::collectives_by_shape): more collectives
  // fast-forwarded than by the blocks alone, at a time within 1 % of the full simulation.
  const auto blocks_only = bench(args + "--set sim.fast_forward_collectives_by_shape=false");
  EXPECT_GT(ff["collectives_fast_forwarded"].get<double>(),
            blocks_only["fast_forward"]["collectives_fast_forwarded"].get<double>());
  EXPECT_NEAR(blocks_only["time_ns"].get<double>(), off["time_ns"].get<double>(),
              0.01 * off["time_ns"].get<double>());
}

// Two sequences on 16 expert-parallel ranks: 14 ranks have no sequence and run only the MoE
// layers (58 units each, 2 x 122 on the busy ranks). Their layers fast-forward once each waits
// for the one before it (InferIteration.IdleRanksDispatchAfterTheLayerBefore): 356 of 1,056 units
// (142 before, when an idle rank posted all its dispatches at once), within 1 % of the full
// simulation.
TEST(InferIterationCli, IdleRanksLayersFastForward) {
  const std::string args = "--config configs/racks/trn3-gen2-ultraserver.json --model deepseek-v3 "
                           "--layout dp=16,ep=16 --weights-dtype fp8 --batch 2 --context 1024 ";
  const auto on = bench(args);
  const auto off = bench(args + "--set sim.fast_forward=false");
  const auto& ff = on["fast_forward"];
  EXPECT_EQ(ff["units"], 2 * 61 * 2 + 14 * 58);
  EXPECT_GT(ff["units_fast_forwarded"].get<double>(), 0.25 * ff["units"].get<double>());
  EXPECT_NEAR(on["time_ns"].get<double>(), off["time_ns"].get<double>(),
              0.01 * off["time_ns"].get<double>());
}

// Interpolation: the context grid is in tiles of 128 keys (the Tensor engine's rows) on the op
// tier's sizes (..., 7, 8, 10, ... tiles), a cell running from the first context of its first
// tile to the last of its last one. 257 steps from context 1024 end the cell of tiles (7, 8]
// (1024 = 8 x 128, simulated) and run the cell (8, 10], contexts 1025 to 1280, whose ends are
// simulated and whose steps lie on the line between them: three shapes, and
// total = t(1024) + 256 x (t(1025) + t(1280)) / 2.
TEST(InferIterationCli, InterpolatedDecodeRunLiesOnTheLineBetweenGridPoints) {
  const std::string base = "--config configs/racks/trn2-ultraserver.json --model llama-3.1-8b "
                           "--batch 2 ";
  const auto d = bench(base + "--context 1024 --decode-steps 257 --interpolate")["decode_run"];
  EXPECT_EQ(d["shapes_simulated"], 3);
  const double t0 = bench(base + "--context 1024")["time_ns"].get<double>();
  const double t1 = bench(base + "--context 1025")["time_ns"].get<double>();
  const double t2 = bench(base + "--context 1280")["time_ns"].get<double>();
  EXPECT_NEAR(d["total_time_ns"].get<double>(), t0 + 256 * (t1 + t2) / 2, 1e-6 * 257 * t2);
  EXPECT_EQ(test::run_trnsim("bench iteration --model llama-3.1-8b --decode-steps 4 --interpolate "
                             "--seq-buckets 1024,2048").code,
            2);
}
