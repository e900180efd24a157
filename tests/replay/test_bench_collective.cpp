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

namespace {

nlohmann::json bench_on(const std::string& rack, const std::string& args) {
  const auto r = trnsim::test::run_trnsim("bench collective --config " +
                                              std::string(TRNSIM_SOURCE_DIR) + "/configs/racks/" +
                                              rack + ".json --json " + args,
                                          false);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out);
}

}  // namespace

// A 1 KiB all-gather (mesh) on two neighbouring chips of the Trn2 torus, from the constants:
// launch 1300, then a 4 B semaphore step and a 512 B data step, each one message of
// endpoint 500 + HBM read + one flit (2 ns at 128 GB/s: the read, not the wire, sets when the
// tail leaves) + link 29 + HBM write + endpoint 500; descriptor 600 before the data step.
// Trainium2 HBM: read 55 + 14.742 + 14.742 ns, write 55 + 14.742 + 4.914 ns, plus the bytes at a
// stack's 2.9 TB/s / 4 (512 B is two 256 B interleave units on two stacks: 256 B each).
TEST(BenchCollective, OneKibAllGatherOnTwoTorusNeighboursFromTheConstants) {
  const auto p = bench_on("trn2-instance", "--op all-gather --bytes 1KiB --ranks 2");
  const double stack = 2.9e12 / 4 / 1e9;  // B/ns
  const double rd = 55 + 14.742 + 14.742, wr = 55 + 14.742 + 4.914;
  const double sync = 500 + rd + 4 / stack + 2 + 29 + wr + 4 / stack + 500;
  const double data = 500 + rd + 256 / stack + 2 + 29 + wr + 256 / stack + 500;
  EXPECT_EQ(p["algorithm"], "mesh");
  EXPECT_NEAR(p["breakdown_ns"]["sync"].get<double>(), sync, 0.01);
  EXPECT_NEAR(p["breakdown_ns"]["wire"].get<double>(), data, 0.01);
  EXPECT_NEAR(p["time_ns"].get<double>(), 1300 + sync + 600 + data, 0.01);
}

// Four chips of one Trn3 server (chip -> L1 switch -> chip: 35 + 150 + 35 ns): each chip sends
// its three messages of a step over its one link to the switch. With read-ahead the three HBM
// reads (55 + 14.4 + 14.4 ns) overlap and the messages follow one another at the link's rate; the
// semaphore step is endpoint 500 + read + one flit (1 ns at 256 GB/s) + 35 + 150 + one flit + 35 +
// write (55 + 14.4 + 4.4) + endpoint 500, and the last of three one-flit messages into a chip
// waits 2 flits. Without it the link waits for each read in turn: the data step's last message
// leaves two reads later.
TEST(BenchCollective, ReadAheadOverlapsTheReadsOfASwitchedChipsMessages) {
  const double rd = 55 + 14.4 + 14.4, wr = 55 + 14.4 + 4.4;
  const double stack = 4.9e12 / 4 / 1e9;
  const double sync = 500 + rd + 4 / stack + 1 + 35 + 150 + 1 + 35 + wr + 4 / stack + 500 + 2;
  const auto with = bench_on("trn3-gen2-ultraserver",
                             "--op all-gather --bytes 1KiB --ranks 4 --set "
                             "rack.fabric.read_ahead_packets=1");
  const auto without = bench_on("trn3-gen2-ultraserver",
                                "--op all-gather --bytes 1KiB --ranks 4 --set "
                                "rack.fabric.read_ahead_packets=0");
  EXPECT_NEAR(with["breakdown_ns"]["sync"].get<double>(), sync, 0.01);
  // The data step's 256 B messages: two flits per hop and two messages ahead, within a few ns of
  // the semaphores'.
  EXPECT_NEAR(with["breakdown_ns"]["wire"].get<double>(), sync, 5.0);
  EXPECT_NEAR(without["breakdown_ns"]["wire"].get<double>() -
                  with["breakdown_ns"]["wire"].get<double>(),
              2 * rd, 2.0);
}
