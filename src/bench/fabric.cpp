// SPDX-License-Identifier: MIT
// `trnsim bench ping` and `trnsim bench traffic`: latency and throughput of the fabric model on
// a rack preset (docs/bench.md).
//
// ping sends one message between every ordered pair of chips, one pair at a time on an otherwise
// idle network (sequentially in one simulation), and reports the latency distribution and the
// breakdown of the worst pair. traffic drives the whole fabric: uniform random messages with
// Poisson arrivals at a fraction of each chip's injection bandwidth (measured in a fixed window
// after a warm-up), an all-to-all, or a bisection exchange.
#include "trnsim/bench/fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/activity.hpp"
#include "common/histogram.hpp"
#include "internal.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::bench {

namespace {

using nlohmann::json;
using topo::ChipId;

constexpr std::uint64_t kMinBulk = 1024, kMaxBulk = 256ULL << 20;

std::uint64_t parse_byte_count(const std::string& s, const char* option) {
  return parse_size(s, option, 0);
}

Duration parse_positive_duration(const std::string& s, const char* option) {
  Duration d{};
  try {
    d = parse_duration(s);
  } catch (const InputError&) {
    throw InputError(fmt::format("{}: expected a duration > 0 such as \"20us\", got \"{}\"",
                                 option, s));
  }
  if (!(d.si > 0)) {
    throw InputError(fmt::format("{}: expected a duration > 0 such as \"20us\", got \"{}\"",
                                 option, s));
  }
  return d;
}

// What every measurement needs: the loaded rack, its validated topology and its fabric's plan.
struct Rack {
  config::LoadedConfig loaded;
  topo::Topology topo;
  resolve::FabricPlan fabric;
};

Rack load_rack(const ConfigSource& o) {
  auto loaded = o.load();
  if (!loaded.config.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: fabric benchmarks need a rack preset",
                                  loaded.path));
  }
  resolve::Plan plan = resolve::plan(loaded, resolve::Purpose::bench_fabric);
  Rack r{std::move(loaded), std::move(*plan.topology), std::move(*plan.fabric)};
  if (r.topo.chip_count() < 2) {
    throw InputError(fmt::format("{}: fabric benchmarks need at least 2 chips, the rack has {}",
                                 r.loaded.path, r.topo.chip_count()));
  }
  return r;
}

// The network of the rack, resolved and built through the registry: the packet fabric unless the
// config chooses another model (/rack/fabric/model, /sim/fidelity).
struct Net {
  resolve::FabricPlan plan;
  std::unique_ptr<model::Network> net;
  // The implementation's packet probe (empty for a network without packets).
  std::function<void(model::Network&, registry::PacketProbe)> packet_probe;
};

Net make_fabric(const Rack& rack) {
  Net n{rack.fabric, nullptr, {}};
  registry::Registry registry;
  registry::register_builtin_models(registry);
  n.net = registry::make_network(registry, "fabric", rack.topo, n.plan, {}, &rack.loaded.provenance);
  n.packet_probe = registry.get(registry::Role::network, n.plan.model, "/rack/fabric/model",
                                &rack.loaded.provenance).packet_probe;
  return n;
}

// Simulation and host figures every measurement reports.
json run_figures(const Net& n, double wall, const sc_core::sc_time& end) {
  const auto t = n.net->totals();
  return {{"simulated_ns", end.to_seconds() * 1e9},
          {"wall_s", wall},
          {"events", t.events},
          {"events_per_s", wall > 0 ? double(t.events) / wall : 0.0},
          {"packets", t.packets_delivered},
          {"vcs", n.plan.vcs},
          {"packet_bytes", n.plan.packet_bytes},
          {"flit_bytes", n.plan.flit_bytes},
          {"credit_stall_ns", t.credit_stall_ns},
          {"bytes_injected", t.bytes_injected},
          {"bytes_delivered", t.bytes_delivered}};
}

json breakdown_json(const model::LatencyBreakdown& b) {
  return {{"total", b.total.si * 1e9},           {"endpoint", b.endpoint.si * 1e9},
          {"serialisation", b.serialisation.si * 1e9}, {"link", b.link.si * 1e9},
          {"switch", b.switching.si * 1e9},     {"chip_forwarding", b.forwarding.si * 1e9},
          {"queueing", b.queueing.si * 1e9}};
}

// ---- ping ---------------------------------------------------------------------------------------

class PingDriver : public sc_core::sc_module {
 public:
  PingDriver(const sc_core::sc_module_name& name, model::Network& f, const topo::Topology& t,
             std::uint64_t bytes)
      : sc_core::sc_module(name), f_(f), topo_(t), bytes_(bytes) {
    sc_core::sc_spawn([this] { run(); }, "run");
  }
  std::vector<double> latencies_ns;
  model::TransferRecord worst;

