// SPDX-License-Identifier: MIT
#include "trnsim/serve/serve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <numeric>

#include "trnsim/bench/bench.hpp"
#include "trnsim/config/set.hpp"
#include "trnsim/error.hpp"
#include "trnsim/infer/iteration.hpp"
#include "trnsim/infer/memory.hpp"
#include "trnsim/infer/model.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"
#include "trnsim/report/version.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/serve/arrivals.hpp"
#include "trnsim/serve/timeline.hpp"
#include "trnsim/serve/timer.hpp"
#include "trnsim/serve/transfer.hpp"
#include "setup.hpp"

namespace trnsim::serve {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kMaxSpecFileBytes = std::uint64_t(1) << 20;

DType dtype_of(const std::string& s, const config::Provenance& prov, const char* ptr,
               std::initializer_list<DType> allowed) {
  std::string names;
  for (DType x : allowed) names += fmt::format("{}{}", names.empty() ? "" : ", ", to_string(x));
  try {
    const DType d = parse_dtype(s);
    if (std::find(allowed.begin(), allowed.end(), d) != allowed.end()) return d;
  } catch (const InputError&) {
  }
  throw ConfigError(config::located(prov, ptr, fmt::format("expected one of {}, got \"{}\"", names, s)));
}

// Taken by value: the callers move their vectors in (a 100,000-request run's inter-token gaps
// are 21 million values), and the percentiles reorder it after the mean is summed in order.
Json stats_json(std::vector<double> v) {
  const std::size_t n = v.size();
  const double mean = v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / double(n);
  const std::vector<double> p = percentiles(std::move(v), {0.50, 0.90, 0.99});
  return {{"mean", mean}, {"p50", p[0]}, {"p90", p[1]}, {"p99", p[2]}, {"count", n}};
}

std::string rack_path(const std::string& rack) {
  if (rack.find('/') != std::string::npos || rack.ends_with(".json")) return rack;
  return bench::data_path("configs/racks/" + rack + ".json");
}

}  // namespace

ServeSpec load_spec(const std::string& path, const std::vector<std::string>& sets) {
  const std::string text = read_input_file(path, kMaxSpecFileBytes);
  config::Json j = config::parse_json<ConfigError>(text, path);
  config::Provenance prov;
  prov.record_tree(j, "", path);
  for (const auto& s : sets) config::apply_set(j, s, prov);
  ServeSpec spec;
  config::JsonReader::read(j, "", prov, spec);
  if (!spec.arrivals.path.empty() && fs::path(spec.arrivals.path).is_relative()) {
    spec.arrivals.path = (fs::path(path).parent_path() / spec.arrivals.path).lexically_normal().string();
  }
  return spec;
}

double percentile(std::vector<double> v, double p) { return percentiles(std::move(v), {p}).front(); }

std::vector<double> percentiles(std::vector<double> v, const std::vector<double>& ps) {
  std::vector<double> out(ps.size(), 0.0);
  if (v.empty()) return out;
  auto first = v.begin();
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (i > 0 && ps[i] < ps[i - 1]) throw InternalError("percentiles: expected ascending p");
    const auto rank = std::size_t(std::ceil(ps[i] * double(v.size())));
    const auto nth = v.begin() + std::ptrdiff_t(std::min(v.size() - 1, rank == 0 ? 0 : rank - 1));
    // [v.begin(), first) holds the values below the rank before: the next rank is in the rest.
    std::nth_element(first, nth, v.end());
    out[i] = *nth;
    first = nth;
  }
  return out;
}

UsersSolution solve_users(const std::function<double(std::uint64_t)>& per_user, double target,
                          std::uint64_t max_users) {
  UsersSolution sol;
  max_users = std::max<std::uint64_t>(1, max_users);
  auto meets = [&](std::uint64_t n) {
    const double v = per_user(n);
    sol.points.push_back({n, v, v >= target});
    return v >= target;
  };
  // Doubling: lo meets (0: none known), hi misses (0: none known).
  std::uint64_t lo = 0, hi = 0;
  for (std::uint64_t n = 1;; n = std::min(max_users, n * 2)) {
    if (meets(n)) {
      lo = n;
      if (n == max_users) break;
    } else {
      hi = n;
      break;
    }
  }
  if (hi == 0) {
    sol.users = lo;
    sol.capped = true;
    return sol;
  }
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  sol.users = lo;
  return sol;
}

