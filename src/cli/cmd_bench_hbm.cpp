// SPDX-License-Identifier: MIT
// `trnsim bench hbm`: drives the HBM of one chip from many concurrent requesters, like the DMA
// queues of a chip, and reports achieved bandwidth, row-buffer behaviour and energy.
//
// Requesters are SystemC threads that take chunks from a shared work list (chunk k = bytes
// [k * chunk, (k + 1) * chunk)), issue them with access() and wait for completion; default 64
// requesters x 64 KiB = 4 MiB in flight, about 850 ns of traffic at 4.9 TB/s, enough to keep all
// 128 pseudo-channels busy. copy reads a chunk, then writes it to a second region. random-read
// makes each chunk a gather of chunk / 64 independent 64 B reads at addresses from a generator
// seeded with sim.seed.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "hbm/hbm_system.hpp"
#include "trnsim/error.hpp"

// libsystemc's main() references sc_main, although trnsim has its own main(). Weak, so whichever
// other translation unit of the CLI also needs one does not clash with this one.
__attribute__((weak)) int sc_main(int, char**) { return 1; }

namespace trnsim::cli {

namespace {

enum class Pattern { seq_read, seq_write, copy, random_read };
constexpr std::pair<Pattern, const char*> kPatterns[] = {{Pattern::seq_read, "seq-read"},
                                                         {Pattern::seq_write, "seq-write"},
                                                         {Pattern::copy, "copy"},
                                                         {Pattern::random_read, "random-read"}};
constexpr std::uint64_t kLine = 64;  // bytes per random-read request

struct HbmBenchArgs {
  std::string pattern = "seq-read";
  std::string bytes = "256MiB";
  std::string chunk = "64KiB";
  int requesters = 64;
};

Pattern parse_pattern(const std::string& s) {
  for (const auto& [p, name] : kPatterns) {
    if (s == name) return p;
  }
  throw InputError(fmt::format(
      "--pattern: expected one of seq-read, seq-write, copy, random-read, got \"{}\"", s));
}

const char* pattern_name(Pattern p) {
  for (const auto& [q, name] : kPatterns) {
    if (p == q) return name;
  }
  return "?";
}

struct Plan {
  Pattern pattern{};
  std::uint64_t bytes = 0, chunk = 0, seed = 1;
  int requesters = 0;
};

// One requester: takes the next chunk until none is left.
class Requesters : public sc_core::sc_module {
 public:
  Requesters(const sc_core::sc_module_name& name, model::HbmSystem& hbm, const Plan& plan)
      : sc_core::sc_module(name), hbm_(hbm), plan_(plan), rng_(plan.seed) {
    chunks_ = (plan.bytes + plan.chunk - 1) / plan.chunk;
    // Copy destination: a second region after the source, aligned to a whole chunk.
    dst_ = chunks_ * plan.chunk;
    for (int i = 0; i < plan.requesters; ++i) {
      sc_core::sc_spawn([this] { run(); }, fmt::format("q{}", i).c_str());
    }
  }
  std::uint64_t requests() const { return requests_; }

 private:
  void wait_until(const sc_core::sc_time& t) {
    if (t > sc_core::sc_time_stamp()) wait(t - sc_core::sc_time_stamp());
  }
  void run() {
    while (next_ < chunks_) {
      const std::uint64_t k = next_++;
      const std::uint64_t addr = k * plan_.chunk;
      const std::uint64_t len = std::min(plan_.chunk, plan_.bytes - addr);
      switch (plan_.pattern) {
        case Pattern::seq_read:
        case Pattern::seq_write:
          ++requests_;
          wait_until(hbm_.access({addr, len, plan_.pattern == Pattern::seq_write}));
          break;
        case Pattern::copy:
          requests_ += 2;
          wait_until(hbm_.access({addr, len, false}));
          wait_until(hbm_.access({dst_ + addr, len, true}));
          break;
        case Pattern::random_read: {
          sc_core::sc_time last = sc_core::SC_ZERO_TIME;
          const std::uint64_t lines = hbm_.geometry().capacity() / kLine;
          for (std::uint64_t b = 0; b < len; b += kLine) {
            ++requests_;
            last = std::max(last, hbm_.access({(rng_() % lines) * kLine, kLine, false}));
          }
          wait_until(last);
          break;
        }
      }
    }
  }

