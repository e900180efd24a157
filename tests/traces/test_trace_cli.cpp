// SPDX-License-Identifier: MIT
// `trnsim trace info` and `trnsim run` on the shared PyTorch-derived and generator traces: the
// units, the operator coverage and the grouped warnings a user sees.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "../common/files.hpp"
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
  const auto out = trnsim::test::fresh_dir("trace-cli", "run");
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

namespace {

// Rank `r` of a 2-rank PyTorch ET pair (schema 1.1.0: pg_name, and the group's global rank
// start, stride and size): an aten::mm, then an all-reduce of 1 Mi floats on process group "0".
// `group_size` is what the all-reduce records.
std::string et_pair_rank(int r, int group_size = 2) {
  const std::string comm = fmt::format(
      R"et({{"id": 3, "name": "record_param_comms", "ctrl_deps": 1, "inputs": {{"values": [[[100, 101, 0, 1048576, 4, "cuda:{}"]], 7, ["0", "default_pg"], {}, "allreduce", [], [], 0, 1, {}], "shapes": [[[1048576]], [], [[], []], [], [], [], [], [], [], []], "types": ["GenericList[Tensor(float)]", "Int", "Tuple[String,String]", "Int", "String", "GenericList[]", "GenericList[]", "Int", "Int", "Int"]}}, "outputs": {{"values": [], "shapes": [], "types": []}}}})et",
      r, r, group_size);
  const std::string mm =
      R"et({"id": 2, "name": "aten::mm", "ctrl_deps": 1, "inputs": {"values": [[1, 2, 0, 1048576, 4, "cuda:0"], [3, 4, 0, 1048576, 4, "cuda:0"]], "shapes": [[1024, 1024], [1024, 1024]], "types": ["Tensor(float)", "Tensor(float)"]}, "outputs": {"values": [[5, 6, 0, 1048576, 4, "cuda:0"]], "shapes": [[1024, 1024]], "types": ["Tensor(float)"]}})et";
  return R"et({"schema": "1.1.0-chakra.0.0.4", "pid": 1, "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_graph|thread]", "ctrl_deps": 1, "inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []}}, )et" +
         mm + ", " + comm + "]}";
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

}  // namespace

TEST(TraceCli, PytorchEtPairReplaysItsAllReduceAcrossRanks) {
  const auto dir = trnsim::test::fresh_dir("trace-cli", "et-pair");
  for (int r = 0; r < 2; ++r) write_text(dir / fmt::format("pair_{}.json", r), et_pair_rank(r));
  // The prefix stands for the set, as a Chakra prefix does.
  auto r = trnsim::test::run_trnsim("trace info " + (dir / "pair_").string(), false);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2 ranks, 4 ops"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ops by kind: all_reduce 2, gemm 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("groups: 1 pg0[2]"), std::string::npos) << r.out;
  // 2 ranks x 4 MiB all-reduced
  EXPECT_NE(r.out.find("communication: 8.389 MB sent"), std::string::npos) << r.out;
  const auto out = dir / "run";
  r = trnsim::test::run_trnsim("run --config " + std::string(TRNSIM_SOURCE_DIR) +
                               "/configs/racks/trn2-instance.json --trace " + dir.string() +
                               " --out " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  // Matched across the ranks and run on the fabric: a ring all-reduce of 4 MiB on 2 ranks sends
  // 2 x (2 - 1) / 2 x 4 MiB from each rank, 8.39 MB in all.
  EXPECT_NE(r.out.find("8.39 MB delivered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("record_param_comms allreduce"), std::string::npos) << r.out;
}

TEST(TraceCli, PytorchEtRanksThatDoNotAgreeExitTwo) {
  const auto dir = trnsim::test::fresh_dir("trace-cli", "et-pair-bad");
  // rank 1's all-reduce says its group has 4 ranks (0 .. 3): only 2 files
  write_text(dir / "pair_0.json", et_pair_rank(0));
  write_text(dir / "pair_1.json", et_pair_rank(1, 4));
  auto r = trnsim::test::run_trnsim("trace info " + dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("pair_1.json: node 3: allreduce runs on process group \"0\" of ranks "
                       "[0, 1, 2, 3], but 2 rank files were given"),
            std::string::npos)
      << r.out;
  // the files in the wrong order: the recorded ranks say so
  write_text(dir / "pair_0.json", et_pair_rank(1));
  write_text(dir / "pair_1.json", et_pair_rank(0));
  r = trnsim::test::run_trnsim("trace info " + dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("pair_0.json: node 3: allreduce records rank 1 in its group, but this "
                       "file is rank 0 of the set"),
            std::string::npos)
      << r.out;
}

namespace {

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

// `trace convert --to binary`: the golden MoE trace in the binary form runs to the same outputs
// as its JSON, byte for byte, but for where the report says the trace came from (the files, their
// bytes and hash) and the command line; `trace info` names the form; a damaged file exits 2
// naming the file and the offset.
TEST(TraceCli, BinaryFormRunsAsItsJson) {
  const auto dir = trnsim::test::fresh_dir("trace-cli", "binary-form");
  const std::string json = std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/inputs/golden-moe-16.json";
  const auto bin = dir / "golden.trnb";
  auto r = trnsim::test::run_trnsim("trace convert " + json + " --to binary --out " + bin.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "wrote " + bin.string() + "\n");
  r = trnsim::test::run_trnsim("trace info " + bin.string(), false);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("format native binary; 1 file, " + std::to_string(std::filesystem::file_size(bin)) +
                       " bytes"),
            std::string::npos)
      << r.out;
  const auto info_json = trnsim::test::run_trnsim("trace info " + json, false).out;
  EXPECT_EQ(r.out.substr(0, r.out.find("format ")), info_json.substr(0, info_json.find("format ")));

  const std::string run = "run --config " + std::string(TRNSIM_SOURCE_DIR) +
                          "/configs/racks/trn2-ultraserver.json --set sim.fidelity=fast --no-progress --trace ";
  r = trnsim::test::run_trnsim(run + json + " --out " + (dir / "from-json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  r = trnsim::test::run_trnsim(run + bin.string() + " --out " + (dir / "from-binary").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::size_t compared = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "from-json")) {
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    const std::string a = read_bytes(e.path()), b = read_bytes(dir / "from-binary" / name);
    if (name == "report.json") {
      auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
      for (auto* j : {&ja, &jb}) {
        (*j)["identity"].erase("command_line");
        for (const char* k : {"given", "files", "bytes", "sha256"}) (*j)["identity"]["trace"].erase(k);
      }
      EXPECT_EQ(ja.dump(1), jb.dump(1));
    } else if (name != "host.json") {  // wall times, the process's own
      EXPECT_EQ(a, b);
    }
    ++compared;
  }
  EXPECT_GE(compared, 4u);

  // Cut in the middle: exit 2, the file and the offset named.
  const std::string whole = read_bytes(bin);
  const auto cut = dir / "cut.trnb";
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 2);
  r = trnsim::test::run_trnsim("trace info " + cut.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(cut.string() + ": offset "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("truncated"), std::string::npos) << r.out;
}