Json figures(const EngineResult& r, const SloParams& slo, int replicas, double chips,
             double static_w) {
  std::vector<double> ttft, tpot, e2e, queue, itl, per_user;
  double t0 = INFINITY, t1 = 0, out_tokens = 0, in_tokens = 0, all_out = 0;
  std::uint64_t good = 0, measured = 0;
  // The gaps at their count, not grown by doubling (21 million at 100,000 requests).
  std::size_t gaps = 0;
  for (const auto& q : r.requests) gaps += q.refused || q.warmup ? 0 : q.itl_s.size();
  itl.reserve(gaps);
  for (const auto& q : r.requests) {
    if (q.refused) continue;
    all_out += double(q.req.output_tokens);
    if (q.warmup) continue;
    ++measured;
    t0 = std::min(t0, q.req.arrival_s);
    t1 = std::max(t1, q.finish_s);
    out_tokens += double(q.req.output_tokens);
    in_tokens += double(q.req.input_tokens);
    const double first = q.first_token_s - q.req.arrival_s, total = q.finish_s - q.req.arrival_s;
    ttft.push_back(first);
    e2e.push_back(total);
    queue.push_back(q.first_scheduled_s - q.req.arrival_s);
    double tp = 0;
    if (q.req.output_tokens > 1) {
      tp = (total - first) / double(q.req.output_tokens - 1);
      tpot.push_back(tp);
      if (tp > 0) per_user.push_back(1 / tp);
    }
    for (float g : q.itl_s) itl.push_back(double(g));
    if (first <= slo.ttft.si && tp <= slo.tpot.si) ++good;
  }
  const double window = measured ? t1 - t0 : 0;
  auto rate = [&](double x) { return window > 0 ? x / window : 0.0; };
  // Mean requests in the system over the window, from the iterations' own counts (each
  // replica's waiting and running requests at an iteration's start, held over it; idle: none),
  // against Little's law's throughput x mean latency from the requests' own times. Past
  // EngineOptions::max_iteration_records the engine keeps the iterations that started first,
  // every one up to the last kept one's start: the mean is over that part of the window, which
  // the report gives (`over_s`), rather than their area over the whole window.
  const bool all_kept = r.iterations.size() == r.iterations_total;
  const double t_area = all_kept || r.iterations.empty() ? t1 : std::min(t1, r.iterations.back().start_s);
  const double area_window = std::max(0.0, t_area - t0);
  double area = 0;
  for (const auto& it : r.iterations) {
    const double a = std::max(it.start_s, t0), b = std::min(it.end_s, t_area);
    if (b > a) area += double(it.in_system) * (b - a);
  }
  const double mean_e2e = e2e.empty() ? 0 : std::accumulate(e2e.begin(), e2e.end(), 0.0) / double(e2e.size());
  const double energy = r.dynamic_j + static_w * replicas * r.end_s;
  const double power = r.end_s > 0 ? energy / r.end_s : 0;
  Json j;
  j["requests"] = {{"measured", measured},
                   {"refused", r.refused},
                   {"warmup", std::count_if(r.requests.begin(), r.requests.end(),
                                            [](const RequestRecord& q) { return q.warmup; })},
                   {"preemptions", r.preemptions},
                   {"iterations", r.iterations_total}};
  j["window_s"] = window;
  j["end_s"] = r.end_s;
  j["ttft_s"] = stats_json(std::move(ttft));
  j["tpot_s"] = stats_json(std::move(tpot));
  j["itl_s"] = stats_json(std::move(itl));
  j["e2e_s"] = stats_json(std::move(e2e));
  j["queueing_s"] = stats_json(std::move(queue));
  j["throughput"] = {
      {"output_tokens_per_s", rate(out_tokens)},
      {"input_tokens_per_s", rate(in_tokens)},
      {"output_tokens_per_s_per_chip", chips > 0 ? rate(out_tokens) / chips : 0},
      {"input_tokens_per_s_per_chip", chips > 0 ? rate(in_tokens) / chips : 0},
      {"requests_per_s", rate(double(measured))},
      {"tokens_per_s_per_user", stats_json(std::move(per_user))}};
  j["goodput"] = {{"ttft_slo_s", slo.ttft.si},
                  {"tpot_slo_s", slo.tpot.si},
                  {"requests_meeting_slo", good},
                  {"fraction", measured ? double(good) / double(measured) : 0},
                  {"requests_per_s", rate(double(good))}};
  j["energy"] = {{"counted", "output tokens generated over the whole run (warm-up included), "
                             "energy of the replicas' chips (static over the run, dynamic per "
                             "iteration) and the fabric's dynamic energy"},
                 {"joules", energy},
                 {"mean_power_w", power},
                 {"joules_per_output_token", all_out > 0 ? energy / all_out : 0},
                 {"output_tokens_per_joule", energy > 0 ? all_out / energy : 0},
                 {"output_tokens_per_s_per_mw", energy > 0 ? all_out / energy * 1e6 : 0}};
  j["littles_law"] = {{"mean_in_system", area_window > 0 ? area / area_window : 0},
                      {"over_s", measured ? area_window : 0},
                      {"throughput_x_latency", rate(double(measured)) * mean_e2e}};
  if (r.prefill_replicas > 0) {
    // Per pool, over all its iterations: batch and KV blocks used after each iteration, as a
    // fraction of a replica's blocks.
    const int P = r.prefill_replicas;
    Json pools;
    for (int pool = 0; pool < 2; ++pool) {
      const double blocks = double(pool == 0 ? r.kv_blocks : r.decode_kv_blocks);
      const PoolTotals& t = r.pools[pool];
      const double n = double(t.iterations);
      pools[pool == 0 ? "prefill" : "decode"] = {
          {"replicas", pool == 0 ? P : replicas - P},
          {"iterations", t.iterations},
          {"batch_mean", n > 0 ? double(t.batch) / n : 0},
          {"kv_blocks_per_replica", pool == 0 ? r.kv_blocks : r.decode_kv_blocks},
          {"kv_occupancy_mean", n > 0 && blocks > 0 ? double(t.kv_blocks) / n / blocks : 0},
          {"kv_occupancy_max", blocks > 0 ? double(t.kv_blocks_max) / blocks : 0}};
    }
    j["pools"] = pools;
    // Each measured request's transfer, what it would have taken alone on its path (the rest:
    // sharing the path with other transfers), and its wait from its first token (for blocks on
    // a decode replica).
    std::vector<double> took, wait, alone;
    for (const auto& q : r.requests) {
      if (q.refused || q.warmup || q.transfer_start_s < 0) continue;
      took.push_back(q.transfer_end_s - q.transfer_start_s);
      alone.push_back(q.transfer_alone_s);
      wait.push_back(q.transfer_start_s - q.first_token_s);
    }
    j["kv_transfer"] = {{"transfers", r.transfers},
                        {"bytes", r.transfer_bytes},
                        {"time_s", r.transfer_s},
                        {"counted", "transfers, bytes and time_s (summed): every transfer of the "
                                    "run (warm-up included); transfer_s and wait_s: the measured "
                                    "requests'"},
                        {"transfer_s", stats_json(std::move(took))},
                        {"alone_s", stats_json(std::move(alone))},
                        {"wait_s", stats_json(std::move(wait))}};
  }
  // Batch, KV occupancy and queue over time: evenly spaced iterations over the whole run, 512
  // to 1,023 of them (all when fewer). Past the records' cap, the engine's sample spans the run.
  Json series = Json::array();
  const bool sample = r.iterations.size() < r.iterations_total;
  const std::vector<IterationRecord>& its = sample ? r.sampled : r.iterations;
  const std::size_t n = its.size(), step = std::max<std::size_t>(1, n / 512);
  for (std::size_t i = 0; i < n; i += step) {
    const auto& it = its[i];
    series.push_back({it.start_s, it.replica, it.batch, it.kv_blocks, it.waiting});
  }
  j["over_time"] = {{"columns", {"t_s", "replica", "batch", "kv_blocks", "waiting"}},
                    {"rows", series}};
  return j;
}

