// SPDX-License-Identifier: MIT
// The trnsim executable end to end: exit codes 0 / 2, error text, atomic outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "../common/run_trnsim.hpp"

namespace fs = std::filesystem;

namespace {

trnsim::test::CliResult run(const std::string& args) { return trnsim::test::run_trnsim(args); }

const std::string kGen2 = "configs/racks/trn3-gen2-ultraserver.json";

}  // namespace

TEST(Cli, HelpExitsZero) {
  const auto r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("config"), std::string::npos);
  EXPECT_NE(r.out.find("topo"), std::string::npos);
}

TEST(Cli, NoSubcommandIsBadInput) { EXPECT_EQ(run("").code, 2); }
TEST(Cli, UnknownOptionIsBadInput) { EXPECT_EQ(run("topo --frobnicate " + kGen2).code, 2); }
TEST(Cli, BadLogLevelIsBadInput) { EXPECT_EQ(run("--log-level loud config " + kGen2).code, 2); }

TEST(Cli, ConfigPrintsResolvedJson) {
  const auto r = run("config " + kGen2);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"bandwidth\": \"4.9TB/s\""), std::string::npos) << r.out;
}

TEST(Cli, MisspeltKeyExitsTwoWithPointerAndSuggestion) {
  const auto r = run("config " + kGen2 + " --set chip.hbm.stack=4");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/chip/hbm/stack: unknown key \"stack\"; did you mean \"stacks\"?"),
            std::string::npos)
      << r.out;
}

TEST(Cli, MissingFileExitsTwo) {
  const auto r = run("topo /nonexistent.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/nonexistent.json: no such file"), std::string::npos) << r.out;
}

TEST(Cli, TopoOfChipPresetIsBadInput) {
  const auto r = run("topo configs/chips/trn3.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("/rack"), std::string::npos) << r.out;
}

// A 1 MiB all-reduce on 4 ranks (a third-party Chakra trace) on the 16-chip Trn2 instance: the
// run succeeds, reports a step, and the same inputs give a byte-identical summary.
TEST(Cli, RunIsDeterministic) {
  const std::string args =
      "run --config configs/racks/trn2-instance.json --trace "
      "../shared/traces/astra-sim/microbenchmarks/all_reduce/4npus_1MB/all_reduce --json";
  // The report alone (standard output): standard error has the wall-time line, which differs
  // between runs by design, and under a sanitizer the first run's calibration children's
  // warnings (the second reads the calibration from the cache).
  const auto a = trnsim::test::run_trnsim(args, false);
  const auto b = trnsim::test::run_trnsim(args, false);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("\"step_time_ns\""), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("\"all_reduce\""), std::string::npos) << a.out;
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, RunWritesEveryOutputFile) {
  const fs::path dir = fs::temp_directory_path() / "trnsim-cli-run";
  fs::remove_all(dir);
  const auto r = run("run --config configs/racks/trn2-instance.json --trace "
                     "../shared/traces/astra-sim/microbenchmarks/all_gather/4npus_1MB/all_gather "
                     "--out " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* f : {"report.json", "summary.csv", "host.json", "config.json", "stats.json", "ops.csv", "timeline.json"}) {
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  }
  fs::remove_all(dir);
}

// A Chakra matmul (op_type "M") reaches the rack as element-wise work whose element count is its
// num_ops; it must run as a GEMM of the same work: 2 x 512^3 flops make a 512^3 GEMM, so the
// Tensor engines perform exactly 512^3 = 134,217,728 MACs. (As element-wise work it ran 2^27
// element operations and no MACs; a Mixtral trace's 10^12-MAC matmuls took 19 GB that way.)
TEST(Cli, ChakraMatmulRunsAsGemmOfTheSameWork) {
  const fs::path dir = fs::temp_directory_path() / "trnsim-cli-matmul";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "trace.json");
    f << R"({"format": "trnsim-trace", "version": 1, "name": "one matmul", "ranks": 1,
             "groups": {}, "rank_ops": [{"rank": 0, "ops": [
               {"id": 0, "op": "elementwise", "elements": 134217728, "inputs": 1,
                "dtype": "bf16", "source_type": "M", "flops": 268435456}]}]})";
  }
  // The tile compute model counts the MACs it ran (the detailed tier).
  const auto r = run("run --config configs/racks/trn2-instance.json --set sim.fidelity=detailed "
                     "--trace " + (dir / "trace.json").string() + " --out " + (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir / "out" / "stats.json");
  const auto stats = nlohmann::json::parse(in);
  double macs = 0;
  for (const auto& [block, s] : stats.items()) {
    if (s.contains("macs")) macs += s["macs"]["value"].get<double>();
  }
  EXPECT_EQ(macs, 134217728.0);
  fs::remove_all(dir);
}