 private:
  void run() {
    const auto n = std::uint32_t(topo_.chip_count());
    for (std::uint32_t a = 0; a < n; ++a) {
      for (std::uint32_t b = 0; b < n; ++b) {
        if (a == b) continue;
        const model::TransferHandle h = f_.start({{a}, {b}, bytes_, std::uint64_t(a) * n + b, 0, 0});
        if (!h.done()) wait(h.done_event());
        const auto& r = h.record();
        const double ns = r.latency().si * 1e9;
        if (latencies_ns.empty() || ns > worst.latency().si * 1e9) worst = r;
        latencies_ns.push_back(ns);
      }
    }
  }
  model::Network& f_;
  const topo::Topology& topo_;
  std::uint64_t bytes_;
};

json measure_ping(const ConfigSource& o, std::uint64_t bytes) {
  const Rack rack = load_rack(o);
  const Net fab = make_fabric(rack);
  PingDriver driver("ping", *fab.net, rack.topo, bytes);
  const auto t0 = std::chrono::steady_clock::now();
  model::run_bounded();
  fab.net->rethrow_error();
  const double wall = seconds_since(t0);
  const auto end = sc_core::sc_time_stamp();
  fab.net->finish(end);
  const auto& v = driver.latencies_ns;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  const model::Histogram hist(v);
  const auto& w = driver.worst;
  return {{"benchmark", "ping"},
          {"rack", rack.loaded.config.rack->name},
          {"chips", rack.topo.chip_count()},
          {"bytes", bytes},
          {"pairs", v.size()},
          {"latency_ns",
           {{"min", hist.quantile(0)},
            {"median", hist.quantile(0.5)},
            {"p99", hist.quantile(0.99)},
            {"max", hist.max()},
            {"mean", mean}}},
          {"worst",
           {{"src", w.request.src.v},
            {"dst", w.request.dst.v},
            {"hops", w.last_packet.hops},
            {"breakdown_ns", breakdown_json(w.last_packet)}}},
          {"run", run_figures(fab, wall, end)}};
}

// ---- traffic ------------------------------------------------------------------------------------

enum class Pattern { uniform, all_to_all, bisection };

struct TrafficPlan {
  Pattern pattern = Pattern::uniform;
  double load = 0.5;
  std::uint64_t bytes = 0;  // 0 for uniform: one packet
  Duration window{}, warmup{};
};

Pattern parse_pattern(const std::string& s) {
  if (s == "uniform") return Pattern::uniform;
  if (s == "all-to-all") return Pattern::all_to_all;
  if (s == "bisection") return Pattern::bisection;
  throw InputError(fmt::format(
      "--pattern: expected one of uniform, all-to-all, bisection, got \"{}\"", s));
}

// Uniform random traffic: every chip issues messages to uniformly chosen other chips with
// exponential inter-arrival times (Poisson), each chip from its own generator seeded from
// sim.seed and the chip id.
class UniformDriver : public sc_core::sc_module {
 public:
  UniformDriver(const sc_core::sc_module_name& name, const Net& net, const topo::Topology& topo,
                const TrafficPlan& plan, std::uint64_t msg_bytes, std::uint64_t seed)
      : sc_core::sc_module(name), f_(*net.net), plan_(plan), msg_(msg_bytes) {
    const auto n = std::uint32_t(topo.chip_count());
    window_start_ = model::to_sc(plan.warmup);
    window_end_ = model::to_sc(plan.warmup + plan.window);
    for (std::uint32_t c = 0; c < n; ++c) {
      sc_core::sc_spawn([this, c, n, seed] { run(c, n, seed); }, fmt::format("chip{}", c).c_str());
    }
    // The packet fabric counts bytes as packets arrive; another network as transfers complete.
    if (net.packet_probe) {
      per_packet_ = true;
      net.packet_probe(f_, [this](const registry::PacketEvent& p) {
        if (p.delivered >= window_start_ && p.delivered < window_end_) {
          delivered_in_window += double(p.payload);
        }
      });
    }
  }
  std::vector<double> latencies_ns;
  double delivered_in_window = 0;
  std::uint64_t issued_in_window = 0;

