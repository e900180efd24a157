// SPDX-License-Identifier: MIT
// `trnsim bench hbm`: drives the HBM of one chip from many concurrent requesters, like the DMA
// queues of a chip, and reports achieved bandwidth, row-buffer behaviour and energy.
//
// Requesters are SystemC threads that take chunks from a shared work list (chunk k = bytes
// [k * chunk, (k + 1) * chunk)), issue them with access() and wait for completion; default 64
// requesters x 64 KiB = 4 MiB in flight, about 850 ns of traffic at 4.9 TB/s, enough to keep all
// 128 pseudo-channels busy. copy reads a chunk, then writes it to a second region. random-read
// makes each chunk a gather of chunk / 64 independent 64 B reads at addresses from a generator
// seeded with sim.seed. streams replaces the shared list by independent sequential streams at
// aligned offsets, the way DMA engines read: it exposes address-map conflicts (streams moving
// through the pseudo-channels in lockstep, regions whose rows collide on the same banks).
#include "trnsim/bench/hbm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/activity.hpp"
#include "hbm/hbm_system.hpp"
#include "internal.hpp"
#include "trnsim/error.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/resolve/resolve.hpp"

namespace trnsim::bench {

namespace {

enum class Pattern { seq_read, seq_write, copy, random_read, streams };
constexpr std::pair<Pattern, const char*> kPatterns[] = {{Pattern::seq_read, "seq-read"},
                                                         {Pattern::seq_write, "seq-write"},
                                                         {Pattern::copy, "copy"},
                                                         {Pattern::random_read, "random-read"},
                                                         {Pattern::streams, "streams"}};
constexpr std::uint64_t kLine = 64;  // bytes per random-read request

Pattern parse_pattern(const std::string& s) {
  for (const auto& [p, name] : kPatterns) {
    if (s == name) return p;
  }
  throw InputError(fmt::format(
      "--pattern: expected one of seq-read, seq-write, copy, random-read, streams, got \"{}\"",
      s));
}

const char* pattern_name(Pattern p) {
  for (const auto& [q, name] : kPatterns) {
    if (p == q) return name;
  }
  return "?";
}

// --pattern streams: stream i (of `requesters`) reads `per_stream` bytes from base(i), and with
// a second region alternately from second(i), with `depth` requests in flight.
struct Streams {
  std::uint64_t per_stream = 0, stride = 0, group_stride = 0;
  int group = 1, depth = 1;
  std::optional<std::uint64_t> second_base;
  // Highest end address of any stream's first and second region; checked against the HBM
  // capacity once the chip is known (resolve_streams() has ruled out overflow).
  std::uint64_t end = 0, second_end = 0;
  std::string end_options;  // the options that set `end`, for the capacity error

  std::uint64_t base(int i) const {
    return std::uint64_t(i / group) * group_stride + std::uint64_t(i % group) * stride;
  }
  std::uint64_t second(int i) const { return *second_base + std::uint64_t(i % group) * stride; }
};

struct Plan {
  Pattern pattern{};
  std::uint64_t bytes = 0, chunk = 0, seed = 1;
  int requesters = 0;
  Streams streams;
};

// One requester: takes the next chunk until none is left.
class Requesters : public sc_core::sc_module {
 public:
  Requesters(const sc_core::sc_module_name& name, model::HbmSystem& hbm, const Plan& plan)
      : sc_core::sc_module(name), hbm_(hbm), plan_(plan), rng_(plan.seed) {
    chunks_ = (plan.bytes + plan.chunk - 1) / plan.chunk;
    // Copy destination: a second region after the source, aligned to a whole chunk.
    dst_ = chunks_ * plan.chunk;
    if (plan.pattern == Pattern::streams) {
      const auto& st = plan.streams;
      stream_chunks_ = (st.per_stream + plan.chunk - 1) / plan.chunk;
      if (st.second_base) stream_chunks_ *= 2;
      stream_next_.assign(std::size_t(plan.requesters), 0);
      for (int i = 0; i < plan.requesters; ++i) {
        for (int d = 0; d < st.depth; ++d) {
          sc_core::sc_spawn([this, i] { run_stream(i); }, fmt::format("s{}_{}", i, d).c_str());
        }
      }
      return;
    }
    for (int i = 0; i < plan.requesters; ++i) {
      sc_core::sc_spawn([this] { run(); }, fmt::format("q{}", i).c_str());
    }
  }
  std::uint64_t requests() const { return requests_; }

