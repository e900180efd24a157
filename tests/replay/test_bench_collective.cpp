// SPDX-License-Identifier: MIT
// `trnsim bench collective` end to end on the bundled racks: rank placement (ranks on one chip
// exchange through HBM, never a fabric link) and the time breakdown adding up.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "../common/run_trnsim.hpp"

namespace {

const std::string kTrn2 = std::string(TRNSIM_SOURCE_DIR) + "/configs/racks/trn2-instance.json";

nlohmann::json bench(const std::string& args) {
  const auto r = trnsim::test::run_trnsim("bench collective --config " + kTrn2 + " --json " + args,
                                          false);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST(BenchCollective, FourRanksOnOneChipTouchNoFabricLink) {
  const auto p = bench("--ranks 4 --ranks-per-chip 4 --op all-reduce --bytes 1MiB");
  EXPECT_EQ(p["ranks_per_chip"], 4);
  EXPECT_EQ(p["fabric_bytes"], 0);
  EXPECT_EQ(p["busiest_link_utilisation"], 0.0);
  EXPECT_GT(p["time_ns"].get<double>(), 0);
  EXPECT_GT(p["breakdown_ns"]["reduction"].get<double>(), 0);
}

TEST(BenchCollective, EightRanksOnTwoChipsUseTheFabric) {
  const auto p = bench("--ranks 8 --ranks-per-chip 4 --op all-gather --bytes 1MiB");
  EXPECT_GT(p["fabric_bytes"].get<double>(), 0);
}

// The member that finished last started at 0: its parts add up to the collective's time.
TEST(BenchCollective, BreakdownAddsUpToTheTime) {
  const auto p = bench("--op reduce-scatter --bytes 4MiB");
  const auto& b = p["breakdown_ns"];
  const double sum = b["launch"].get<double>() + b["descriptor"].get<double>() +
                     b["sync"].get<double>() + b["wire"].get<double>() +
                     b["reduction"].get<double>();
  EXPECT_NEAR(sum, p["time_ns"].get<double>(), 1e-3);
  EXPECT_DOUBLE_EQ(b["launch"].get<double>(), 1300.0);
}

TEST(BenchCollective, TooManyRanksPerChipIsBadInput) {
  const auto r = trnsim::test::run_trnsim("bench collective --config " + kTrn2 +
                                          " --ranks-per-chip 9");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--ranks-per-chip: expected 1 to 8"), std::string::npos) << r.out;
}