 private:
  void run(std::uint32_t c, std::uint32_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + c);
    const double rate = plan_.load * f_.injection_bandwidth({c}).si / double(msg_);  // msg/s
    std::uint64_t k = 0;
    for (;;) {
      // Inverse-CDF exponential draw; u in (0, 1].
      const double u = (double(rng() >> 11) + 1.0) * 0x1.0p-53;
      wait(model::to_sc(Duration(-std::log(u) / rate)));
      const auto t = model::now();
      if (t >= window_end_) return;
      std::uint32_t d = std::uint32_t(rng() % (n - 1));
      if (d >= c) ++d;
      const bool counted = t >= window_start_;
      if (counted) ++issued_in_window;
      f_.start({{c}, {d}, msg_, (std::uint64_t(c) << 32) | k++, 0, 0},
               [this, counted](const model::TransferRecord& r) {
                 if (counted) latencies_ns.push_back(r.latency().si * 1e9);
                 const auto at = model::now();
                 if (!per_packet_ && at >= window_start_ && at < window_end_) {
                   delivered_in_window += double(r.request.bytes);
                 }
               });
    }
  }
  model::Network& f_;
  bool per_packet_ = false;
  TrafficPlan plan_;
  std::uint64_t msg_;
  sc_core::sc_time window_start_, window_end_;
};

// All transfers of the pattern issued at time 0.
class BulkDriver : public sc_core::sc_module {
 public:
  BulkDriver(const sc_core::sc_module_name& name, model::Network& f, const topo::Topology& topo,
             Pattern pattern, std::uint64_t bytes)
      : sc_core::sc_module(name) {
    sc_core::sc_spawn(
        [this, &f, &topo, pattern, bytes] {
          const auto n = std::uint32_t(topo.chip_count());
          auto done = [this](const model::TransferRecord& r) {
            if (r.completed > last) last = r.completed;
          };
          if (pattern == Pattern::all_to_all) {
            // Each chip starts with the next chip up, so that no chip is everyone's first.
            for (std::uint32_t k = 1; k < n; ++k) {
              for (std::uint32_t a = 0; a < n; ++a) {
                const std::uint32_t b = (a + k) % n;
                f.start({{a}, {b}, bytes, std::uint64_t(a) * n + b, 0, 0}, done);
              }
            }
          } else {
            for (std::uint32_t a = 0; a < n / 2; ++a) {
              const std::uint32_t b = a + n / 2;
              f.start({{a}, {b}, bytes, std::uint64_t(a) * n + b, 0, 0}, done);
            }
          }
        },
        "issue");
  }
  sc_core::sc_time last;
};

// Bytes per second per chip that a bisection of `bis` bytes per second allows when each of `n`
// chips sends equally to every other: each chip of one half sends to the n/2 chips of the other,
// i.e. n^2/4 messages per direction.
double all_to_all_bisection_bound(double bis, std::size_t n) {
  const double half = double(n / 2), other = double(n - n / 2);
  return bis * double(n - 1) / (half * other);
}

// The uniform pattern's figures, added to `j`: offered and accepted load, latency.
void measure_uniform(const Rack& rack, const Net& fab, const TrafficPlan& plan, double inj_sum,
                     json& j) {
  const auto n = rack.topo.chip_count();
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t msg = plan.bytes ? plan.bytes : fab.plan.packet_bytes;
  UniformDriver driver("uniform", fab, rack.topo, plan, msg, rack.loaded.config.sim.seed);
  model::run_bounded();
  fab.net->rethrow_error();
  const double wall = seconds_since(t0);
  const auto end = sc_core::sc_time_stamp();
  fab.net->finish(end);
  const auto& v = driver.latencies_ns;
  const model::Histogram hist(v);
  double mean = 0;
  for (double x : v) mean += x;
  mean = v.empty() ? 0 : mean / double(v.size());
  const double accepted = driver.delivered_in_window / plan.window.si / inj_sum;
  // Uniform random traffic sends (n/2)/(n-1) of each chip's bytes across the bisection, as an
  // all-to-all does: the same per-chip bound, as a fraction of injection bandwidth.
  const double bis_bound = all_to_all_bisection_bound(topo::summarize(rack.topo).bisection.si, n);
  const double bound_load = std::min(1.0, bis_bound * double(n) / inj_sum);
  j.update({{"pattern", "uniform"},
            {"offered_load", plan.load},
            {"message_bytes", msg},
            {"warmup_ns", plan.warmup.si * 1e9},
            {"window_ns", plan.window.si * 1e9},
            {"messages_measured", v.size()},
            {"accepted_load", accepted},
            {"bound_load", bound_load},
            {"accepted_bytes_per_s_per_chip", driver.delivered_in_window / plan.window.si / double(n)},
            {"latency_ns", {{"mean", mean}, {"p99", hist.quantile(0.99)},
                            {"max", hist.max()}}},
            {"run", run_figures(fab, wall, end)}});
}

