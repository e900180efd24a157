// SPDX-License-Identifier: MIT
// `trnsim solve` end to end on a metric that is analytic in its parameter: the gemm bench's
// peak_tflops = cores x rows x cols x MACs per PE cycle x 2 FLOPs x clock. On Trainium2 in FP8
// that is 8 x 128 x 128 x 2 x 2 = 524,288 FLOPs per cycle, so a peak of 1,000 TFLOPS needs a
// clock of 1e15 / 524,288 = 1.9073486328125 GHz. The search, the refusal of a range that does
// not bracket the target, and resuming a solve that stopped are checked against that.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

const std::string kSrc = TRNSIM_SOURCE_DIR;
constexpr double kFlopsPerCycle = 8.0 * 128 * 128 * 2 * 2;  // Trainium2, FP8
constexpr double kAnswerGHz = 1e15 / kFlopsPerCycle / 1e9;  // 1.9073486328125

fs::path fresh_dir(const std::string& name) { return trnsim::test::fresh_dir("solve", name); }

// A small GEMM: the peak does not depend on the shape, and the run takes well under a second.
std::string command() {
  return "bench gemm --config " + kSrc + "/configs/chips/trn2.json --m 128 --k 128 --n 128 --dtype fp8 --json";
}

std::string solve_args(const fs::path& out, double target, const std::string& extra = "") {
  return "solve --param chip.core.tensor.clock --from 1GHz --to 4GHz --metric /peak_tflops --target " +
         std::to_string(target) + " --xtol 1e-3 --out " + out.string() + " " + extra + " -- " + command();
}

Json solve_json(const fs::path& out) { return Json::parse(trnsim::test::read_text(out / "solve.json")); }

TEST(SolveCli, FindsTheClockThatGivesATargetPeak) {
  const fs::path out = fresh_dir("clock");
  const auto r = trnsim::test::run_trnsim(solve_args(out, 1000));
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = solve_json(out);
  // The metric is linear in the clock, so interpolating within the final bracket is exact.
  EXPECT_NEAR(j["answer"]["x"].get<double>(), kAnswerGHz, 1e-9);
  EXPECT_EQ(j["answer"]["value"], "1.90734863GHz");
  EXPECT_TRUE(j["answer"]["converged"].get<bool>());
  EXPECT_TRUE(j["answer"]["increasing"].get<bool>());
  // Every evaluation read the bench's peak: clock (GHz) x 524,288 FLOPs per cycle / 1e3.
  for (const auto& e : j["evaluations"]) {
    EXPECT_NEAR(e["mean"].get<double>(), e["x"].get<double>() * kFlopsPerCycle / 1e3, 1e-6) << e.dump();
  }
  // The two ends, the two probes 1/64 of the range inside them, then halvings of the remaining
  // 62/64 of the range until at most 1e-3 of it: 62/64 / 2^k <= 1e-3 first at k = 10.
  ASSERT_EQ(j["evaluations"].size(), 14u);
  EXPECT_EQ(j["evaluations"][0]["value"], "1GHz");
  EXPECT_EQ(j["evaluations"][1]["value"], "4GHz");
  EXPECT_EQ(j["evaluations"][2]["value"], "1.046875GHz");
  EXPECT_EQ(j["evaluations"][3]["value"], "3.953125GHz");
  const auto& bracket = j["answer"]["bracket"];
  const double lo = std::stod(bracket[0].get<std::string>()), hi = std::stod(bracket[1].get<std::string>());
  EXPECT_LE(lo, kAnswerGHz);
  EXPECT_GE(hi, kAnswerGHz);
  EXPECT_LE((hi - lo) / 3.0, 1e-3);
  // Every value tried is a directory of its own with its run kept.
  std::size_t dirs = 0;
  for (const auto& d : fs::directory_iterator(out / "evals")) {
    ++dirs;
    EXPECT_TRUE(fs::exists(d.path() / "points/p0000/output.json")) << d.path();
    EXPECT_TRUE(fs::exists(d.path() / "points/p0000/status.json")) << d.path();
  }
  EXPECT_EQ(dirs, 14u);
  EXPECT_NE(r.out.find("chip.core.tensor.clock = 1.90734863GHz"), std::string::npos) << r.out;
}