ServeSetup read_setup(const ServeOptions& o) {
  ServeSetup su{load_spec(o.spec_path, o.spec_sets)};
  const ServeSpec& spec = su.spec;
  config::Provenance& prov = su.prov;
  prov.record("", o.spec_path);
  bench::ConfigSource rack{rack_path(o.rack.empty() ? spec.rack : o.rack), o.rack_sets};
  su.rack_path = rack.path;
  // The rack the load's checks resolved (registry::check: the rack a run resolves), kept rather
  // than resolved again below.
  std::optional<resolve::RackPlan> checked;
  su.cfg = rack.load(checked);
  const config::LoadedConfig& cfg = su.cfg;
  if (!cfg.config.rack) {
    throw ConfigError(config::located(prov, "/rack", fmt::format("{} is not a rack preset", rack.path)));
  }
  infer::IterationSpec& it = su.it;
  try {
    it.model = infer::load_model(infer::model_path(spec.model, bench::data_path("configs/models")));
  } catch (const InputError& e) {
    throw ConfigError(config::located(prov, "/model", e.what()));
  }
  // Disaggregated: the pools' layouts, each the spec's unless given.
  const auto& dis = spec.disaggregated;
  std::string& layout_ptr = su.layout_ptr;
  layout_ptr = "/layout";
  auto layout_of = [&](const std::string& text, const std::string& ptr) {
    infer::Layout l;
    try {
      l = infer::parse_layout(text);
      infer::check_layout(it.model, l);
    } catch (const InputError& e) {
      throw ConfigError(config::located(prov, ptr, e.what()));
    }
    return l;
  };
  if (dis) {
    // `replicas` may stay as a co-located spec had it when it is the pools' together (the same
    // chips, split), so that --set disaggregated... turns a spec into its disaggregated twin.
    const std::uint64_t both = dis->prefill.replicas + dis->decode.replicas;
    if (spec.replicas != 1 && spec.replicas != both) {
      throw ConfigError(config::located(
          prov, "/replicas",
          fmt::format("a disaggregated spec gives its replicas per pool (/disaggregated/prefill/"
                      "replicas and /disaggregated/decode/replicas); expected replicas absent, 1 "
                      "or the pools' {} together, got {}",
                      both, spec.replicas)));
    }
    const bool pl = !dis->prefill.layout.empty(), dl = !dis->decode.layout.empty();
    layout_ptr = pl ? "/disaggregated/prefill/layout" : "/layout";
    it.layout = layout_of(pl ? dis->prefill.layout : spec.layout, layout_ptr);
    su.decode_layout_ptr = dl ? "/disaggregated/decode/layout" : "/layout";
    su.decode_it.layout = layout_of(dl ? dis->decode.layout : spec.layout, su.decode_layout_ptr);
  } else {
    it.layout = layout_of(spec.layout, "/layout");
  }
  it.dtypes.weights = dtype_of(spec.weights_dtype, prov, "/weights_dtype",
                               {DType::bf16, DType::fp8, DType::mxfp8, DType::mxfp4});
  it.dtypes.kv = dtype_of(spec.kv_dtype, prov, "/kv_dtype", {DType::bf16, DType::fp8});
  it.runtime = {spec.timing.launch.si, spec.timing.sync.si, spec.timing.schedule.si};
  it.seed = spec.timing.seed;
  if (dis) {
    const infer::Layout d = su.decode_it.layout;
    su.decode_it = it;
    su.decode_it.layout = d;
  }
  su.plan = checked ? std::move(checked) : resolve::plan(cfg, resolve::Purpose::run).rack;
  const resolve::RackPlan& plan = *su.plan;
  const auto& hbm = plan.chip.params.hbm;
  const int per_chip = su.per_chip = std::max(1, plan.placement.per_chip);
  const std::size_t chips = su.chips = plan.topology.chip_count();
  // replicas 0: as many copies of the layout as the rack's ranks hold (the whole rack).
  // Disaggregated: the prefill replicas, then the decode replicas.
  const std::uint64_t prefill_replicas = su.prefill_replicas = dis ? dis->prefill.replicas : 0;
  const std::uint64_t replicas = su.replicas =
      dis ? dis->prefill.replicas + dis->decode.replicas
      : spec.replicas > 0 ? spec.replicas
                          : chips * std::size_t(per_chip) / std::uint64_t(it.layout.ranks());
  const std::uint64_t rack_ranks = chips * std::size_t(per_chip);
  if (dis) {
    su.prefill_ranks = std::uint64_t(it.layout.ranks()) * dis->prefill.replicas;
    su.decode_ranks = std::uint64_t(su.decode_it.layout.ranks()) * dis->decode.replicas;
  }
  const auto ranks = su.ranks = dis ? su.prefill_ranks + su.decode_ranks
                                    : std::uint64_t(it.layout.ranks()) * replicas;
  const bool efa = dis && !dis->transfer.cluster.empty();
  const bool one_layout = dis && su.decode_it.layout.text() == it.layout.text();
  if (dis && efa) {
    // Each pool on its own UltraServer.
    for (int pool = 0; pool < 2; ++pool) {
      const std::uint64_t n = pool == 0 ? su.prefill_ranks : su.decode_ranks;
      if (n <= rack_ranks) continue;
      const auto& pp = pool == 0 ? dis->prefill : dis->decode;
      throw ConfigError(config::located(
          prov, pool == 0 ? "/disaggregated/prefill/replicas" : "/disaggregated/decode/replicas",
          fmt::format("{} {} replicas of {} need {} ranks; the pool has one UltraServer of the "
                      "cluster, {} chips x {} ranks per chip",
                      pp.replicas, pool == 0 ? "prefill" : "decode",
                      (pool == 0 ? it.layout : su.decode_it.layout).text(), n, chips, per_chip)));
    }
  } else if (dis && ranks > rack_ranks) {
    throw ConfigError(config::located(
        prov, "/disaggregated",
        one_layout
            ? fmt::format("{} prefill and {} decode replicas of {} need {} ranks; {} has {} chips "
                          "x {} ranks per chip",
                          dis->prefill.replicas, dis->decode.replicas, it.layout.text(), ranks,
                          cfg.config.rack->name, chips, per_chip)
            : fmt::format("{} prefill replicas of {} and {} decode replicas of {} need {} ranks; "
                          "{} has {} chips x {} ranks per chip (or give /disaggregated/transfer/"
                          "cluster: one UltraServer per pool)",
                          dis->prefill.replicas, it.layout.text(), dis->decode.replicas,
                          su.decode_it.layout.text(), ranks, cfg.config.rack->name, chips,
                          per_chip)));
  }
  if (!dis && (replicas == 0 || ranks > rack_ranks)) {
    throw ConfigError(config::located(
        prov, "/replicas",
        fmt::format("{} replicas of {} need {} ranks; {} has {} chips x {} ranks per chip",
                    replicas, it.layout.text(), std::max<std::uint64_t>(ranks, std::uint64_t(it.layout.ranks())),
                    cfg.config.rack->name, chips, per_chip)));
  }
  infer::CapacityOptions co;
  co.hbm_bytes = double(hbm.stacks) * hbm.capacity_per_stack.si / per_chip;
  co.reserve_fraction = spec.scheduler.reserve_fraction;
  co.block_tokens = spec.scheduler.block_tokens;
  const auto dp = std::uint64_t(it.layout.dp);
  co.max_tokens = spec.scheduler.token_budget;
  co.max_sequences = (spec.scheduler.max_batch + dp - 1) / dp;
  su.cap = infer::kv_capacity(it.model, it.layout, it.dtypes, co);
  const infer::KvCapacity& cap = su.cap;
  try {
    infer::check_fits(it.model, it.layout, cap, plan.chip.params.name);
  } catch (const InputError& e) {
    throw ConfigError(config::located(prov, dis ? layout_ptr : "/model", e.what()));
  }
  const auto ddp = std::uint64_t(su.decode_it.layout.dp);
  if (dis) {
    co.max_sequences = (spec.scheduler.max_batch + ddp - 1) / ddp;
    su.decode_cap = infer::kv_capacity(it.model, su.decode_it.layout, it.dtypes, co);
    try {
      infer::check_fits(it.model, su.decode_it.layout, su.decode_cap, plan.chip.params.name);
    } catch (const InputError& e) {
      throw ConfigError(config::located(prov, su.decode_layout_ptr, e.what()));
    }
    // Where the KV transfers run: the rack's fabric (the decode replica's ranks after the
    // prefill replica's), or two UltraServers of a cluster of this rack (the decode replica's
    // ranks the second UltraServer's), one replica of the transfer over both.
    if (!efa && dis->transfer.nic_bandwidth.si > 0) {
      throw ConfigError(config::located(
          prov, "/disaggregated/transfer/nic_bandwidth",
          "the EFA bandwidth applies to pools on two UltraServers of a cluster: expected "
          "/disaggregated/transfer/cluster beside it (without one the KV moves over the rack's "
          "fabric)"));
    }
    TransferPath path;
    path.ranks_per_chip = per_chip;
    if (!efa) {
      path.cfg = cfg;
      path.decode_first = it.layout.ranks();
      path.where = fmt::format("the fabric of {}", cfg.config.rack->name);
    } else {
      const std::string& c = dis->transfer.cluster;
      const std::string cpath = c.find('/') != std::string::npos || c.ends_with(".json")
                                    ? c
                                    : bench::data_path("configs/clusters/" + c + ".json");
      try {
        path.cfg = bench::ConfigSource{cpath, o.rack_sets}.load();
      } catch (const InputError& e) {
        throw ConfigError(config::located(prov, "/disaggregated/transfer/cluster", e.what()));
      }
      if (!path.cfg.config.cluster || !path.cfg.config.rack) {
        throw ConfigError(config::located(
            prov, "/disaggregated/transfer/cluster",
            fmt::format("expected a cluster preset (configs/clusters/), got {}, which has no "
                        "/cluster",
                        cpath)));
      }
      if (path.cfg.config.rack->name != cfg.config.rack->name) {
        throw ConfigError(config::located(
            prov, "/disaggregated/transfer/cluster",
            fmt::format("expected a cluster of the spec's rack ({}), got {}, a cluster of {}",
                        cfg.config.rack->name, cpath, path.cfg.config.rack->name)));
      }
      auto& cl = *path.cfg.config.cluster;
      cl.ultraservers = 2;
      cl.ultraservers_per_replica = 2;
      if (dis->transfer.nic_bandwidth.si > 0) cl.scale_out.nic_bandwidth = dis->transfer.nic_bandwidth;
      path.decode_first = int(rack_ranks);
      path.nic_bandwidth = cl.scale_out.nic_bandwidth.si;
      path.where = fmt::format("EFA between two UltraServers of {} ({:.4g} GB/s per chip and "
                               "direction)",
                               path.cfg.config.name, path.nic_bandwidth / 1e9);
    }
    su.transfer = std::move(path);
  }
  // A replica's data-parallel groups each hold their own sequences; their blocks are pooled
  // (a sequence is placed wherever blocks are free).
  EngineOptions& eo = su.eo;
  eo.scheduler = spec.scheduler;
  eo.replicas = int(replicas);
  eo.kv_blocks = cap.blocks_per_chip * dp;
  eo.prefill_replicas = int(prefill_replicas);
  eo.decode_kv_blocks = dis ? su.decode_cap.blocks_per_chip * ddp : eo.kv_blocks;
  return su;
}