// The all-to-all or bisection pattern's figures, added to `j`: completion time and bandwidth
// against the topology's bounds.
void measure_bulk(const Rack& rack, const Net& fab, const TrafficPlan& plan, double inj_min,
                  json& j) {
  const auto n = rack.topo.chip_count();
  const auto t0 = std::chrono::steady_clock::now();
  BulkDriver driver("bulk", *fab.net, rack.topo, plan.pattern, plan.bytes);
  model::run_bounded();
  fab.net->rethrow_error();
  const double wall = seconds_since(t0);
  const auto end = sc_core::sc_time_stamp();
  fab.net->finish(end);
  const double t = driver.last.to_seconds();
  const auto summary = topo::summarize(rack.topo);
  const double bis = summary.bisection.si;
  j["bytes_per_pair"] = plan.bytes;
  j["completion_ns"] = t * 1e9;
  j["bisection_bytes_per_s"] = bis;
  if (plan.pattern == Pattern::all_to_all) {
    const double per_chip = double(n - 1) * double(plan.bytes) / t;
    // Each chip's n-1 messages must leave through its links, and cross the bisection.
    const double bis_bound = all_to_all_bisection_bound(bis, n);
    const double bound = std::min(inj_min, bis_bound);
    j.update({{"pattern", "all-to-all"},
              {"bytes_per_chip", double(n - 1) * double(plan.bytes)},
              {"achieved_bytes_per_s_per_chip", per_chip},
              {"injection_bound_bytes_per_s", inj_min},
              {"bisection_bound_bytes_per_s", bis_bound},
              {"bound_bytes_per_s", bound},
              {"fraction_of_bound", per_chip / bound},
              {"run", run_figures(fab, wall, end)}});
  } else {
    const double achieved = double(n / 2) * double(plan.bytes) / t;
    // Each sender is also limited by its own injection bandwidth.
    const double bound = std::min(bis, double(n / 2) * inj_min);
    j.update({{"pattern", "bisection"},
              {"pairs", n / 2},
              {"achieved_bytes_per_s", achieved},
              {"injection_bound_bytes_per_s", double(n / 2) * inj_min},
              {"fraction_of_bisection", achieved / bis},
              {"fraction_of_bound", achieved / bound},
              {"run", run_figures(fab, wall, end)}});
  }
}

// Refuses a pattern whose messages would exhaust the budgets (/sim/memory_budget,
// /sim/work_budget) before any is sent: the uniform pattern issues load x injection bandwidth x
// (warm-up + window) / message bytes messages, each possibly in flight at the end (past
// saturation they queue); the others n (n - 1) or n / 2 transfers of --bytes. Events and bytes
// are counted as a run's estimate counts a message (run/estimate.hpp).
void check_traffic_work(const Rack& rack, const Net& fab, const TrafficPlan& plan, double inj_sum) {
  const double n = double(rack.topo.chip_count());
  const double packet = double(std::max<std::uint64_t>(1, fab.plan.packet_bytes));
  double messages = 0, msg = double(plan.bytes);
  std::string what, change;
  if (plan.pattern == Pattern::uniform) {
    if (msg == 0) msg = packet;
    messages = plan.load * inj_sum * (plan.warmup.si + plan.window.si) / msg;
    what = fmt::format("bench traffic --bytes {} --window {:.4g}s --warmup {:.4g}s --load {}", msg,
                       plan.window.si, plan.warmup.si, plan.load);
    change = "use larger --bytes, a shorter --window or --warmup, or a lower --load";
  } else {
    messages = plan.pattern == Pattern::all_to_all ? n * (n - 1) : std::floor(n / 2);
    what = fmt::format("bench traffic --pattern {} --bytes {}",
                       plan.pattern == Pattern::all_to_all ? "all-to-all" : "bisection", msg);
    change = "use smaller --bytes";
  }
  const bool packets = bool(fab.packet_probe);  // a network with packets
  const double per_message = std::ceil(msg / packet);
  const double events =
      packets ? messages * per_message * run::kEventsPerPacketHop * double(fab.plan.diameter + 1)
              : messages * run::kEventsPerMessage;
  const double bytes = messages * (run::kBenchBytesPerMessage + (packets ? run::kBytesPerPacket : 0));
  run::check_budgets(events, bytes, rack.loaded.config.sim, what,
                     fmt::format("{:.4g} messages of {:.4g} B", messages, msg), change);
}

