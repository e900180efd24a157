// SPDX-License-Identifier: MIT
// `trnsim claims` end to end: the --quick run of the shipped claims file (its table, results.json
// and junit.xml, and no claim failing), a --baseline that was deliberately changed fails, a
// failing claim fails, a bad claims file is exit code 2 naming the file and pointer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;
using trnsim::test::run_trnsim;

namespace {

const std::string kSrc = TRNSIM_SOURCE_DIR;
const std::string kSmall = kSrc + "/tests/claims/inputs/small.json";

std::string read(const fs::path& p) { return trnsim::test::read_text(p); }
fs::path fresh_dir(const std::string& name) { return trnsim::test::fresh_dir("claims", name); }

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// small.json with absolute configuration paths, to be changed and written elsewhere.
Json small_file() {
  Json f = Json::parse(read(kSmall));
  for (auto& [name, c] : f["configs"].items())
    c = kSrc + "/configs/racks/" + fs::path(c.get<std::string>()).filename().string();
  return f;
}

std::string attr(const std::string& name, std::size_t n) {
  return name + "=\"" + std::to_string(n) + "\"";
}

TEST(ClaimsCli, QuickRunOfTheShippedClaimsFile) {
  const fs::path dir = fresh_dir("quick");
  const std::string file = kSrc + "/configs/claims/trn3-vs-trn2.json";
  const auto r = run_trnsim("claims " + file + " --quick -j 2 --out " + dir.string(), false);
  const Json claims = Json::parse(read(file));
  const Json res = Json::parse(read(dir / "results.json"));
  EXPECT_TRUE(res["quick"].get<bool>());

  // One row per quick claim, in file order; verdicts from the file's own gaps and kinds.
  std::vector<std::string> want;
  std::set<std::string> runs_read;
  int skipped = 0;
  for (const Json& c : claims["claims"]) {
    if (!c.value("quick", false)) continue;
    want.push_back(c["id"]);
    for (const char* side : {"numerator", "denominator"}) {
      for (const Json& t : c["metric"].value(side, Json::array()))
        runs_read.insert(t["run"].get<std::string>());
    }
  }
  ASSERT_EQ(res["rows"].size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Json& row = res["rows"][i];
    const Json& c = *std::find_if(claims["claims"].begin(), claims["claims"].end(),
                                  [&](const Json& x) { return x["id"] == want[i]; });
    EXPECT_EQ(row["id"], want[i]);
    ASSERT_TRUE(row["measured"].is_number()) << row.dump();
    const std::string v = row["verdict"];
    if (c.value("kind", "") == "projection") {
      EXPECT_EQ(v, "projection") << want[i];
      ++skipped;
    } else if (c.contains("known_gap")) {
      EXPECT_TRUE(v == "known gap" || v == "pass") << want[i] << ": " << v;
      skipped += v == "known gap";
    } else {
      EXPECT_EQ(v, "pass") << want[i] << " measured " << row["measured"] << ", claimed "
                           << row["claimed"];
    }
    EXPECT_NE(r.out.find(want[i]), std::string::npos) << want[i];
  }
  EXPECT_EQ(r.code, 0) << r.out;
  // Each measurement ran once, however many claims read it.
  std::set<std::string> ran;
  for (const auto& [name, run] : res["runs"].items()) ran.insert(name);
  EXPECT_EQ(ran, runs_read);
  EXPECT_NE(r.out.find("PROJECTION"), std::string::npos);
  EXPECT_NE(r.out.find("wall time"), std::string::npos);

  const std::string junit = read(dir / "junit.xml");
  EXPECT_EQ(junit.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 0), 0u) << junit;
  EXPECT_NE(junit.find(attr("tests", want.size())), std::string::npos) << junit;
  EXPECT_NE(junit.find("failures=\"0\""), std::string::npos);
  EXPECT_NE(junit.find(attr("skipped", std::size_t(skipped))), std::string::npos) << junit;
  EXPECT_EQ(count(junit, "<testcase "), want.size());
  EXPECT_EQ(count(junit, "</testcase>"), want.size());
}

