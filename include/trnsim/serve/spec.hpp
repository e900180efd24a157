// SPDX-License-Identifier: MIT
// A serving spec (configs/serving/*.json, docs/serving.md): the model and its layout on a rack,
// the scheduler, the arrivals, how long to run and the SLO. Read through the schema visitor
// (trnsim/config/schema.hpp) like the configs: unknown keys, wrong types, a quantity in the wrong
// unit or out of range are refused naming the file and the JSON pointer.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnsim/config/schema.hpp"
#include "trnsim/units.hpp"

namespace trnsim::serve {

enum class Priority { prefill_first, decode_first };
constexpr auto enum_names(Priority) {
  using S = std::string_view;
  return std::array{std::pair{Priority::prefill_first, S("prefill_first")},
                    std::pair{Priority::decode_first, S("decode_first")}};
}

enum class ArrivalKind { poisson, closed, file };
constexpr auto enum_names(ArrivalKind) {
  using S = std::string_view;
  return std::array{std::pair{ArrivalKind::poisson, S("poisson")},
                    std::pair{ArrivalKind::closed, S("closed")},
                    std::pair{ArrivalKind::file, S("file")}};
}

enum class TimingMode { exact, grid };
constexpr auto enum_names(TimingMode) {
  using S = std::string_view;
  return std::array{std::pair{TimingMode::exact, S("exact")}, std::pair{TimingMode::grid, S("grid")}};
}

struct SchedulerParams {
  std::uint64_t max_batch = 256;      // sequences in one iteration (decode + prefill)
  std::uint64_t token_budget = 8192;  // tokens in one iteration (decode tokens + prefill chunk)
  bool chunked_prefill = true;        // a prompt may be split over iterations
  Priority priority = Priority::decode_first;
  std::uint64_t block_tokens = 16;    // paged KV block (vLLM's default)
  double reserve_fraction = 0.10;     // of HBM kept free (vLLM gpu_memory_utilization 0.9)

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::InRange;
    v.field("max_batch", max_batch, "sequences in one iteration", AtLeast{1});
    v.field("token_budget", token_budget, "tokens in one iteration (decode + prefill)", AtLeast{1});
    v.field("chunked_prefill", chunked_prefill, "a prompt may be split over iterations");
    v.field("priority", priority, "decode_first (vLLM) or prefill_first");
    v.field("block_tokens", block_tokens, "tokens of a paged KV block", AtLeast{1});
    v.field("reserve_fraction", reserve_fraction, "fraction of HBM kept free", InRange{0, 0.99});
  }
};

struct ArrivalParams {
  ArrivalKind kind = ArrivalKind::file;
  // poisson
  double rate_per_s = 1;
  // closed loop
  std::uint64_t users = 1;
  Duration think_time{0};
  // poisson and closed: lengths fixed, or drawn from `path` (a request file) with the seed
  std::uint64_t input_tokens = 0, output_tokens = 0;
  std::uint64_t seed = 1;
  // file: a request file (.csv: Azure LLM inference trace; .jsonl: Mooncake); relative to the spec
  std::string path;
  double time_scale = 1;  // arrival times multiplied by this (0.5: twice the rate)

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::InRange;
    using config::Positive;
    v.field("kind", kind, "poisson, closed or file");
    v.field("rate_per_s", rate_per_s, "poisson: requests per second", Positive{}, InRange{0, 1e9});
    v.field("users", users, "closed: concurrent users", AtLeast{1});
    v.field("think_time", think_time, "closed: a user's pause between a response and the next request",
            AtLeast{0});
    v.field("input_tokens", input_tokens, "poisson/closed: prompt tokens (0: drawn from path)");
    v.field("output_tokens", output_tokens, "poisson/closed: output tokens (0: drawn from path)");
    v.field("seed", seed, "random seed of arrivals and drawn lengths");
    v.field("path", path, "request file: Azure .csv or Mooncake .jsonl (relative to the spec)");
    v.field("time_scale", time_scale, "file: arrival times multiplied by this", Positive{},
            InRange{0, 1e6});
  }
};

struct RunLength {
  std::uint64_t requests = 1000;        // requests issued (after warm-up ones)
  std::uint64_t warmup_requests = 0;    // first requests, served but left out of the figures

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    v.field("requests", requests, "requests measured", AtLeast{1}, config::AtMost{1e8});
    v.field("warmup_requests", warmup_requests, "requests served first and left out of the figures");
  }
};

struct SloParams {
  Duration ttft{2.0}, tpot{0.1};

  template <class V>
  void visit(V& v) {
    using config::Positive;
    v.field("ttft", ttft, "time to first token at most", Positive{});
    v.field("tpot", tpot, "time per output token at most", Positive{});
  }
};

struct TimingParams {
  TimingMode mode = TimingMode::grid;
  // Host-side costs of one iteration (infer::RuntimeCosts).
  Duration launch{15e-6}, sync{10e-6}, schedule{0};
  std::uint64_t parallel = 2;  // iteration simulations at once (forked children)
  std::uint64_t grid_per_octave = 2;  // grid: 2 (2^k and 1.5 x 2^k) or 1 (2^k)
  std::uint64_t seed = 1;      // MoE routing of the simulated iterations

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::InRange;
    v.field("mode", mode, "exact: each distinct shape simulated; grid: a grid of shapes, interpolated");
    v.field("launch", launch, "launching the compiled graph, per iteration", AtLeast{0});
    v.field("sync", sync, "host-device synchronisation, per iteration", AtLeast{0});
    v.field("schedule", schedule, "the scheduler's own work, per iteration", AtLeast{0});
    v.field("parallel", parallel, "iteration simulations at once", InRange{1, 64});
    v.field("grid_per_octave", grid_per_octave,
            "grid points per doubling: 2 (2^k and 1.5 x 2^k) or 1 (2^k)", InRange{1, 2});
    v.field("seed", seed, "MoE routing of the simulated iterations");
  }
};