// The power model is a registry name: one that is not registered is refused by `config`, `run`
// and the benchmarks that report energy alike, naming the key and the registered names.
TEST(Cli, UnknownPowerModelIsBadInputEverywhere) {
  const std::string set = " --set chip.power.model=measured";
  for (const std::string& cmd :
       {"config configs/racks/trn2-instance.json" + set,
        "run --config configs/racks/trn2-instance.json --trace tests/golden/inputs/golden-moe-16.json"
        " --out " + (fs::temp_directory_path() / "trnsim-cli-power").string() + set,
        "bench gemm --config configs/chips/trn2.json --m 128 --k 128 --n 128" + set,
        "bench hbm --config configs/chips/trn2.json --bytes 1MiB" + set}) {
    const auto r = run(cmd);
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("--set chip.power.model:/chip/power/model: no power model named "
                         "\"measured\"; expected one of \"table\""),
              std::string::npos)
        << cmd << "\n" << r.out;
  }
}

TEST(Cli, RunWithMissingTraceIsBadInput) {
  const auto r = run("run --trace /nonexistent/trace");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no such trace"), std::string::npos) << r.out;
}

TEST(Cli, RunWithMoreRanksThanChipsIsBadInput) {
  const auto r = run("run --config configs/racks/trn2-instance.json --trace traces/deepseek-v3-moe-144.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("144 ranks but the rack has 16 chips"), std::string::npos) << r.out;
}

TEST(Cli, DotIsWrittenAtomically) {
  const fs::path dir = fs::temp_directory_path() / "trnsim-cli-dot";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto dot = (dir / "t.dot").string();
  const auto r = run("topo configs/racks/trn2-ultraserver.json --dot " + dot);
  EXPECT_EQ(r.code, 0) << r.out;
  ASSERT_TRUE(fs::exists(dot));
  EXPECT_GT(fs::file_size(dot), 100u);
  // A failing run leaves no file behind.
  const auto bad = (dir / "bad.dot").string();
  EXPECT_EQ(run("topo configs/racks/trn2-ultraserver.json --set rack.topology.torus.dims=[0] --dot " +
                bad)
                .code,
            2);
  EXPECT_FALSE(fs::exists(bad));
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
  fs::remove_all(dir);
}

// `bench dma --bytes` takes a size with a unit like `bench hbm`; a bad size names the option.
TEST(Cli, BenchDmaBytesTakeUnits) {
  const auto ok =
      trnsim::test::run_trnsim("bench dma --config configs/chips/trn2.json --bytes 32KiB --json",
                               false);
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["bytes"].get<std::uint64_t>(), 32768u);
  for (const char* bad : {"0", "2XB", "-5"}) {
    const auto r = run(std::string("bench dma --bytes ") + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.out.find("--bytes: expected a byte count"), std::string::npos) << r.out;
  }
}

// `bench kernel` runs the same timed loop as methods or, with --threads, as threads. One process
// of period 1 ns stopping at 5 activations runs at 0, 1, 2, 3 and 4 ns. Three (periods 1, 2 and
// 3 ns) stopping at 30: the one that makes the 30th stops, the other two run once more: 32.
TEST(Cli, BenchKernelThreadsRunTheSameLoop) {
  for (const char* kind : {"method", "thread"}) {
    const std::string flag = std::string(kind) == "thread" ? " --threads" : "";
    const auto one = trnsim::test::run_trnsim(
        "bench kernel --processes 1 --activations 5 --json" + flag, false);
    ASSERT_EQ(one.code, 0) << one.out;
    const auto j = nlohmann::json::parse(one.out);
    EXPECT_EQ(j["process_kind"], kind);
    EXPECT_EQ(j["activations"].get<std::uint64_t>(), 5u) << kind;
    EXPECT_DOUBLE_EQ(j["simulated_ns"].get<double>(), 4.0) << kind;
    const auto three = trnsim::test::run_trnsim(
        "bench kernel --processes 3 --activations 30 --json" + flag, false);
    ASSERT_EQ(three.code, 0) << three.out;
    EXPECT_EQ(nlohmann::json::parse(three.out)["activations"].get<std::uint64_t>(), 32u) << kind;
  }
}