json measure_traffic(const ConfigSource& o, const TrafficPlan& plan) {
  const Rack rack = load_rack(o);
  const Net fab = make_fabric(rack);
  const auto n = rack.topo.chip_count();
  double inj_min = 1e300, inj_sum = 0;
  for (std::uint32_t c = 0; c < n; ++c) {
    const double b = fab.net->injection_bandwidth({c}).si;
    inj_min = std::min(inj_min, b);
    inj_sum += b;
  }
  json j = {{"benchmark", "traffic"},
            {"rack", rack.loaded.config.rack->name},
            {"chips", n},
            {"injection_bytes_per_s_min", inj_min}};
  check_traffic_work(rack, fab, plan, inj_sum);
  if (plan.pattern == Pattern::uniform) {
    measure_uniform(rack, fab, plan, inj_sum, j);
  } else {
    measure_bulk(rack, fab, plan, inj_min, j);
  }
  return j;
}

// Checks the arguments of `trnsim bench traffic` and turns them into a plan.
TrafficPlan plan_traffic(const TrafficArgs& a) {
  TrafficPlan plan;
  plan.pattern = parse_pattern(a.pattern);
  if (plan.pattern != Pattern::uniform) {
    const std::pair<bool, const char*> uniform_only[] = {{a.given.load, "--load"},
                                                         {a.given.sweep, "--sweep"},
                                                         {a.given.window, "--window"},
                                                         {a.given.warmup, "--warmup"}};
    for (const auto& [given, option] : uniform_only) {
      if (given) {
        throw InputError(
            fmt::format("{}: only for --pattern uniform, not \"{}\"", option, a.pattern));
      }
    }
    plan.bytes = a.bytes.empty() ? (1ULL << 20) : parse_byte_count(a.bytes, "--bytes");
    if (plan.bytes < kMinBulk || plan.bytes > kMaxBulk) {
      throw InputError(fmt::format(
          "--bytes: expected bytes per pair from 1KiB to 256MiB, got {}", plan.bytes));
    }
    return plan;
  }
  if (a.sweep && a.given.load) {
    throw InputError("--load: not with --sweep (the sweep sets the load)");
  }
  if (!(a.load > 0 && a.load <= 1)) {
    throw InputError(fmt::format("--load: expected a fraction in (0, 1], got {}", a.load));
  }
  plan.load = a.load;
  plan.bytes = a.bytes.empty() ? 0 : parse_byte_count(a.bytes, "--bytes");
  if (!a.bytes.empty() && (plan.bytes < 1 || plan.bytes > kMaxBulk)) {
    throw InputError(
        fmt::format("--bytes: expected a message size from 1 B to 256MiB, got {}", plan.bytes));
  }
  plan.window = parse_positive_duration(a.window, "--window");
  plan.warmup = parse_positive_duration(a.warmup, "--warmup");
  return plan;
}

// Uniform traffic at loads 0.1, 0.2, ... 1.0, one child each, and where it saturates.
json traffic_sweep(const ConfigSource& o, const TrafficPlan& plan) {
  json points = json::array();
  json first;
  std::optional<double> sat_load;
  double sat_tp = 0;
  for (int k = 1; k <= 10; ++k) {
    TrafficPlan p = plan;
    p.load = k / 10.0;
    const auto j = run_isolated([&] { return measure_traffic(o, p); });
    if (k == 1) first = j;
    sat_tp = std::max(sat_tp, j["accepted_load"].get<double>());
    if (!sat_load && j["accepted_load"].get<double>() < 0.95 * p.load) sat_load = p.load;
    points.push_back(j);
  }
  return {{"benchmark", "traffic"},
          {"pattern", "uniform"},
          {"sweep", true},
          {"rack", first["rack"]},
          {"chips", first["chips"]},
          {"message_bytes", first["message_bytes"]},
          {"saturation_throughput", sat_tp},
          {"bound_load", first["bound_load"]},
          {"saturation_fraction_of_bound", sat_tp / first["bound_load"].get<double>()},
          {"saturation_load", sat_load ? json(*sat_load) : json(nullptr)},
          {"points", points}};
}

}  // namespace

Json ping(const ConfigSource& config, const PingArgs& a) {
  const std::uint64_t b = parse_byte_count(a.bytes, "--bytes");
  if (b > kMaxBulk) {
    throw InputError(fmt::format("--bytes: expected at most 256MiB, got {}", b));
  }
  return run_isolated([&] { return measure_ping(config, b); });
}

Json traffic(const ConfigSource& config, const TrafficArgs& a) {
  const TrafficPlan plan = plan_traffic(a);
  if (plan.pattern == Pattern::uniform && a.sweep) return traffic_sweep(config, plan);
  return run_isolated([&] { return measure_traffic(config, plan); });
}

}  // namespace trnsim::bench
