// SPDX-License-Identifier: MIT
// `trnsim bench hbm` end to end: JSON fields, determinism, and bad arguments -> exit code 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../common/run_trnsim.hpp"

namespace {

trnsim::test::CliResult run(const std::string& args) {
  return trnsim::test::run_trnsim("bench hbm " + args, false);
}

}  // namespace

TEST(BenchHbm, JsonHasTheDocumentedFields) {
  const auto r = run("--pattern seq-read --bytes 4MiB --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"pattern", "bytes", "time_ns", "achieved_bytes_per_s", "peak_bytes_per_s",
                        "row_hit_rate", "energy_j", "pj_per_bit"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["pattern"], "seq-read");
  EXPECT_EQ(j["bytes"], 4u << 20);
  EXPECT_EQ(j["chip"], "Trainium3");
  EXPECT_DOUBLE_EQ(j["peak_bytes_per_s"].get<double>(), 4.9e12);
  // Never above the peak the timing allows.
  EXPECT_LE(j["achieved_bytes_per_s"].get<double>(), 4.9e12);
}

TEST(BenchHbm, RandomReadIsDeterministic) {
  const auto a = run("--pattern random-read --bytes 256KiB --json");
  const auto b = run("--pattern random-read --bytes 256KiB --json");
  ASSERT_EQ(a.code, 0);
  EXPECT_EQ(a.out, b.out);
}

TEST(BenchHbm, ChipPresetWorks) {
  const auto r = run("--config configs/chips/trn2.json --pattern copy --bytes 1MiB --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["chip"], "Trainium2");
}

TEST(BenchHbm, BadArgumentsExitTwo) {
  EXPECT_EQ(run("--pattern sideways").code, 2);
  EXPECT_EQ(run("--bytes 0").code, 2);
  EXPECT_EQ(run("--bytes lots").code, 2);
  EXPECT_EQ(run("--bytes 1TiB").code, 2);
  EXPECT_EQ(run("--requesters 0").code, 2);
}