 private:
  void wait_until(const sc_core::sc_time& t) {
    if (t > sc_core::sc_time_stamp()) wait(t - sc_core::sc_time_stamp());
  }
  // One of the `depth` threads of stream i: takes the stream's next chunk until none is left.
  // With a second region, the stream's chunks alternate: own chunk j, then second-region chunk j.
  void run_stream(int i) {
    const auto& st = plan_.streams;
    std::uint64_t& next = stream_next_[std::size_t(i)];
    while (next < stream_chunks_) {
      const std::uint64_t k = next++;
      const bool second = st.second_base && k % 2 == 1;
      const std::uint64_t off = (st.second_base ? k / 2 : k) * plan_.chunk;
      const std::uint64_t len = std::min(plan_.chunk, st.per_stream - off);
      ++requests_;
      wait_until(hbm_.access({(second ? st.second(i) : st.base(i)) + off, len, false}));
    }
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
        case Pattern::streams:
          break;  // run_stream()
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
  std::uint64_t stream_chunks_ = 0;        // streams: requests per stream
  std::vector<std::uint64_t> stream_next_;  // streams: each stream's next request
};

Json measure(const resolve::ChipPlan& chip_plan, const Plan& plan, const model::PowerModel& power) {
  const config::ChipParams& chip = chip_plan.params;
  model::HbmSystem hbm("hbm", chip_plan.hbm);
  const auto& geo = hbm.geometry();
  const std::uint64_t need = plan.pattern == Pattern::copy
                                 ? 2 * ((plan.bytes + plan.chunk - 1) / plan.chunk) * plan.chunk
                                 : plan.bytes;
  if (plan.pattern == Pattern::streams) {
    const auto& st = plan.streams;
    if (st.end > geo.capacity()) {
      throw InputError(fmt::format("{}: the streams end at address {}, beyond the {} B of HBM "
                                   "of {}", st.end_options, st.end, geo.capacity(), chip.name));
    }
    if (st.second_base && st.second_end > geo.capacity()) {
      throw InputError(fmt::format("--second-base: the second regions end at address {}, "
                                   "beyond the {} B of HBM of {}", st.second_end, geo.capacity(),
                                   chip.name));
    }
  } else if (plan.pattern != Pattern::random_read && need > geo.capacity()) {
    throw InputError(fmt::format("--bytes: {} needs {} B of HBM, the chip has {} B",
                                 pattern_name(plan.pattern), need, geo.capacity()));
  }
  Requesters req("bench", hbm, plan);
  model::run_bounded();
  const sc_core::sc_time end = sc_core::sc_time_stamp();
  hbm.account_until(end);

  double hits = 0, misses = 0, conflicts = 0, acts = 0, refreshes = 0, moved = 0;
  for (int s = 0; s < hbm.stacks(); ++s) {
    const model::StatGroup& st = hbm.stack(s).stats();
    using K = model::HbmStackStats;
    auto value = [&](const model::StatKey& k) { return st.find(k) ? st.find(k)->value : 0.0; };
    moved += value(K::bytes_read);  // in the order the stack declares them, as before
    moved += value(K::bytes_written);
    acts += value(K::activates);
    hits += value(K::row_hits);
    misses += value(K::row_misses);
    conflicts += value(K::row_conflicts);
    refreshes += value(K::refreshes);
  }
  const double seconds = end.to_seconds();
  const auto e = model::collect_energy(power, model::from_sc(end), &hbm);
  Json by_cat = Json::object();
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

// Stream addresses are computed in 128 bits first: R x group_stride can exceed 64 bits.
__extension__ typedef unsigned __int128 u128;

// Resolves the streams options into plan.streams and checks everything that does not need the
// chip; the capacity check waits for measure().
void resolve_streams(const HbmArgs& a, Plan& plan) {
  auto& st = plan.streams;
  const int r = plan.requesters;
  if (plan.bytes % std::uint64_t(r) != 0) {
    throw InputError(fmt::format("--bytes: streams splits N evenly over the {} streams of "
                                 "--requesters: expected a multiple of {}, got {}",
                                 r, r, plan.bytes));
  }
  st.per_stream = plan.bytes / std::uint64_t(r);
  if (a.given.group && (a.group < 1 || a.group > r)) {
    throw InputError(fmt::format("--group: expected streams per group from 1 to --requesters "
                                 "({}), got {}", r, a.group));
  }
  st.group = a.given.group ? a.group : r;
  if (a.depth < 1) {
    throw InputError(fmt::format("--depth: expected an integer >= 1, got {}", a.depth));
  }
  st.depth = a.depth;
  st.stride = a.given.stride ? parse_size(a.stride, "--stride") : st.per_stream;
  const u128 group_stride = a.given.group_stride ? parse_size(a.group_stride, "--group-stride")
                                               : u128(st.group) * st.stride;
  if (a.given.second_base) st.second_base = parse_size(a.second_base, "--second-base");

  const bool groups = r > st.group;  // more than one group: group_stride matters
  st.end_options = "--bytes";
  if (a.given.stride) st.end_options += "/--stride";
  if (groups) st.end_options += a.given.group_stride ? "/--group-stride" : "/--group";
  u128 end = 0;
  for (int i = 0; i < r; ++i) {
    end = std::max(end, u128(i / st.group) * group_stride + u128(i % st.group) * st.stride +
                            st.per_stream);
  }
  const u128 second_end =
      st.second_base ? *st.second_base + u128(st.group - 1) * st.stride + st.per_stream : 0;
  constexpr u128 kMax = std::numeric_limits<std::uint64_t>::max();
  if (end > kMax) {
    throw InputError(fmt::format("{}: the streams end beyond address 2^64", st.end_options));
  }
  if (second_end > kMax) {
    throw InputError("--second-base: the second regions end beyond address 2^64");
  }
  st.group_stride = groups ? std::uint64_t(group_stride) : 0;  // unused with one group
  st.end = std::uint64_t(end);
  st.second_end = std::uint64_t(second_end);
}

}  // namespace

// Refuses, before anything is built, what would exhaust the process or the budgets: a SystemC
// thread per requester (streams: per request in flight), each touching kStackBytesTouched of its
// stack, at most kMaxThreads of them (as the replay bounds its op processes, under the kernel's
// 65,530 mappings); bytes / chunk requests (copy: twice), each costing events as a message does,
// and the HBM's work per 64 B line.
void check_work(const Plan& plan, const HbmArgs& a, const config::SimParams& sim) {
  constexpr double kMaxThreads = 24576;
  const double threads =
      double(plan.requesters) * (plan.pattern == Pattern::streams ? double(plan.streams.depth) : 1);
  if (threads > kMaxThreads) {
    throw InputError(fmt::format(
        "--requesters {}{}: {:.0f} requester threads, expected at most {:.0f} (each is a SystemC "
        "thread with a stack of its own); use fewer --requesters{}",
        a.requesters, plan.pattern == Pattern::streams ? fmt::format(" --depth {}", a.depth) : "",
        threads, kMaxThreads, plan.pattern == Pattern::streams ? " or a smaller --depth" : ""));
  }
  const double chunk = double(std::max<std::uint64_t>(1, plan.chunk));
  const double passes = plan.pattern == Pattern::copy ? 2 : 1;
  const double requests = passes * std::ceil(double(plan.bytes) / chunk);
  const double lines = passes * std::ceil(double(plan.bytes) / double(kLine));
  run::check_budgets(
      run::kEventsPerMessage * requests + run::kEventsPerDmaPacket * lines,
      threads * run::kStackBytesTouched, sim,
      fmt::format("bench hbm --bytes {} --chunk {} --requesters {}", a.bytes, a.chunk, a.requesters),
      fmt::format("{:.4g} requests of {:.4g} B, {:.0f} threads", requests, chunk, threads),
      "use a larger --chunk, smaller --bytes or fewer --requesters");
}

Json hbm(const ConfigSource& config, const HbmArgs& a) {
  Plan plan;
  plan.pattern = parse_pattern(a.pattern);
  if (plan.pattern != Pattern::streams) {
    const std::pair<bool, const char*> streams_only[] = {
        {a.given.stride, "--stride"},
        {a.given.group, "--group"},
        {a.given.group_stride, "--group-stride"},
        {a.given.depth, "--depth"},
        {a.given.second_base, "--second-base"}};
    for (const auto& [given, option] : streams_only) {
      if (given) {
        throw InputError(fmt::format("{}: only for --pattern streams, not \"{}\"", option,
                                     a.pattern));
      }
    }
  }
  plan.bytes = parse_size(a.bytes, "--bytes");
  plan.chunk = parse_size(a.chunk, "--chunk");
  if (a.requesters < 1) {
    throw InputError(fmt::format("--requesters: expected an integer >= 1, got {}", a.requesters));
  }
  if (plan.pattern == Pattern::random_read && plan.chunk % kLine != 0) {
    throw InputError(fmt::format(
        "--chunk: random-read gathers 64 B lines: expected a multiple of 64, got {}", plan.chunk));
  }
  plan.requesters = a.requesters;
  if (plan.pattern == Pattern::streams) resolve_streams(a, plan);
  const auto loaded = config.load();
  chip_of(loaded, config.path);
  check_work(plan, a, loaded.config.sim);
  const resolve::ChipPlan chip = *resolve::plan(loaded, resolve::Purpose::bench_chip).chip;
  plan.seed = loaded.config.sim.seed;
  const auto power = power_of(loaded);
  return run_isolated([&] { return measure(chip, plan, *power); });
}

}  // namespace trnsim::bench
