// SPDX-License-Identifier: MIT
// The run granularity of HbmStack (one reservation per run of bursts in one bank, the data bus a
// frontier) against the per-burst reference (reference_model.hpp) on the same request streams.
// Compared: the makespan (last data beat) and the mean latency (data end - arrival) in clocks.
// Refresh is pushed out (all-bank, tREFI = 1 s) because the reference has none; refresh is the
// same arithmetic in both granularities and is tested on its own in test_hbm.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hbm/hbm_system.hpp"
#include "reference_model.hpp"
#include "trnsim/config/config.hpp"

namespace trnsim::model {
namespace {

struct Req {
  std::uint64_t addr, bytes;
  bool write;
  std::int64_t arrival;  // clock
};

struct Outcome {
  double makespan = 0, mean_latency = 0;
};

// The preset's address map (hash included) unless `hash` is given.
config::HbmParams params(std::optional<config::AddressHash> hash = std::nullopt) {
  auto p = config::load_config(std::string(TRNSIM_SOURCE_DIR) + "/configs/chips/trn3.json")
               .config.chip->hbm;
  p.refresh_mode = config::RefreshMode::all_bank;
  p.timing.tREFI = Duration(1.0);
  if (hash) p.address_hash = *hash;
  return p;
}

// Runs `reqs` through the model and the reference; prints and returns the relative errors.
std::pair<double, double> compare(const std::vector<Req>& reqs, const char* what,
                                  std::optional<config::AddressHash> hash = std::nullopt) {
  HbmSystem h("hbm", HbmGeometry(params(hash)));
  test::PerBurstReference ref(h.geometry());
  const double tck = h.geometry().tck_seconds();
  const double ctrl = h.geometry().params().controller_latency.si;
  Outcome fast, slow;
  for (const auto& r : reqs) {
    const auto t = h.access_at({r.addr, r.bytes, r.write}, h.time_of_clock(r.arrival));
    const double end_fast = std::round((t.to_seconds() - ctrl) / tck);
    const double end_ref = double(ref.access(r.addr, r.bytes, r.write, r.arrival));
    fast.makespan = std::max(fast.makespan, end_fast);
    slow.makespan = std::max(slow.makespan, end_ref);
    fast.mean_latency += (end_fast - double(r.arrival)) / double(reqs.size());
    slow.mean_latency += (end_ref - double(r.arrival)) / double(reqs.size());
  }
  const double e_span = fast.makespan / slow.makespan - 1.0;
  const double e_lat = fast.mean_latency / slow.mean_latency - 1.0;
  std::printf("%s: makespan %.0f vs %.0f clocks (%+.2f %%), mean latency %.1f vs %.1f (%+.2f %%)\n",
              what, fast.makespan, slow.makespan, 100 * e_span, fast.mean_latency,
              slow.mean_latency, 100 * e_lat);
  return {e_span, e_lat};
}

std::uint64_t random_line(std::mt19937_64& rng, std::uint64_t capacity) {
  return (rng() % (capacity / 64)) * 64;
}

constexpr std::uint64_t kCapacity = 144ull << 30;

}  // namespace

// Measured (Trainium3 preset): see docs/models/hbm.md, "Granularity and its error". The bounds
// below are the measured errors rounded up, so a change that makes the run granularity worse
// fails here.
TEST(HbmGranularity, SequentialRead) {
  // 4 MiB in 16 KiB requests offered at the peak rate (16 KiB / 4.9 TB/s = 8 clocks).
  std::vector<Req> reqs;
  for (std::uint64_t k = 0; k < 256; ++k) reqs.push_back({k * 16384, 16384, false, std::int64_t(k * 8)});
  const auto [span, lat] = compare(reqs, "sequential read");
  EXPECT_LT(std::abs(span), 0.005);
  EXPECT_LT(std::abs(lat), 0.02);
}

// 16 sequential streams 1 GiB apart, 2 KiB requests round robin, 4 per clock: row hits and
// misses of different streams meet in the same pseudo-channels.
std::vector<Req> many_streams() {
  std::vector<Req> reqs;
  for (std::uint64_t k = 0; k < 8192; ++k) {
    reqs.push_back({(k % 16) * (1ull << 30) + (k / 16) * 2048, 2048, false, std::int64_t(k / 4)});
  }
  return reqs;
}

// With the presets' bank_pc hash the streams' rows spread over more banks and bank groups at
// once; the reference fills more bus gaps in front of older runs than the run model, which keeps
// the bus in arrival order, so the run model is slower here.
TEST(HbmGranularity, ManyStreams2KiB) {
  const auto [span, lat] = compare(many_streams(), "16 streams of 2 KiB reads");
  EXPECT_LT(std::abs(span), 0.08);
  EXPECT_LT(std::abs(lat), 0.10);
}

TEST(HbmGranularity, ManyStreams2KiBUnhashed) {
  const auto [span, lat] =
      compare(many_streams(), "16 streams of 2 KiB reads, no hash", config::AddressHash::none);
  EXPECT_LT(std::abs(span), 0.03);
  EXPECT_LT(std::abs(lat), 0.03);
}

TEST(HbmGranularity, RandomRead64B) {
  std::mt19937_64 rng(1);
  std::vector<Req> reqs;
  for (int k = 0; k < 20000; ++k) reqs.push_back({random_line(rng, kCapacity), 64, false, k / 16});
  const auto [span, lat] = compare(reqs, "random 64 B read");
  EXPECT_LT(std::abs(span), 0.005);
  EXPECT_LT(std::abs(lat), 0.005);
}

TEST(HbmGranularity, SequentialReadWriteMix) {
  // A copy: 4 KiB read from one region, 4 KiB write to another, alternating, at the peak rate.
  std::vector<Req> reqs;
  for (std::uint64_t k = 0; k < 1024; ++k) {
    reqs.push_back({(k / 2) * 4096 + (k % 2) * (64ull << 20), 4096, k % 2 == 1, std::int64_t(k * 2)});
  }
  const auto [span, lat] = compare(reqs, "sequential read/write mix");
  EXPECT_LT(std::abs(span), 0.005);
  EXPECT_LT(std::abs(lat), 0.005);
}

TEST(HbmGranularity, RandomReadWriteMix) {
  std::mt19937_64 rng(2);
  std::vector<Req> reqs;
  for (int k = 0; k < 20000; ++k) {
    reqs.push_back({random_line(rng, kCapacity), 64, (rng() & 1) != 0, k / 16});
  }
  const auto [span, lat] = compare(reqs, "random 64 B read/write mix");
  EXPECT_LT(std::abs(span), 0.02);
  EXPECT_LT(std::abs(lat), 0.02);
}

}  // namespace trnsim::model