// One pool of a disaggregated system: `replicas` copies of `layout` (empty: the spec's `layout`).
struct PoolParams {
  std::string layout;
  std::uint64_t replicas = 1;

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::Required;
    v.field("layout", layout, "layout of one replica of the pool: tp=,dp=,ep=,pp= (default: the spec's)");
    v.field("replicas", replicas, "replicas of the pool", Required{}, AtLeast{1});
  }
};

// Where the KV caches move (docs/serving.md#disaggregated-prefill-and-decode): over the rack's
// fabric (no cluster: both pools in the spec's UltraServer) or over the EFA network of a cluster
// preset (the prefill pool on one UltraServer, the decode pool on another).
struct KvTransferParams {
  std::string cluster;  // configs/clusters/<name>.json or a file; empty: the rack's fabric
  // EFA bandwidth per chip and direction (0: the cluster preset's). Sources disagree: the NIC's
  // 200 Gb/s line rate (25 GB/s, the presets) against 19.3 GB/s measured per device by
  // Mooncake's transfer engine on trn2.48xlarge (../shared/specs/trainium.md section 5).
  Bandwidth nic_bandwidth{0};
  // The transfers contend with the pools' own iterations (docs/serving.md#contention): each
  // iteration timed beside the transfers in flight on its replica's link, which get the share
  // of their rate it leaves them. false: the transfers share only each other's ends.
  bool contention = true;

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    v.field("cluster", cluster,
            "cluster preset (configs/clusters/) or file: the pools on two of its UltraServers, the "
            "KV over EFA (absent: both pools in the rack, the KV over its fabric)");
    v.field("nic_bandwidth", nic_bandwidth,
            "EFA bandwidth per chip and direction (0: the cluster preset's)", AtLeast{0});
    v.field("contention", contention,
            "the transfers contend with the pools' iterations on the path (each iteration timed "
            "beside the transfers in flight on its replica's link); false: only with each other");
  }
};

// Disaggregated prefill and decode (docs/serving.md#disaggregated-prefill-and-decode): prompts
// are prefilled in the prefill pool, their KV cache moved to a decode replica, decoded there.
struct DisaggregatedParams {
  PoolParams prefill, decode;
  KvTransferParams transfer;

  template <class V>
  void visit(V& v) {
    using config::Required;
    v.field("prefill", prefill, "the pool that prefills prompts and samples their first token",
            Required{});
    v.field("decode", decode, "the pool that decodes, after the KV cache is moved to it",
            Required{});
    v.field("transfer", transfer, "where the KV caches move: the rack's fabric or a cluster's EFA");
  }
};

struct ServeSpec {
  std::string name, description;
  std::vector<std::string> sources;
  std::string rack = "trn3-gen2-ultraserver";  // a preset under configs/racks/ or a file
  std::string model;                           // configs/models/<model>.json or a file
  std::string layout = "tp=1";                 // infer::parse_layout
  std::uint64_t replicas = 1;                  // copies of the layout on the rack (0: fill it)
  std::string weights_dtype = "bf16", kv_dtype = "bf16";
  SchedulerParams scheduler;
  ArrivalParams arrivals;
  RunLength run;
  SloParams slo;
  TimingParams timing;
  std::optional<DisaggregatedParams> disaggregated;  // absent: co-located replicas

  template <class V>
  void visit(V& v) {
    using config::AtLeast;
    using config::Required;
    v.field("name", name, "spec name", Required{});
    v.field("description", description, "what is served");
    v.field("sources", sources, "where the layout and the load come from");
    v.field("rack", rack, "rack preset name or file");
    v.field("model", model, "model name (configs/models/) or file", Required{});
    v.field("layout", layout, "layout of one replica: tp=,dp=,ep=,pp=");
    v.field("replicas", replicas, "replicas of the layout on the rack (0: as many as the rack holds)");
    v.field("weights_dtype", weights_dtype, "bf16, fp8, mxfp8, mxfp4");
    v.field("kv_dtype", kv_dtype, "bf16, fp8");
    v.field("scheduler", scheduler, "continuous batching");
    v.field("arrivals", arrivals, "where requests come from");
    v.field("run", run, "how long to run");
    v.field("slo", slo, "service-level objective for goodput");
    v.field("timing", timing, "how iterations are timed on the rack");
    v.field("disaggregated", disaggregated,
            "a prefill pool and a decode pool of one layout (absent: co-located replicas)");
  }
};

// Reads a spec file with `sets` ("pointer=value" or "a.b=value" overrides) applied; ConfigError
// "file:/pointer: what was expected". Relative paths in it (arrivals.path) are made relative to
// the spec's folder.
ServeSpec load_spec(const std::string& path, const std::vector<std::string>& sets = {});

}  // namespace trnsim::serve