TEST(ClaimsCli, ADeliberatelyChangedBaselineFails) {
  const fs::path dir = fresh_dir("baseline");
  auto r = run_trnsim("claims " + kSmall + " --out " + (dir / "a").string());
  ASSERT_EQ(r.code, 0) << r.out;
  // The same results as the baseline: nothing moved.
  r = run_trnsim("claims " + kSmall + " --out " + (dir / "b").string() + " --baseline " +
                 (dir / "a/results.json").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("0 of 4 metrics moved beyond their tolerance"), std::string::npos) << r.out;

  // Change one metric of the baseline by 5 % (the file's default regression tolerance is 1 %):
  // the unchanged model now differs from it, and the run fails although every claim passes.
  Json base = Json::parse(read(dir / "a/results.json"));
  for (Json& row : base["rows"]) {
    if (row["id"] == "gemm-achieved") row["measured"] = row["measured"].get<double>() * 1.05;
  }
  std::ofstream(dir / "changed.json") << base.dump(2);
  r = run_trnsim("claims " + kSmall + " --out " + (dir / "c").string() + " --baseline " +
                 (dir / "changed.json").string());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("baseline gemm-achieved: regressed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 4 metrics moved beyond their tolerance"), std::string::npos) << r.out;
  const Json res = Json::parse(read(dir / "c/results.json"));
  EXPECT_EQ(res["baseline"]["regressed"], 1);
  const std::string junit = read(dir / "c/junit.xml");
  EXPECT_NE(junit.find("<testcase classname=\"claims.small.baseline\" name=\"gemm-achieved\""),
            std::string::npos);
  EXPECT_EQ(count(junit, "<failure type=\"regression\""), 1u) << junit;

  // A baseline of the other mode is refused before anything runs.
  r = run_trnsim("claims " + kSmall + " --quick --out " + (dir / "d").string() + " --baseline " +
                 (dir / "a/results.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("/results.json:/quick: the baseline is a full run (without --quick) and "
                       "this one would be a --quick run: their measurements differ"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "d")) << "it measured first (its logs are there)";
  // And the other way round, with the same words.
  std::ofstream(dir / "d.json") << Json{{"kind", "trnsim-claims-results"}, {"quick", true},
                                        {"rows", Json::array()}}.dump();
  r = run_trnsim("claims " + kSmall + " --out " + (dir / "e").string() + " --baseline " +
                 (dir / "d.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("d.json:/quick: the baseline is a --quick run and this one would be a full "
                       "run (without --quick)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "e"));

  // --full takes a full run's results and a --quick run, and says so before anything runs.
  r = run_trnsim("claims " + kSmall + " --out " + (dir / "f").string() + " --full " +
                 (dir / "a/results.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--full: compares a --quick run with a full one; add --quick"), std::string::npos) << r.out;
  r = run_trnsim("claims " + kSmall + " --quick --out " + (dir / "f").string() + " --full " +
                 (dir / "d.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("d.json:/quick: expected false: --full takes the results of a full run"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "f"));
  // A --quick run beside the full one: the small file's measurements are not cut, so the same.
  r = run_trnsim("claims " + kSmall + " --quick --json --out " + (dir / "g").string() + " --full " +
                 (dir / "a/results.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json g = Json::parse(read(dir / "g/results.json"));
  ASSERT_FALSE(g["full"]["rows"].empty()) << g.dump();
  for (const Json& e : g["full"]["rows"]) EXPECT_EQ(e["quick_over_full"].get<double>(), 0.0) << e.dump();
}

TEST(ClaimsCli, AFailingClaimFailsTheRun) {
  const fs::path dir = fresh_dir("fail");
  Json f = small_file();
  f["claims"][0]["claimed"] = 2.5;  // 144 / 64 = 2.25
  std::ofstream(dir / "f.json") << f.dump();
  const auto r =
      run_trnsim("claims " + (dir / "f.json").string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("1 pass, 1 fail, 1 known gap, 1 projection"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cluster: known gap: one UltraServer only"), std::string::npos) << r.out;
  const std::string junit = read(dir / "out/junit.xml");
  EXPECT_NE(junit.find("tests=\"4\" failures=\"1\" skipped=\"2\""), std::string::npos) << junit;
}

TEST(ClaimsCli, ABadServingClaimExits2NamingTheFileAndPointer) {
  const fs::path dir = fresh_dir("bad-serving");
  Json f = Json::parse(read(kSrc + "/configs/claims/trn3-vs-trn2-serving.json"));
  f["claims"][0]["metric"]["denominator"][0]["run"] = "serve-solve-trn1";
  std::ofstream(dir / "serving.json") << f.dump();
  const auto r =
      run_trnsim("claims " + (dir / "serving.json").string() + " --out " + (dir / "o").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("serving.json:/claims/0/metric/denominator/0/run: \"serve-solve-trn1\" is "
                       "not a name of /runs"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "o/results.json"));
}

TEST(ClaimsCli, BadClaimsFilesAreExitCode2) {
  const fs::path dir = fresh_dir("bad");
  Json f = small_file();
  f["claims"][1]["metric"]["numerator"][0]["value"] = "/no_such_figure";
  std::ofstream(dir / "pointer.json") << f.dump();
  auto r =
      run_trnsim("claims " + (dir / "pointer.json").string() + " --out " + (dir / "o1").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("pointer.json:/claims/1/metric/numerator/0/value: measurement gemm-trn3"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir / "o1/results.json"));

  f = small_file();
  f["runs"]["topo-trn2"]["args"] = {"topo", "{config}", "--no-such-option", "--json"};
  std::ofstream(dir / "args.json") << f.dump();
  r = run_trnsim("claims " + (dir / "args.json").string() + " --out " + (dir / "o2").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("args.json:/runs/topo-trn2: `trnsim topo"), std::string::npos) << r.out;

  std::ofstream(dir / "syntax.json") << "{\"format\": 1, \"name\": ";
  r = run_trnsim("claims " + (dir / "syntax.json").string() + " --out " + (dir / "o3").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("syntax.json"), std::string::npos) << r.out;

  r = run_trnsim("claims " + (dir / "missing.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("missing.json"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// --solve on a metric analytic in its parameter: the Trn3 UltraServer's MXFP8 peak is
// 144 chips x 8 cores x 128 x 128 x 4 MACs x 2 FLOPs x clock, so a claimed peak of 700 PFLOPS
// needs the 2.4 GHz clock times 700 / measured. A range that cannot reach it is reported as such.
TEST(ClaimsCli, SolveFindsTheParameterThatClosesAGap) {
  const fs::path dir = fresh_dir("solve");
  Json f = small_file();
  Json peak;
  for (const Json& c : f["claims"]) {
    if (c["id"] == "peak") peak = c;
  }
  ASSERT_FALSE(peak.is_null());
  Json a = peak, b = peak;
  a["id"] = "peak-700";
  a["claimed"] = 700;
  a["known_gap"] = "a claim made up for the test";
  a["solve"] = {{"run", "gemm-trn3"}, {"param", "chip.core.tensor.clock"}, {"from", "1GHz"},
                {"to", "8GHz"}, {"cited", "none"}, {"sources", {"TRN3A"}}};
  b["id"] = "peak-7000";
  b["claimed"] = 7000;
  b["known_gap"] = "out of reach";
  b["solve"] = a["solve"];
  f["claims"] = Json::array({a, b});
  const fs::path file = dir / "c.json";
  std::ofstream(file) << f.dump(2);
  const auto r = run_trnsim("claims " + file.string() + " --solve --out " + (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json res = Json::parse(read(dir / "out/results.json"));
  const Json& row = res["rows"][0];
  const double measured = row["measured"].get<double>();
  EXPECT_NEAR(measured, 144 * 8 * 128 * 128 * 4 * 2 * 2.4e9 / 1e15, 1e-9);
  const double want_ghz = 2.4 * 700 / measured;
  const std::string value = row["solve"]["value"];
  EXPECT_NEAR(std::stod(value), want_ghz, 1e-7 * want_ghz) << value;
  EXPECT_NE(r.out.find("peak-700: solve chip.core.tensor.clock: " + value + " closes the gap"), std::string::npos)
      << r.out;
  // 7,000 PF needs about 46 GHz: the 1-8 GHz range does not bracket it.
  const Json& far = res["rows"][1]["solve"];
  EXPECT_FALSE(far.contains("value"));
  EXPECT_NE(far["why"].get<std::string>().find("does not bracket the target"), std::string::npos) << far.dump();
  EXPECT_TRUE(fs::exists(dir / "out/solve/peak-700/solve.json"));
}

}  // namespace