TEST(SolveCli, RefusesARangeThatDoesNotBracketTheTarget) {
  const fs::path out = fresh_dir("nobracket");
  // The peak at 4 GHz is 2,097 TFLOPS: 3,000 is out of reach on 1-4 GHz.
  const auto r = trnsim::test::run_trnsim(solve_args(out, 3000));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--from 1GHz --to 4GHz: the range does not bracket the target"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("524.288 at chip.core.tensor.clock=1GHz"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2097.15 at chip.core.tensor.clock=4GHz"), std::string::npos) << r.out;
  // Only the two ends ran.
  EXPECT_EQ(solve_json(out)["evaluations"].size(), 2u);
}

TEST(SolveCli, ResumesAStoppedSolveWithoutRunningAValueTwice) {
  const fs::path out = fresh_dir("resume");
  const auto first = trnsim::test::run_trnsim(solve_args(out, 1000, "--max-evals 6"));
  ASSERT_EQ(first.code, 3) << first.out;  // not converged: the budget ended first
  EXPECT_NE(first.out.find("NOT CONVERGED"), std::string::npos) << first.out;
  ASSERT_EQ(solve_json(out)["evaluations"].size(), 6u);
  // The record of each value's run, which a second run must not rewrite.
  std::map<std::string, fs::file_time_type> stamps;
  for (const auto& d : fs::directory_iterator(out / "evals")) {
    stamps[d.path().filename()] = fs::last_write_time(d.path() / "points/p0000/status.json");
  }
  ASSERT_EQ(stamps.size(), 6u);
  const auto second = trnsim::test::run_trnsim(solve_args(out, 1000));
  ASSERT_EQ(second.code, 0) << second.out;
  const Json j = solve_json(out);
  ASSERT_EQ(j["evaluations"].size(), 14u);
  for (std::size_t k = 0; k < 14; ++k) EXPECT_EQ(j["evaluations"][k]["reused"].get<bool>(), k < 6) << k;
  for (const auto& [name, t] : stamps) {
    EXPECT_EQ(fs::last_write_time(out / "evals" / name / "points/p0000/status.json"), t) << name;
  }
  EXPECT_NEAR(j["answer"]["x"].get<double>(), kAnswerGHz, 1e-9);
  // Another command in the same directory is refused: its runs are not these.
  const auto other = trnsim::test::run_trnsim(
      "solve --param chip.hbm.bandwidth --from 1TB/s --to 4TB/s --metric /peak_tflops --target 1 --out " +
      out.string() + " -- " + command());
  EXPECT_EQ(other.code, 2) << other.out;
  EXPECT_NE(other.out.find("holds the runs of another solve (its param is"), std::string::npos) << other.out;
}

TEST(SolveCli, RefusesBadOptionsBeforeRunning) {
  const fs::path out = fresh_dir("bad");
  const auto name = trnsim::test::run_trnsim(
      "solve --param chip.core.tensor.clock --from 1GHz --to 4GHz --metric step_time_ns --target 1 --out " +
      out.string() + " -- " + command());
  EXPECT_EQ(name.code, 2) << name.out;
  EXPECT_NE(name.out.find("--metric step_time_ns: the names of sweep/metrics.hpp are figures of `trnsim run`"),
            std::string::npos)
      << name.out;
  const auto units = trnsim::test::run_trnsim(
      "solve --param chip.core.tensor.clock --from 1GHz --to 4000MHz --metric /peak_tflops --target 1 --out " +
      out.string() + " -- " + command());
  EXPECT_EQ(units.code, 2) << units.out;
  EXPECT_NE(units.out.find("--from 1GHz --to 4000MHz: the two ends have different units"), std::string::npos)
      << units.out;
  // A parameter the config does not have: the first run rejects it, and solve says which.
  const auto path = trnsim::test::run_trnsim(
      "solve --param chip.core.tensor.clonk --from 1GHz --to 4GHz --metric /peak_tflops --target 1000 --out " +
      (out / "path").string() + " -- " + command());
  EXPECT_EQ(path.code, 2) << path.out;
  EXPECT_NE(path.out.find("chip.core.tensor.clonk=1GHz"), std::string::npos) << path.out;
  EXPECT_NE(path.out.find("clock"), std::string::npos) << path.out;  // the nearest key
}

}  // namespace