  model::HbmSystem& hbm_;
  Plan plan_;
  std::mt19937_64 rng_;  // one stream for all requesters: the order of draws is deterministic
  std::uint64_t chunks_ = 0, next_ = 0, dst_ = 0, requests_ = 0;
};

nlohmann::json measure(const config::ChipParams& chip, const Plan& plan) {
  model::HbmSystem hbm("hbm", chip.hbm);
  const auto& geo = hbm.geometry();
  const std::uint64_t need = plan.pattern == Pattern::copy
                                 ? 2 * ((plan.bytes + plan.chunk - 1) / plan.chunk) * plan.chunk
                                 : plan.bytes;
  if (plan.pattern != Pattern::random_read && need > geo.capacity()) {
    throw InputError(fmt::format("--bytes: {} needs {} B of HBM, the chip has {} B",
                                 pattern_name(plan.pattern), need, geo.capacity()));
  }
  Requesters req("bench", hbm, plan);
  sc_core::sc_start();
  const sc_core::sc_time end = sc_core::sc_time_stamp();
  hbm.account_until(end);

  double hits = 0, misses = 0, conflicts = 0, acts = 0, refreshes = 0, moved = 0;
  for (int s = 0; s < hbm.stacks(); ++s) {
    for (const auto& st : hbm.stack(s).stats().all()) {
      if (st.name == "row_hits") hits += st.value;
      if (st.name == "row_misses") misses += st.value;
      if (st.name == "row_conflicts") conflicts += st.value;
      if (st.name == "activates") acts += st.value;
      if (st.name == "refreshes") refreshes += st.value;
      if (st.name == "bytes_read" || st.name == "bytes_written") moved += st.value;
    }
  }
  const double seconds = end.to_seconds();
  const auto e = model::collect_energy(model::from_sc(end), &hbm);
  nlohmann::json by_cat = nlohmann::json::object();
  for (const auto& [cat, j] : e.by_category_joules) by_cat[cat] = j;
  by_cat["hbm_background"] = e.static_.si;
  const double achieved = seconds > 0 ? moved / seconds : 0;
  return {{"pattern", pattern_name(plan.pattern)},
          {"chip", chip.name},
          {"bytes", plan.bytes},
          {"bytes_moved", moved},
          {"requesters", plan.requesters},
          {"chunk_bytes", plan.chunk},
          {"requests", req.requests()},
          {"time_ns", seconds * 1e9},
          {"achieved_bytes_per_s", achieved},
          {"peak_bytes_per_s", hbm.peak().si},
          {"efficiency", achieved / hbm.peak().si},
          {"row_hit_rate", hits / std::max(1.0, hits + misses + conflicts)},
          {"row_hits", hits},
          {"row_misses", misses},
          {"row_conflicts", conflicts},
          {"activates", acts},
          {"refreshes", refreshes},
          {"refresh_mode", chip.hbm.refresh_mode == config::RefreshMode::per_bank ? "per_bank"
                                                                                  : "all_bank"},
          {"energy_j", e.total().si},
          {"dynamic_energy_j", e.dynamic.si},
          {"static_energy_j", e.static_.si},
          {"pj_per_bit", moved > 0 ? e.total().si / (moved * 8.0) * 1e12 : 0.0},
          {"energy_by_category_j", by_cat},
          {"tck_ns", geo.tck_seconds() * 1e9},
          {"pin_rate_gbps", geo.pin_rate_bits_per_s() * 1e-9}};
}

void print_table(const nlohmann::json& j) {
  fmt::print("HBM benchmark: {} on {}\n", j["pattern"].get<std::string>(),
             j["chip"].get<std::string>());
  fmt::print("  bytes                {} ({} moved over the DRAM bus)\n",
             format(Bytes(j["bytes"].get<double>())), format(Bytes(j["bytes_moved"].get<double>())));
  fmt::print("  requesters x chunk   {} x {} ({} requests)\n", j["requesters"].get<int>(),
             format(Bytes(j["chunk_bytes"].get<double>())), j["requests"].get<std::uint64_t>());
  fmt::print("  simulated time       {:.3f} us\n", j["time_ns"].get<double>() * 1e-3);
  fmt::print("  achieved bandwidth   {:.1f} GB/s\n", j["achieved_bytes_per_s"].get<double>() * 1e-9);
  fmt::print("  peak bandwidth       {:.1f} GB/s (tCK {:.4f} ns, {:.3f} Gb/s per pin)\n",
             j["peak_bytes_per_s"].get<double>() * 1e-9, j["tck_ns"].get<double>(),
             j["pin_rate_gbps"].get<double>());
  fmt::print("  efficiency           {:.1f} %\n", j["efficiency"].get<double>() * 100);
  fmt::print("  row hit rate         {:.1f} % ({:.0f} activates, {:.0f} refreshes, {})\n",
             j["row_hit_rate"].get<double>() * 100, j["activates"].get<double>(),
             j["refreshes"].get<double>(), j["refresh_mode"].get<std::string>());
  fmt::print("  energy               {:.3f} mJ ({:.3f} dynamic + {:.3f} background)\n",
             j["energy_j"].get<double>() * 1e3, j["dynamic_energy_j"].get<double>() * 1e3,
             j["static_energy_j"].get<double>() * 1e3);
  fmt::print("  energy per bit       {:.3f} pJ/bit\n", j["pj_per_bit"].get<double>());
}

}  // namespace

void register_bench_hbm(CLI::App& bench, Registry& reg) {
  auto* sub = bench.add_subcommand(
      "hbm", "HBM bandwidth, row-buffer hit rate and energy of one chip under many requesters");
  auto opts = std::make_shared<BenchOptions>();
  auto args = std::make_shared<HbmBenchArgs>();
  add_bench_options(sub, *opts);
  sub->add_option("--pattern", args->pattern, "seq-read, seq-write, copy or random-read")
      ->capture_default_str();
  sub->add_option("--bytes", args->bytes, "bytes to read/write/copy (\"256MiB\" or a number)")
      ->capture_default_str();
  sub->add_option("--requesters", args->requesters, "concurrent requester threads")
      ->capture_default_str();
  sub->add_option("--chunk", args->chunk, "bytes per request (random-read: per gather)")
      ->capture_default_str();
  reg.add(sub, [opts, args]() -> int {
    Plan plan;
    plan.pattern = parse_pattern(args->pattern);
    plan.bytes = parse_size(args->bytes, "--bytes");
    plan.chunk = parse_size(args->chunk, "--chunk");
    if (args->requesters < 1) {
      throw InputError(
          fmt::format("--requesters: expected an integer >= 1, got {}", args->requesters));
    }
    if (plan.pattern == Pattern::random_read && plan.chunk % kLine != 0) {
      throw InputError(fmt::format(
          "--chunk: random-read gathers 64 B lines: expected a multiple of 64, got {}",
          plan.chunk));
    }
    plan.requesters = args->requesters;
    const auto loaded = opts->load();
    const auto& chip = BenchOptions::chip_of(loaded, opts->config);
    plan.seed = loaded.config.sim.seed;
    const auto j = run_isolated([&] { return measure(chip, plan); });
    if (opts->json) {
      fmt::print("{}\n", j.dump(2));
    } else {
      print_table(j);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
