// SPDX-License-Identifier: MIT
// `trnsim trace info` and `trnsim run` on the shared PyTorch-derived and generator traces: the
// units, the operator coverage and the grouped warnings a user sees.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "../common/run_trnsim.hpp"

namespace {

const std::string kShared = std::string(TRNSIM_SOURCE_DIR) + "/../shared/traces/";

}  // namespace

TEST(TraceCli, InfoShowsCoverageUnitsAndGroupedWarnings) {
  if (!std::filesystem::exists(kShared + "chakra/chakra.0.et")) GTEST_SKIP() << "no shared traces";
  auto r = trnsim::test::run_trnsim("trace info " + kShared + "chakra/chakra.0.et", false);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("operators mapped to Trainium compute: 1209 of 1209 recorded kernels "
                       "(100.0 %), 100.0 % of 0.292828 s recorded GPU time"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("compute: 781.6 GFLOP total"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("units: sizes in bytes, num_ops in FLOPs (detected"), std::string::npos);
  EXPECT_NE(r.out.find("warning: " + kShared + "chakra/chakra.0.et: 1277 dependencies"),
            std::string::npos);
  // 16 rank files, one units line, no warnings
  r = trnsim::test::run_trnsim(
      "trace info " + kShared + "moe-generated/mixtral_like_dp2_tp2_ep4/workload", false);
  EXPECT_NE(r.out.find("compute: 295.4 TFLOP total"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  // units that cannot be told: both readings
  r = trnsim::test::run_trnsim(
      "trace info " + kShared + "astra-sim/microbenchmarks/all_reduce/4npus_1MB/all_reduce", false);
  EXPECT_NE(r.out.find("read as bytes and FLOPs (4194304 B moved, 0 FLOP); read as 2-byte "
                       "elements and MACs they would be 8388608 B"),
            std::string::npos)
      << r.out;
}

TEST(TraceCli, RunPrintsTheCoverageAndKeepsDurationsOnRequest) {
  if (!std::filesystem::exists(kShared + "chakra/chakra.0.et")) GTEST_SKIP() << "no shared traces";
  const auto out = std::filesystem::path(testing::TempDir()) / "trnsim_trace_cli_run";
  const std::string base = "run --config " + std::string(TRNSIM_SOURCE_DIR) +
                           "/configs/racks/trn2-instance.json --trace " + kShared +
                           "chakra/chakra.0.et --out " + out.string();
  auto r = trnsim::test::run_trnsim(base);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("[trace] " + kShared + "chakra/chakra: operators mapped to Trainium "
                       "compute: 1209 of 1209"),
            std::string::npos)
      << r.out;
  // The GPU's own kernel times, one stream in order: the recorded 292.828 ms.
  r = trnsim::test::run_trnsim(base + " --chakra-keep-durations");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("step time            292.828 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 of 1209 recorded kernels"), std::string::npos) << r.out;
}