ServeResult serve(const ServeOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  const ServeSetup su = read_setup(o);
  const ServeSpec& spec = su.spec;
  const config::LoadedConfig& cfg = su.cfg;
  const infer::IterationSpec& it = su.it;
  const int per_chip = su.per_chip;
  const std::uint64_t replicas = su.replicas, ranks = su.ranks, prefill_replicas = su.prefill_replicas;
  const resolve::RackPlan& plan = *su.plan;
  const std::size_t chips = su.chips;
  const auto& dis = spec.disaggregated;
  const infer::KvCapacity& cap = su.cap;
  const EngineOptions& eo = su.eo;
  const std::uint64_t count = spec.run.requests + spec.run.warmup_requests;
  const Workload w = o.solve_users_target > 0 ? Workload{}
                                              : make_workload(spec.arrivals, count, o.spec_path);
  // Disaggregated: the KV transfers timed on their path; the decode pool's iterations on a timer
  // of its own when its layout is not the prefill pool's.
  std::optional<KvTransferTimer> kvt;
  if (dis) {
    kvt.emplace(*su.transfer, it, su.decode_it, spec.timing.mode, int(spec.timing.parallel),
                int(spec.timing.grid_per_octave));
  }
  const run::CacheSettings shape_cache = run::cache_settings_from_env(o.no_cache);
  PoolTimer timer(cfg, it, spec.timing.mode, int(spec.timing.parallel),
                  int(spec.timing.grid_per_octave), kvt ? &*kvt : nullptr, shape_cache, &plan);
  timer.remember_lookups(o.held_back > 0);
  const bool two_layouts = dis && su.decode_it.layout.text() != it.layout.text();
  std::optional<PoolTimer> dtimer;
  if (two_layouts) {
    dtimer.emplace(cfg, su.decode_it, spec.timing.mode, int(spec.timing.parallel),
                   int(spec.timing.grid_per_octave), &*kvt, shape_cache, &plan);
  }
  // Contention (docs/serving.md#contention): the transfers beside an iteration are hand-offs of
  // the run's mean prompt (rounded).
  auto contend = [&](const Workload& wl) {
    if (!dis || !dis->transfer.contention) return;
    const std::vector<Request>& reqs = wl.users > 0 ? wl.lengths : wl.open;
    double sum = 0;
    for (const Request& q : reqs) sum += double(q.input_tokens);
    const auto mean = reqs.empty() ? std::uint64_t(0) : std::uint64_t(std::llround(sum / double(reqs.size())));
    timer.contend(mean);
    if (dtimer) dtimer->contend(mean);
  };
  contend(w);
  IterationTimer* decode_timer = dtimer ? &*dtimer : nullptr;
  // Static power per replica: the pools' mean when their layouts differ.
  auto static_w = [&]() {
    if (!dtimer) return timer.static_w();
    const double p = double(prefill_replicas), d = double(replicas - prefill_replicas);
    return (p * timer.static_w() + d * dtimer->static_w()) / (p + d);
  };
  auto shapes_simulated = [&]() {
    return timer.shapes_simulated() + (dtimer ? dtimer->shapes_simulated() : 0);
  };
  auto lookups = [&]() { return timer.lookups() + (dtimer ? dtimer->lookups() : 0); };
  const std::string decode_layout = dis ? su.decode_it.layout.text() : it.layout.text();
  const double chips_used = double(ranks) / per_chip;
  EngineResult r;
  Json solve_json;
  if (o.solve_users_target > 0) {
    // Each point a closed loop of n users: n warm-up requests (every user's first, all issued at
    // once), then requests_per_user x n measured; the same timer, so the shapes simulated for
    // one point are reused by the next.
    std::uint64_t best = 0;
    Json points = Json::array();
    auto per_user = [&](std::uint64_t n) {
      ArrivalParams a = spec.arrivals;
      a.kind = ArrivalKind::closed;
      a.users = n;
      const Workload wn = make_workload(a, n * (o.solve_requests_per_user + 1), o.spec_path);
      contend(wn);
      EngineResult rn = simulate(wn, eo, timer, n, decode_timer);
      const Json f = figures(rn, spec.slo, eo.replicas, chips_used, static_w());
      const double v = f["throughput"]["tokens_per_s_per_user"]["p50"].get<double>();
      const bool ok = v >= o.solve_users_target;
      points.push_back({n, v, ok, f["throughput"]["output_tokens_per_s"], f["ttft_s"]["p50"],
                        f["energy"]["output_tokens_per_s_per_mw"], shapes_simulated()});
      if ((ok && n > best) || r.requests.empty()) {
        if (ok) best = n;
        r = std::move(rn);
      }
      return v;
    };
    const UsersSolution sol = solve_users(per_user, o.solve_users_target, o.solve_max_users);
    solve_json = {
        {"target_tokens_per_s_per_user", o.solve_users_target},
        {"statistic", "p50 over the measured requests of tokens/s per user (1 / TPOT)"},
        {"users", sol.users},
        {"capped", sol.capped},
        {"max_users", o.solve_max_users},
        {"requests_per_user", o.solve_requests_per_user},
        {"warmup_requests", "one per user (its first)"},
        {"points", {{"columns", {"users", "tokens_per_s_per_user_p50", "meets", "output_tokens_per_s",
                                 "ttft_p50_s", "output_tokens_per_s_per_mw", "shapes_simulated_so_far"}},
                    {"rows", points}}}};
  } else {
    r = simulate(w, eo, timer, spec.run.warmup_requests, decode_timer);
  }

  ServeResult out;
  Json spec_json;
  {
    ServeSpec copy = spec;
    config::JsonWriter writer(spec_json);
    copy.visit(writer);
  }
  Json& rep = out.report;
  rep["schema_version"] = 1;
  rep["identity"] = {{"trnsim_version", std::string(report::version())},
                     {"git_commit", std::string(report::git_commit())},
                     {"command_line", o.command_line},
                     {"spec", o.spec_path},
                     {"spec_sets", o.spec_sets},
                     {"rack", su.rack_path},
                     {"rack_sets", o.rack_sets},
                     {"request_file", spec.arrivals.path},
                     {"fidelity", cfg.config.sim.fidelity
                                      ? std::string(config::enum_name(*cfg.config.sim.fidelity))
                                      : std::string("fast (the run default)")}};
  rep["spec"] = spec_json;
  rep["machine"] = {{"rack", cfg.config.rack->name},
                    {"chip", plan.chip.params.name},
                    {"chips", chips},
                    {"chips_used", chips_used},
                    {"ranks_per_chip", per_chip},
                    {"replicas", replicas},
                    {"layout", it.layout.text()},
                    {"model", it.model.name}};
  if (dis) rep["machine"]["decode_layout"] = decode_layout;
  if (dis) {
    const bool efa = !dis->transfer.cluster.empty();
    rep["machine"]["disaggregated"] = {
        {"prefill_replicas", prefill_replicas},
        {"decode_replicas", replicas - prefill_replicas},
        {"prefill_layout", it.layout.text()},
        {"decode_layout", decode_layout},
        {"prefill_chips", double(su.prefill_ranks) / per_chip},
        {"decode_chips", double(su.decode_ranks) / per_chip},
        {"kv_transfer_path", su.transfer->where},
        {"kv_cluster", efa ? su.transfer->cfg.config.name : std::string()},
        {"nic_bandwidth_bytes_per_s", su.transfer->nic_bandwidth},
        {"placement",
         efa ? "each pool's replica timed as if alone on its UltraServer (ranks from chip 0); a KV "
               "transfer from a prefill replica on ranks [0, n) of UltraServer 0 to a decode "
               "replica on ranks [0, m) of UltraServer 1, over EFA"
             : "each pool's replica timed as if alone on the rack (ranks from chip 0); a KV "
               "transfer between a prefill replica on ranks [0, n) and a decode replica on ranks "
               "[n, n + m)"},
        {"contention",
         dis->transfer.contention
             ? "KV transfers in flight share each prefill replica's egress and each decode "
               "replica's ingress max-min fairly (a transfer alone: its simulated time); an "
               "iteration that starts with transfers in flight on its replica's link is timed "
               "beside them (1, 2, 4 or 8 hand-offs of the run's mean prompt, simulated together "
               "on the transfer path), and the transfers get the share of their rate it leaves "
               "them while it runs (timing.contention)"
             : "KV transfers in flight share each prefill replica's egress and each decode "
               "replica's ingress max-min fairly (a transfer alone: its simulated time); not "
               "with the pools' own collectives or iterations (contention off)"}};
  }
  rep["kv_cache"] = {{"kv_bytes_per_token_rank", cap.kv_bytes_per_token},
                     {"block_tokens", cap.block_tokens},
                     {"blocks_per_rank", cap.blocks_per_chip},
                     {"blocks_per_replica", eo.kv_blocks},
                     {"tokens_per_replica", eo.kv_blocks * cap.block_tokens},
                     {"weights_bytes_rank", cap.weights},
                     {"hbm_bytes_rank", cap.hbm}};
  if (two_layouts) {
    const infer::KvCapacity& dc = su.decode_cap;
    rep["kv_cache"]["decode"] = {{"kv_bytes_per_token_rank", dc.kv_bytes_per_token},
                                 {"blocks_per_rank", dc.blocks_per_chip},
                                 {"blocks_per_replica", eo.decode_kv_blocks},
                                 {"tokens_per_replica", eo.decode_kv_blocks * dc.block_tokens},
                                 {"weights_bytes_rank", dc.weights},
                                 {"hbm_bytes_rank", dc.hbm}};
  }
  rep["timing"] = {{"mode", config::enum_name(spec.timing.mode)},
                   {"shapes_simulated", shapes_simulated()},
                   {"iterations", lookups()},
                   {"reuse_rate", lookups() ? 1.0 - double(shapes_simulated()) / double(lookups())
                                            : 0.0},
                   {"static_w_per_replica", static_w()},
                   {"context_key_tile", timer.key_tile()}};
  if (o.held_back > 0) {
    // Interpolated shapes of the run simulated exactly (RackTimer::held_back).
    Json rows = Json::array();
    double worst = 0;
    for (const auto& h : timer.held_back(o.held_back)) {
      const double err = (h.interpolated_s - h.exact_s) / h.exact_s;
      worst = std::max(worst, std::abs(err));
      rows.push_back({h.shape.decode, h.shape.context, h.shape.prefill, h.shape.prefill_context,
                      h.exact_s, h.interpolated_s, err});
    }
    rep["timing"]["held_back"] = {
        {"columns", {"decode", "context", "prefill", "prefill_context", "exact_s",
                     "interpolated_s", "error"}},
        {"rows", rows},
        {"max_abs_error", worst}};
    logger("serve")->info("held back: {} shapes, max |error| {:.3f} %", rows.size(), 100 * worst);
  }
  {
    const std::size_t disk = timer.shapes_from_disk() + (dtimer ? dtimer->shapes_from_disk() : 0);
    const double wall = timer.simulation_wall_s() + (dtimer ? dtimer->simulation_wall_s() : 0.0);
    logger("serve")->info("{} shapes: {} simulated, {} from the shape cache; {:.1f} s in simulations",
                          shapes_simulated(), shapes_simulated() - disk, disk, wall);
    const std::size_t used = timer.shapes_ahead_used() + (dtimer ? dtimer->shapes_ahead_used() : 0);
    const std::size_t unused = timer.shapes_ahead_unused() + (dtimer ? dtimer->shapes_ahead_unused() : 0);
    if (used + unused > 0) {
      logger("serve")->info("shapes simulated ahead of need: {} used, {} not used (kept in the "
                            "shape cache)", used, unused);
    }
    const std::size_t beside = timer.contended().size() + (dtimer ? dtimer->contended().size() : 0);
    if (beside > 0) {
      logger("serve")->info("{} iteration shapes simulated beside KV transfers; {:.1f} s",
                            beside, timer.contention_wall_s() + (dtimer ? dtimer->contention_wall_s() : 0.0));
    }
  }
  Json shapes = Json::array();
  for (const auto& [s, c] : timer.table()) {
    shapes.push_back({s.decode, s.context, s.prefill, s.prefill_context, c.time_s, c.dynamic_j});
  }
  rep["timing"]["shapes"] = {
      {"columns", {"decode", "context", "prefill", "prefill_context", "time_s", "dynamic_j"}},
      {"rows", shapes}};
  if (dtimer) {
    // The decode pool's (the shapes above: the prefill pool's).
    Json ds = Json::array();
    for (const auto& [s, c] : dtimer->table()) {
      ds.push_back({s.decode, s.context, s.prefill, s.prefill_context, c.time_s, c.dynamic_j});
    }
    rep["timing"]["decode_shapes"] = {
        {"columns", {"decode", "context", "prefill", "prefill_context", "time_s", "dynamic_j"}},
        {"rows", ds}};
  }
  if (dis) {
    Json rows = Json::array();
    for (const auto& [tokens, c] : kvt->table()) {
      rows.push_back({tokens, c.bytes, c.time_s, c.dynamic_j, c.bandwidth});
    }
    rep["timing"]["kv_transfers"] = {
        {"simulated", kvt->table().size()},
        {"lookups", kvt->lookups()},
        {"path", su.transfer->where},
        {"columns", {"prompt_tokens", "bytes", "time_s", "dynamic_j", "bandwidth_bytes_per_s"}},
        {"rows", rows}};
    // Each iteration shape simulated beside transfers: the pool, the shape, the transfers and
    // their prompt, the iteration alone and beside them at its place on the path, the transfers
    // alone and beside it, the share of their rate they got, and how often it was used.
    Json crows = Json::array();
    std::uint64_t used = 0;
    for (const PoolTimer* pt : {&timer, dtimer ? &*dtimer : nullptr}) {
      if (!pt) continue;
      for (const auto& e : pt->contended()) {
        crows.push_back({e.decode_pool ? "decode" : "prefill", e.shape.decode, e.shape.context,
                         e.shape.prefill, e.shape.prefill_context, e.transfers, e.tokens,
                         e.alone_s, e.beside_s, e.transfers_alone_s, e.transfers_beside_s,
                         e.share, e.lookups});
        used += e.lookups;
      }
    }
    rep["timing"]["contention"] = {
        {"on", dis->transfer.contention},
        {"simulated", crows.size()},
        {"iterations_beside_transfers", used},
        {"columns", {"pool", "decode", "context", "prefill", "prefill_context", "transfers",
                     "prompt_tokens", "iteration_alone_s", "iteration_beside_s",
                     "transfers_alone_s", "transfers_beside_s", "share", "iterations"}},
        {"rows", crows}};
  }
  rep["results"] = figures(r, spec.slo, eo.replicas, chips_used, static_w());
  if (!solve_json.is_null()) {
    // results: the run at the solved concurrency (at 1 user when even one misses the target)
    solve_json["results_users"] = std::max<std::uint64_t>(1, solve_json["users"].get<std::uint64_t>());
    rep["solve"] = solve_json;
  }

  // Per request.
  std::string csv = "id,arrival_s,input_tokens,output_tokens,replica,warmup,refused,preemptions,"
                    "queueing_s,ttft_s,e2e_s,tpot_s";
  // Disaggregated: `replica` is the prefill replica; the decode replica (numbered after the
  // prefill ones; -1: none) and the KV transfer's wait and time.
  csv += dis ? ",decode_replica,kv_wait_s,kv_transfer_s\n" : "\n";
  for (const auto& q : r.requests) {
    const double ttft = q.refused ? 0 : q.first_token_s - q.req.arrival_s;
    const double e2e = q.refused ? 0 : q.finish_s - q.req.arrival_s;
    csv += fmt::format("{},{:.9f},{},{},{},{},{},{},{:.9f},{:.9f},{:.9f},{:.9f}\n", q.req.id,
                       q.req.arrival_s, q.req.input_tokens, q.req.output_tokens, q.replica,
                       int(q.warmup), int(q.refused), q.preemptions,
                       q.refused ? 0 : q.first_scheduled_s - q.req.arrival_s, ttft, e2e,
                       q.req.output_tokens > 1 && !q.refused
                           ? (e2e - ttft) / double(q.req.output_tokens - 1)
                           : 0.0);
    if (dis) {
      const bool moved = q.transfer_start_s >= 0;
      csv.pop_back();
      csv += fmt::format(",{},{:.9f},{:.9f}\n", q.decode_replica,
                         moved ? q.transfer_start_s - q.first_token_s : 0.0,
                         moved ? q.transfer_end_s - q.transfer_start_s : 0.0);
    }
  }
  out.requests_csv = std::move(csv);
  if (o.timeline) out.timeline = timeline_json(r);
  const Json& f = rep["results"];
  const auto g = [&](const char* a, const char* b) { return f[a][b].get<double>(); };
  out.summary_csv = {
      {"spec", spec.name},
      {"rack", cfg.config.rack->name},
      {"model", it.model.name},
      {"layout", it.layout.text()},
      {"replicas", std::to_string(replicas)},
      {"requests", std::to_string(f["requests"]["measured"].get<std::uint64_t>())},
      {"ttft_p50_s", fmt::format("{:.6g}", g("ttft_s", "p50"))},
      {"ttft_p99_s", fmt::format("{:.6g}", g("ttft_s", "p99"))},
      {"tpot_p50_s", fmt::format("{:.6g}", g("tpot_s", "p50"))},
      {"tpot_p99_s", fmt::format("{:.6g}", g("tpot_s", "p99"))},
      {"e2e_p50_s", fmt::format("{:.6g}", g("e2e_s", "p50"))},
      {"output_tokens_per_s", fmt::format("{:.6g}", g("throughput", "output_tokens_per_s"))},
      {"output_tokens_per_s_per_chip",
       fmt::format("{:.6g}", g("throughput", "output_tokens_per_s_per_chip"))},
      {"tokens_per_s_per_user_mean",
       fmt::format("{:.6g}", f["throughput"]["tokens_per_s_per_user"]["mean"].get<double>())},
      {"goodput_fraction", fmt::format("{:.6g}", g("goodput", "fraction"))},
      {"joules_per_output_token", fmt::format("{:.6g}", g("energy", "joules_per_output_token"))},
      {"output_tokens_per_s_per_mw", fmt::format("{:.6g}", g("energy", "output_tokens_per_s_per_mw"))},
      {"preemptions", std::to_string(r.preemptions)},
      {"shapes_simulated", std::to_string(shapes_simulated())}};
  out.text = fmt::format(
      "serve {}: {} on {} ({} x {}, {:.0f} chips), {} requests ({} warm-up, {} refused)\n"
      "  TTFT   p50 {:9.3f} ms  p90 {:9.3f} ms  p99 {:9.3f} ms\n"
      "  TPOT   p50 {:9.3f} ms  p90 {:9.3f} ms  p99 {:9.3f} ms\n"
      "  E2E    p50 {:9.3f} s   p90 {:9.3f} s   p99 {:9.3f} s\n"
      "  queue  p50 {:9.3f} ms  p99 {:9.3f} ms\n"
      "  output {:.1f} tokens/s ({:.2f} per chip), {:.1f} tokens/s per user (mean), input {:.1f} "
      "tokens/s\n"
      "  goodput {:.1f} % of requests within TTFT <= {} ms and TPOT <= {} ms\n"
      "  energy {:.3f} J per output token, {:.0f} output tokens/s per MW ({:.1f} kW mean)\n"
      "  {} iterations, {} preemptions; {} shapes simulated ({}), reuse {:.2f} %\n",
      spec.name, it.model.name, cfg.config.rack->name, replicas, it.layout.text(), chips_used,
      f["requests"]["measured"].get<std::uint64_t>(), f["requests"]["warmup"].get<std::uint64_t>(),
      r.refused,
      g("ttft_s", "p50") * 1e3, g("ttft_s", "p90") * 1e3, g("ttft_s", "p99") * 1e3,
      g("tpot_s", "p50") * 1e3, g("tpot_s", "p90") * 1e3, g("tpot_s", "p99") * 1e3,
      g("e2e_s", "p50"), g("e2e_s", "p90"), g("e2e_s", "p99"), g("queueing_s", "p50") * 1e3,
      g("queueing_s", "p99") * 1e3, g("throughput", "output_tokens_per_s"),
      g("throughput", "output_tokens_per_s_per_chip"),
      f["throughput"]["tokens_per_s_per_user"]["mean"].get<double>(),
      g("throughput", "input_tokens_per_s"), 100 * g("goodput", "fraction"),
      spec.slo.ttft.si * 1e3, spec.slo.tpot.si * 1e3, g("energy", "joules_per_output_token"),
      g("energy", "output_tokens_per_s_per_mw"), g("energy", "mean_power_w") / 1e3,
      r.iterations_total, r.preemptions, shapes_simulated(),
      config::enum_name(spec.timing.mode),
      100 * rep["timing"]["reuse_rate"].get<double>());
  if (dis) {
    const Json& pf = f["pools"]["prefill"];
    const Json& dc = f["pools"]["decode"];
    const Json& kt = f["kv_transfer"];
    out.text += fmt::format(
        "  disaggregated: prefill {} x {} ({} iterations, batch {:.1f}, KV {:.1f} % mean, {:.1f} % "
        "max), decode {} x {} ({} iterations, batch {:.1f}, KV {:.1f} % mean, {:.1f} % max)\n"
        "  KV transfers {} ({:.3f} GB, {:.3f} s in all) over {}: per request p50 {:.3f} ms p90 "
        "{:.3f} ms p99 {:.3f} ms (alone p50 {:.3f} ms), waited for blocks p50 {:.3f} ms p99 "
        "{:.3f} ms\n",
        pf["replicas"].get<int>(), it.layout.text(), pf["iterations"].get<std::uint64_t>(),
        pf["batch_mean"].get<double>(), 100 * pf["kv_occupancy_mean"].get<double>(),
        100 * pf["kv_occupancy_max"].get<double>(), dc["replicas"].get<int>(), decode_layout,
        dc["iterations"].get<std::uint64_t>(), dc["batch_mean"].get<double>(),
        100 * dc["kv_occupancy_mean"].get<double>(), 100 * dc["kv_occupancy_max"].get<double>(),
        kt["transfers"].get<std::uint64_t>(), kt["bytes"].get<double>() / 1e9,
        kt["time_s"].get<double>(), su.transfer->where, kt["transfer_s"]["p50"].get<double>() * 1e3,
        kt["transfer_s"]["p90"].get<double>() * 1e3, kt["transfer_s"]["p99"].get<double>() * 1e3,
        kt["alone_s"]["p50"].get<double>() * 1e3, kt["wait_s"]["p50"].get<double>() * 1e3,
        kt["wait_s"]["p99"].get<double>() * 1e3);
    out.summary_csv.emplace_back("prefill_replicas", std::to_string(prefill_replicas));
    out.summary_csv.emplace_back("decode_replicas", std::to_string(replicas - prefill_replicas));
    out.summary_csv.emplace_back("kv_transfers", std::to_string(kt["transfers"].get<std::uint64_t>()));
    out.summary_csv.emplace_back("kv_transfer_bytes", fmt::format("{:.6g}", kt["bytes"].get<double>()));
    out.summary_csv.emplace_back("kv_transfer_p50_s",
                                 fmt::format("{:.6g}", kt["transfer_s"]["p50"].get<double>()));
    out.summary_csv.emplace_back("kv_transfer_p99_s",
                                 fmt::format("{:.6g}", kt["transfer_s"]["p99"].get<double>()));
    out.summary_csv.emplace_back("decode_layout", decode_layout);
  }
  if (!solve_json.is_null()) {
    out.text += fmt::format(
        "  users at >= {:g} tokens/s per user (p50): {}{} ({} points tried; the figures above are "
        "at {} users)\n",
        o.solve_users_target, solve_json["users"].get<std::uint64_t>(),
        solve_json["capped"].get<bool>() ? " (capped by --solve-max-users)" : "",
        solve_json["points"]["rows"].size(), solve_json["results_users"].get<std::uint64_t>());
    out.summary_csv.emplace_back("solved_users", std::to_string(solve_json["users"].get<std::uint64_t>()));
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace trnsim::serve
