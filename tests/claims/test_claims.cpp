// SPDX-License-Identifier: MIT
// The claims library without processes: parsing errors name the file and pointer, metrics and
// verdicts on hand-computed numbers, the baseline comparison, the JUnit counts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../common/files.hpp"

#include "trnsim/claims/claims.hpp"

namespace trnsim::claims {
namespace {

// Two configurations, four measurements and one claim: the UltraServer ratio of
// (gemm-b TFLOPS x chips-b) / (gemm-a TFLOPS x chips-a), claimed 4.4 +- 5 %.
Json one_claim() {
  return Json::parse(R"({
    "format": 1, "name": "t",
    "configs": {"a": "a.json", "b": "b.json"},
    "runs": {
      "gemm-a": {"config": "a", "args": ["bench", "gemm", "--config", "{config}", "--json"]},
      "gemm-b": {"config": "b", "args": ["bench", "gemm", "--config", "{config}", "--json"],
                 "quick_args": ["bench", "gemm", "--m", "128", "--config", "{config}", "--json"]},
      "topo-a": {"config": "a", "args": ["topo", "{config}", "--json"]},
      "topo-b": {"config": "b", "args": ["topo", "{dir}/x/{config}", "--json"]}
    },
    "claims": [{
      "id": "compute", "title": "compute", "claim": "4.4x", "baseline": "a", "candidate": "b",
      "metric": {"description": "d", "unit": "x",
                 "numerator": [{"run": "gemm-b", "value": "/achieved_tflops"}, {"run": "topo-b", "value": "/chips"}],
                 "denominator": [{"run": "gemm-a", "value": "/achieved_tflops"}, {"run": "topo-a", "value": "/chips"}]},
      "claimed": 4.4, "tolerance": {"relative": 0.05}, "sources": ["AIW"], "quick": true
    }]
  })");
}

std::map<std::string, RunResult> outputs(double tflops_a, double tflops_b) {
  std::map<std::string, RunResult> r;
  r["gemm-a"].output = Json{{"achieved_tflops", tflops_a}};
  r["gemm-b"].output = Json{{"achieved_tflops", tflops_b}};
  r["topo-a"].output = Json{{"chips", 64}};
  r["topo-b"].output = Json{{"chips", 144}};
  return r;
}

std::string error_of(const Json& j) {
  try {
    parse_claims(j, "claims.json");
  } catch (const ClaimsError& e) {
    return e.what();
  }
  return "";
}

TEST(Claims, JudgeEqualAtMostAtLeastAndKnownGap) {
  Claim c;
  c.claimed = 4.4;
  c.tolerance = {0.05, 0};  // band 0.22: [4.18, 4.62]
  EXPECT_EQ(judge(c, 4.32), Verdict::pass);
  EXPECT_EQ(judge(c, 4.19), Verdict::pass);
  EXPECT_EQ(judge(c, 4.17), Verdict::fail);
  EXPECT_EQ(judge(c, 4.63), Verdict::fail);
  c.known_gap = "why";
  EXPECT_EQ(judge(c, 0.70), Verdict::known_gap);
  EXPECT_EQ(judge(c, 4.4), Verdict::pass);  // a closed gap passes

  Claim at_most;
  at_most.check = Check::at_most;
  at_most.claimed = 10000;
  at_most.tolerance = {0, 0};
  EXPECT_EQ(judge(at_most, 1959.8), Verdict::pass);
  EXPECT_EQ(judge(at_most, 10000), Verdict::pass);
  EXPECT_EQ(judge(at_most, 10000.5), Verdict::fail);

  Claim at_least;
  at_least.check = Check::at_least;
  at_least.claimed = 1e6;
  at_least.tolerance = {0, 10};
  EXPECT_EQ(judge(at_least, 999990), Verdict::pass);
  EXPECT_EQ(judge(at_least, 144), Verdict::fail);

  Claim p;
  p.kind = Kind::projection;
  EXPECT_EQ(judge(p, 123), Verdict::projection);
}

TEST(Claims, MetricIsTheProductRatioOfTheTerms) {
  const ClaimsFile f = parse_claims(one_claim(), "claims.json");
  // 2000 x 144 / (1000 x 64) = 4.5, within 4.4 +- 0.22.
  Json r = evaluate(f, outputs(1000, 2000), false);
  ASSERT_EQ(r["rows"].size(), 1u);
  EXPECT_DOUBLE_EQ(r["rows"][0]["measured"].get<double>(), 4.5);
  EXPECT_EQ(r["rows"][0]["verdict"], "pass");
  EXPECT_DOUBLE_EQ(r["rows"][0]["band"].get<double>(), 0.22);
  EXPECT_EQ(r["rows"][0]["formula"],
            "gemm-b:/achieved_tflops x topo-b:/chips / (gemm-a:/achieved_tflops x topo-a:/chips)");
  EXPECT_EQ(r["summary"]["pass"], 1);
  EXPECT_FALSE(failed(r));
  // 1900 x 144 / (1000 x 64) = 4.275: within. 1800 x 144 / (1000 x 64) = 4.05: not.
  EXPECT_EQ(evaluate(f, outputs(1000, 1900), false)["rows"][0]["verdict"], "pass");
  r = evaluate(f, outputs(1000, 1800), false);
  EXPECT_DOUBLE_EQ(r["rows"][0]["measured"].get<double>(), 4.05);
  EXPECT_EQ(r["rows"][0]["verdict"], "fail");
  EXPECT_TRUE(failed(r));
  EXPECT_EQ(r["summary"]["fail"], 1);
}

TEST(Claims, ScaleAndProjection) {
  Json j = one_claim();
  j["claims"][0]["kind"] = "projection";
  j["claims"][0].erase("tolerance");
  j["claims"][0].erase("claimed");
  j["claims"][0]["metric"]["scale"] = 0.001;
  const ClaimsFile f = parse_claims(j, "claims.json");
  const Json r = evaluate(f, outputs(1000, 2000), false);
  EXPECT_DOUBLE_EQ(r["rows"][0]["measured"].get<double>(), 0.0045);
  EXPECT_EQ(r["rows"][0]["verdict"], "projection");
  EXPECT_TRUE(r["rows"][0]["claimed"].is_null());
  EXPECT_FALSE(failed(r));
  EXPECT_NE(table_text(r).find("PROJECTION"), std::string::npos);
}

TEST(Claims, AFailedMeasurementFailsItsClaims) {
  const ClaimsFile f = parse_claims(one_claim(), "claims.json");
  auto runs = outputs(1000, 2000);
  runs["gemm-b"].output.reset();
  runs["gemm-b"].error = "killed by signal 9";
  const Json r = evaluate(f, runs, false);
  EXPECT_TRUE(r["rows"][0]["measured"].is_null());
  EXPECT_EQ(r["rows"][0]["verdict"], "fail");
  EXPECT_NE(r["rows"][0]["detail"].get<std::string>().find("killed by signal 9"),
            std::string::npos);
}

TEST(Claims, AMissingNumberNamesTheTerm) {
  const ClaimsFile f = parse_claims(one_claim(), "claims.json");
  auto runs = outputs(1000, 2000);
  runs["topo-a"].output = Json{{"chips", "sixty-four"}};
  try {
    evaluate(f, runs, false);
    FAIL() << "no error";
  } catch (const ClaimsError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("claims.json:/claims/0/metric/denominator/1/value:"), std::string::npos) << m;
    EXPECT_NE(m.find("printed no number at /chips"), std::string::npos) << m;
  }
}

TEST(Claims, ParseErrorsNameTheFileAndPointer) {
  Json j = one_claim();
  j["claims"][0]["tolernce"] = 1;
  EXPECT_NE(
      error_of(j).find(
          "claims.json:/claims/0/tolernce: unknown key \"tolernce\" (did you mean \"tolerance\"?)"),
      std::string::npos)
      << error_of(j);
  j = one_claim();
  j["claims"][0]["metric"]["numerator"][1]["run"] = "topo-c";
  EXPECT_NE(error_of(j).find(
                "claims.json:/claims/0/metric/numerator/1/run: \"topo-c\" is not a name of /runs"),
            std::string::npos)
      << error_of(j);
  j = one_claim();
  j["runs"]["topo-a"]["args"] = {"topo", "{config}"};
  EXPECT_NE(error_of(j).find("claims.json:/runs/topo-a/args: expected \"--json\""),
            std::string::npos)
      << error_of(j);
  j = one_claim();
  j["runs"]["topo-a"]["args"][0] = "claims";
  EXPECT_NE(error_of(j).find("claims.json:/runs/topo-a/args/0: expected one of"), std::string::npos)
      << error_of(j);
  j = one_claim();
  j["runs"]["topo-a"]["config"] = "c";
  EXPECT_NE(error_of(j).find("claims.json:/runs/topo-a/config: \"c\" is not a name of /configs"),
            std::string::npos);
  j = one_claim();
  j["claims"][0].erase("tolerance");
  EXPECT_NE(error_of(j).find("claims.json:/claims/0/tolerance: missing"), std::string::npos);
  j = one_claim();
  j["claims"][0]["metric"]["numerator"][0]["value"] = "achieved_tflops";
  EXPECT_NE(
      error_of(j).find("claims.json:/claims/0/metric/numerator/0/value: expected a JSON pointer"),
      std::string::npos);
  j = one_claim();
  j["claims"].push_back(j["claims"][0]);
  EXPECT_NE(error_of(j).find("claims.json:/claims/1/id: \"compute\" is the id of an earlier claim"),
            std::string::npos);
  j = one_claim();
  j["claims"][0]["kind"] = "projection";
  EXPECT_NE(
      error_of(j).find("claims.json:/claims/0/tolerance: a projection is reported, not checked"),
      std::string::npos);
}

// The serving claims file (configs/claims/trn3-vs-trn2-serving.json): it validates, reads
// `trnsim serve` reports, and each row is the ratio of the two racks' reports.
TEST(ClaimsServing, TheShippedFileValidatesAndEachRowIsTheRatioOfTwoReports) {
  const std::string path = std::string(TRNSIM_SOURCE_DIR) + "/configs/claims/trn3-vs-trn2-serving.json";
  const ClaimsFile f = load_claims(path);
  ASSERT_EQ(f.claims.size(), 3u);
  for (const auto& [name, run] : f.runs) EXPECT_EQ(run.args.front(), "serve") << name;
  auto report = [](double users, double per_mw, double tokens_per_s) {
    RunResult r;
    r.output = Json{{"solve", {{"users", users}}},
                    {"results",
                     {{"energy", {{"output_tokens_per_s_per_mw", per_mw}}},
                      {"throughput", {{"output_tokens_per_s", tokens_per_s}}}}}};
    return r;
  };
  std::map<std::string, RunResult> runs;
  // Trn2: 200 users at the target, 1.0e6 tokens/s per MW; Trn3: 900 users, 5.2e6.
  runs["serve-solve-trn2"] = report(200, 1.0e6, 0);
  runs["serve-solve-trn3"] = report(900, 5.2e6, 0);
  // 512 users on both: 8,000 and 52,000 output tokens/s.
  runs["serve-users-trn2"] = report(0, 0, 8000);
  runs["serve-users-trn3"] = report(0, 0, 52000);
  const Json r = evaluate(f, runs, false);
  ASSERT_EQ(r["rows"].size(), 3u);
  std::map<std::string, Json> row;
  for (const Json& x : r["rows"]) row[x["id"]] = x;
  EXPECT_DOUBLE_EQ(row["tokens-per-megawatt"]["measured"].get<double>(), 5.2);
  EXPECT_EQ(row["tokens-per-megawatt"]["verdict"], "pass");  // 5.2 within 5 +- 0.5
  EXPECT_DOUBLE_EQ(row["serving-users-at-interactivity"]["measured"].get<double>(), 4.5);
  EXPECT_EQ(row["serving-users-at-interactivity"]["verdict"], "pass");
  EXPECT_DOUBLE_EQ(row["serving-throughput-same-users"]["measured"].get<double>(), 6.5);
  EXPECT_EQ(row["serving-throughput-same-users"]["verdict"], "pass");  // at least 6
  // 52,000 against 52,000 / 5.9: 5.9x is not "over 6x"; its verdict is the file's (a known gap
  // when the file documents one, a failure otherwise).
  runs["serve-users-trn2"] = report(0, 0, 52000 / 5.9);
  const Json r2 = evaluate(f, runs, false);
  for (const Json& x : r2["rows"]) {
    if (x["id"] != "serving-throughput-same-users") continue;
    EXPECT_NEAR(x["measured"].get<double>(), 5.9, 1e-12);
    EXPECT_EQ(x["verdict"], x["known_gap"].is_string() && !x["known_gap"].get<std::string>().empty()
                                ? "known gap"
                                : "fail");
  }
}

TEST(ClaimsServing, ABadServingEntryNamesTheFileAndPointer) {
  const std::string path = std::string(TRNSIM_SOURCE_DIR) + "/configs/claims/trn3-vs-trn2-serving.json";
  std::ifstream in(path);
  const Json good = Json::parse(in);
  Json j = good;
  j["runs"]["serve-solve-trn3"]["args"][0] = "serv";
  EXPECT_NE(error_of(j).find("claims.json:/runs/serve-solve-trn3/args/0: expected one of \"bench\", "
                             "\"run\", \"topo\", \"serve\", got \"serv\""),
            std::string::npos)
      << error_of(j);
  j = good;
  j["claims"][1]["metric"]["numerator"][0]["run"] = "serve-solve-trn4";
  EXPECT_NE(error_of(j).find("claims.json:/claims/1/metric/numerator/0/run: \"serve-solve-trn4\" "
                             "is not a name of /runs"),
            std::string::npos)
      << error_of(j);
  j = good;
  j["runs"]["serve-users-trn2"]["quick_args"].erase(j["runs"]["serve-users-trn2"]["quick_args"].size() - 1);
  EXPECT_NE(error_of(j).find("claims.json:/runs/serve-users-trn2/quick_args: expected \"--json\""),
            std::string::npos)
      << error_of(j);
}

TEST(Claims, QuickSelectsClaimsAndTheirArguments) {
  Json j = one_claim();
  Json second = j["claims"][0];
  second["id"] = "chips";
  second["quick"] = false;
  second["metric"]["numerator"] = Json::array({{{"run", "topo-b"}, {"value", "/chips"}}});
  second["metric"].erase("denominator");
  j["claims"].push_back(second);
  // The file's folder, made absolute by the parser (it need not exist).
  const std::string dir = std::filesystem::absolute("claims-dir").string();
  const ClaimsFile f = parse_claims(j, dir + "/claims.json");
  EXPECT_EQ(selected_claims(f, true).size(), 1u);
  EXPECT_EQ(selected_claims(f, false).size(), 2u);
  EXPECT_EQ(needed_runs(f, true),
            (std::vector<std::string>{"gemm-a", "gemm-b", "topo-a", "topo-b"}));
  EXPECT_EQ(run_args(f, f.runs.at("gemm-b"), true),
            (std::vector<std::string>{"bench", "gemm", "--m", "128", "--config", dir + "/b.json",
                                      "--json"}));
  EXPECT_EQ(run_args(f, f.runs.at("gemm-b"), false),
            (std::vector<std::string>{"bench", "gemm", "--config", dir + "/b.json", "--json"}));
  EXPECT_EQ(run_args(f, f.runs.at("topo-b"), false),
            (std::vector<std::string>{"topo", dir + "/x/" + dir + "/b.json", "--json"}));
}

TEST(Claims, BaselineFailsBeyondTheRegressionTolerance) {
  const ClaimsFile f = parse_claims(one_claim(), "claims.json");  // default tolerance 1 %
  const Json before = evaluate(f, outputs(1000, 2000), false);    // 4.5
  Json same = evaluate(f, outputs(1000, 2000), false);
  EXPECT_FALSE(compare_baseline(same, before, "old.json"));
  EXPECT_EQ(same["baseline"]["rows"][0]["status"], "same");
  EXPECT_FALSE(failed(same));
  // 2010 -> 4.5225: +0.5 %, within 1 % (allowed 0.045).
  Json within = evaluate(f, outputs(1000, 2010), false);
  EXPECT_FALSE(compare_baseline(within, before, "old.json"));
  EXPECT_EQ(within["baseline"]["rows"][0]["status"], "within");
  EXPECT_DOUBLE_EQ(within["baseline"]["rows"][0]["allowed"].get<double>(), 0.045);
  // 2040 -> 4.59: +2 %, still a passing claim, but a regression of the model.
  Json moved = evaluate(f, outputs(1000, 2040), false);
  EXPECT_EQ(moved["rows"][0]["verdict"], "pass");
  EXPECT_TRUE(compare_baseline(moved, before, "old.json"));
  EXPECT_EQ(moved["baseline"]["rows"][0]["status"], "regressed");
  EXPECT_EQ(moved["baseline"]["regressed"], 1);
  EXPECT_TRUE(failed(moved));
  const std::string junit = junit_xml(moved);
  EXPECT_NE(junit.find("tests=\"2\" failures=\"1\" skipped=\"0\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"claims.t.baseline\" name=\"compute\""),
            std::string::npos);
  EXPECT_NE(junit.find("<failure type=\"regression\""), std::string::npos);
}

TEST(Claims, BaselineMustBeAResultsFileOfTheSameMode) {
  const ClaimsFile f = parse_claims(one_claim(), "claims.json");
  const Json quick = evaluate(f, outputs(1000, 2000), true);
  Json full = evaluate(f, outputs(1000, 2000), false);
  EXPECT_THROW(compare_baseline(full, quick, "old.json"), ClaimsError);
  EXPECT_THROW(compare_baseline(full, Json{{"rows", Json::array()}}, "old.json"), ClaimsError);
}

TEST(Claims, JunitCountsKnownGapsAndProjectionsAsSkipped) {
  Json j = one_claim();
  j["claims"][0]["known_gap"] = "a <reason> & more";
  Json p = one_claim()["claims"][0];
  p["id"] = "p";
  p["kind"] = "projection";
  p.erase("tolerance");
  j["claims"].push_back(p);
  const ClaimsFile f = parse_claims(j, "claims.json");
  const Json r = evaluate(f, outputs(1000, 1000), false);  // 2.25: a known gap
  EXPECT_EQ(r["rows"][0]["verdict"], "known gap");
  EXPECT_EQ(r["rows"][1]["verdict"], "projection");
  EXPECT_FALSE(failed(r));
  const std::string x = junit_xml(r);
  EXPECT_NE(x.find("tests=\"2\" failures=\"0\" skipped=\"2\""), std::string::npos) << x;
  EXPECT_NE(x.find("<skipped message=\"known gap: a &lt;reason&gt; &amp; more\"/>"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find("<skipped message=\"projection, not a check: measured 2.25 x\"/>"),
            std::string::npos)
      << x;
}

}  // namespace
}  // namespace trnsim::claims

namespace trnsim::claims {
namespace {

// one_claim() with two readings of configuration b, in a directory where their files exist.
ClaimsFile with_two_readings(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const char* name : {"b-fast.json", "b-slow.json"}) std::ofstream(dir + "/" + name) << "{}";
  Json j = one_claim();
  j["readings"] = Json::parse(R"({
    "fast": {"description": "b read fast", "configs": {"b": "b-fast.json"}, "sources": ["T3"]},
    "slow": {"description": "b read slow", "configs": {"b": "b-slow.json"}, "sources": ["TRN3A"]}
  })");
  return parse_claims(j, dir + "/claims.json");
}

TEST(ClaimsReadings, MatrixHoldsEachReadingsMeasuredValueAndVerdict) {
  const std::string dir = trnsim::test::fresh_dir("claims", "readings").string();
  const ClaimsFile f = with_two_readings(dir);
  const auto all = select_readings(f, "all");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(with_reading(f, *all[0]).configs.at("b"), "b-fast.json");
  EXPECT_EQ(with_reading(f, *all[0]).configs.at("a"), "a.json");
  // presets: (110 x 144) / (100 x 64) = 2.475 (known gap? no: fail); fast: (200 x 144) / (100 x 64)
  // = 4.5, within 4.4 +- 5 %; slow: (150 x 144) / (100 x 64) = 3.375.
  Json results = evaluate(f, outputs(100, 110), false);
  const std::vector<Json> per{evaluate(with_reading(f, *all[0]), outputs(100, 200), false),
                              evaluate(with_reading(f, *all[1]), outputs(100, 150), false)};
  add_readings(results, f, all, per);
  const Json& cells = results["readings"]["matrix"][0]["cells"];
  EXPECT_DOUBLE_EQ(cells["presets"]["measured"].get<double>(), 2.475);
  EXPECT_EQ(cells["presets"]["verdict"], "fail");
  EXPECT_DOUBLE_EQ(cells["fast"]["measured"].get<double>(), 4.5);
  EXPECT_EQ(cells["fast"]["verdict"], "pass");
  EXPECT_DOUBLE_EQ(cells["slow"]["measured"].get<double>(), 3.375);
  EXPECT_EQ(results["readings"]["readings"].size(), 3u);
  // The table prints the matrix; JUnit reports each other reading's cell as a skipped case.
  const std::string table = table_text(results);
  EXPECT_NE(table.find("4.5 pass"), std::string::npos) << table;
  EXPECT_NE(table.find("3.375 FAIL"), std::string::npos) << table;
  const std::string xml = junit_xml(results);
  EXPECT_NE(xml.find("classname=\"claims.t.reading.slow\" name=\"compute\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("tests=\"3\" failures=\"1\" skipped=\"2\""), std::string::npos) << xml;
  // Only the presets decide whether the run failed.
  EXPECT_TRUE(failed(results));
}

TEST(ClaimsReadings, BadReadingsNameTheFileAndPointer) {
  const std::string dir = trnsim::test::fresh_dir("claims", "readings-bad").string();
  const ClaimsFile f = with_two_readings(dir);
  try {
    select_readings(f, "fast,fats");
    FAIL() << "an unknown reading was accepted";
  } catch (const ClaimsError& e) {
    EXPECT_NE(std::string(e.what()).find("--readings fast,fats: \"fats\" is not a reading of"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(select_readings(f, "presets,slow").size(), 1u);
  Json j = one_claim();
  j["readings"] = Json::parse(R"({"r": {"description": "d", "configs": {"c": "b.json"}, "sources": ["T3"]}})");
  EXPECT_NE(error_of(j).find("claims.json:/readings/r/configs/c: \"c\" is not a name of /configs"),
            std::string::npos)
      << error_of(j);
  j["readings"] = Json::parse(R"({"presets": {"description": "d", "configs": {"b": "b.json"}, "sources": ["T3"]}})");
  EXPECT_NE(error_of(j).find("claims.json:/readings/presets: \"presets\" is the file's own configurations"),
            std::string::npos)
      << error_of(j);
  j["readings"] = Json::parse(R"({"r": {"description": "d", "configs": {"b": "missing.json"}, "sources": ["T3"]}})");
  EXPECT_NE(error_of(j).find("claims.json:/readings/r/configs/b: missing.json: no such file"), std::string::npos)
      << error_of(j);
}

}  // namespace
}  // namespace trnsim::claims

namespace trnsim::claims {
namespace {

// A time ratio (baseline time / candidate time) claimed 2x, taken apart: baseline 100 = 60 compute
// + 30 comm + 10 unsplit; candidate 80 = 20 compute + 50 comm + 10 unsplit. At the claim the
// candidate would take 50: it is 30 beyond. Excess per component: compute 20 - 30 = -10, comm
// 50 - 15 = 35, the rest 10 - 5 = 5; shares of the 30: -1/3, 7/6, 1/6.
TEST(ClaimsDecomposition, ComponentsExcessOverTheClaimAndTheirShares) {
  Json j = Json::parse(R"({
    "format": 1, "name": "t", "configs": {"a": "a.json", "b": "b.json"},
    "runs": {"ra": {"config": "a", "args": ["bench", "x", "--json"]},
             "rb": {"config": "b", "args": ["bench", "x", "--json"]}},
    "claims": [{"id": "speed", "title": "t", "claim": "2x", "baseline": "a", "candidate": "b",
      "metric": {"description": "d", "unit": "x", "numerator": [{"run": "ra", "value": "/t"}],
                 "denominator": [{"run": "rb", "value": "/t"}]},
      "claimed": 2, "tolerance": {"relative": 0.05}, "sources": ["T3"], "known_gap": "why",
      "decomposition": {"description": "time", "unit": "ns", "baseline": "ra", "candidate": "rb",
                        "total": "/t", "each": "/parts"}}]
  })");
  const ClaimsFile f = parse_claims(j, "claims.json");
  std::map<std::string, RunResult> runs;
  runs["ra"].output = Json{{"t", 100}, {"parts", {{"compute", 60}, {"comm", 30}}}};
  // A component only one side prints counts as 0 on the other.
  runs["rb"].output = Json{{"t", 80}, {"parts", {{"compute", 20}, {"comm", 50}, {"new", 0}}}};
  const Json results = evaluate(f, runs, false);
  const Json& d = results["rows"][0]["decomposition"];
  EXPECT_DOUBLE_EQ(results["rows"][0]["measured"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(d["candidate_at_claim"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(d["shortfall"].get<double>(), 30);
  std::map<std::string, Json> by;
  for (const Json& c : d["components"]) by[c["name"]] = c;
  ASSERT_EQ(by.size(), 4u);
  EXPECT_DOUBLE_EQ(by["comm"]["excess"].get<double>(), 35);
  EXPECT_DOUBLE_EQ(by["comm"]["share_of_shortfall"].get<double>(), 35.0 / 30);
  EXPECT_DOUBLE_EQ(by["compute"]["excess"].get<double>(), -10);
  EXPECT_DOUBLE_EQ(by["rest of the total"]["baseline"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(by["rest of the total"]["excess"].get<double>(), 5);
  EXPECT_DOUBLE_EQ(by["new"]["baseline"].get<double>(), 0);
  // Largest excess first.
  EXPECT_EQ(d["components"][0]["name"], "comm");
  EXPECT_NE(table_text(results).find("the candidate would need 50 ns; it has 80 ns"), std::string::npos)
      << table_text(results);
  // A solve names a run of the metric.
  j["claims"][0]["solve"] = Json::parse(R"({"run": "rc", "param": "p", "from": "1", "to": "2",
                                            "cited": "c", "sources": ["T3"]})");
  EXPECT_NE(error_of(j).find("claims.json:/claims/0/solve/run: \"rc\" is not a run of the claim's metric"),
            std::string::npos)
      << error_of(j);
}

// Racks of different sizes: per-chip throughput at equal tokens is (tb x 64) / (tk x 144), so the
// cost taken apart is chip-time. Baseline 64 chips x 100 ns (60 compute + 40 comm) = 6400;
// candidate 144 chips x 50 ns (20 compute + 30 comm) = 7200. Metric 6400 / 7200 = 0.888...;
// claimed 2x: the candidate would need 3200 chip-ns, it is 4000 beyond. Compute 2880 - 1920 = 960
// (24 %), comm 4320 - 1280 = 3040 (76 %).
TEST(ClaimsDecomposition, PerMultipliesEachSideByItsOwnChips) {
  Json j = Json::parse(R"({
    "format": 1, "name": "t", "configs": {"a": "a.json", "b": "b.json"},
    "runs": {"ra": {"config": "a", "args": ["bench", "x", "--json"]},
             "rb": {"config": "b", "args": ["bench", "x", "--json"]}},
    "claims": [{"id": "speed", "title": "t", "claim": "2x", "baseline": "a", "candidate": "b",
      "metric": {"description": "d", "unit": "x", "numerator": [{"run": "ra", "value": "/t"}, {"run": "ra", "value": "/chips"}],
                 "denominator": [{"run": "rb", "value": "/t"}, {"run": "rb", "value": "/chips"}]},
      "claimed": 2, "tolerance": {"relative": 0.05}, "sources": ["T3"], "known_gap": "why",
      "decomposition": {"description": "chip-time", "unit": "chip-ns", "baseline": "ra", "candidate": "rb",
                        "total": "/t", "each": "/parts", "per": "/chips"}}]
  })");
  const ClaimsFile f = parse_claims(j, "claims.json");
  std::map<std::string, RunResult> runs;
  runs["ra"].output = Json{{"t", 100}, {"chips", 64}, {"parts", {{"compute", 60}, {"comm", 40}}}};
  runs["rb"].output = Json{{"t", 50}, {"chips", 144}, {"parts", {{"compute", 20}, {"comm", 30}}}};
  const Json results = evaluate(f, runs, false);
  const Json& d = results["rows"][0]["decomposition"];
  EXPECT_DOUBLE_EQ(results["rows"][0]["measured"].get<double>(), 6400.0 / 7200);
  EXPECT_DOUBLE_EQ(d["baseline_total"].get<double>(), 6400);
  EXPECT_DOUBLE_EQ(d["candidate_total"].get<double>(), 7200);
  EXPECT_DOUBLE_EQ(d["ratio_of_totals"].get<double>(), 6400.0 / 7200);
  EXPECT_DOUBLE_EQ(d["shortfall"].get<double>(), 4000);
  ASSERT_EQ(d["components"].size(), 2u);  // nothing left over
  EXPECT_EQ(d["components"][0]["name"], "comm");
  EXPECT_DOUBLE_EQ(d["components"][0]["excess"].get<double>(), 3040);
  EXPECT_DOUBLE_EQ(d["components"][0]["share_of_shortfall"].get<double>(), 0.76);
  EXPECT_DOUBLE_EQ(d["components"][1]["excess"].get<double>(), 960);
  EXPECT_DOUBLE_EQ(d["per"]["candidate"].get<double>(), 144);
  EXPECT_NE(table_text(results).find("every value is the run's own times its /chips (64 and 144)"), std::string::npos)
      << table_text(results);
  j["claims"][0]["decomposition"]["per"] = "chips";
  EXPECT_NE(error_of(j).find("claims.json:/claims/0/decomposition/per: expected a JSON pointer"), std::string::npos)
      << error_of(j);
  // A solve on a run with two terms names the one to solve for; it must be one of them.
  j["claims"][0]["decomposition"]["per"] = "/chips";
  j["claims"][0]["solve"] = Json::parse(R"({"run": "rb", "term": "/chips", "param": "p", "from": "1", "to": "2",
                                            "cited": "c", "sources": ["T3"]})");
  EXPECT_EQ(parse_claims(j, "claims.json").claims[0].solve->term, "/chips");
  j["claims"][0]["solve"]["term"] = "/x";
  EXPECT_NE(error_of(j).find("claims.json:/claims/0/solve/term: \"/x\" is not a value of rb in the claim's metric"),
            std::string::npos)
      << error_of(j);
}

// --full: each quick row beside the full run's value. Quick 1.5 against full 2 is -25 %; a row the
// full run lacks is left out. A full run's file must say quick false, and this run must be quick.
TEST(ClaimsFull, QuickRowsBesideTheFullRunsValues) {
  Json results{{"quick", true},
               {"rows", Json::array({Json{{"id", "a"}, {"measured", 1.5}}, Json{{"id", "b"}, {"measured", 3}},
                                     Json{{"id", "new"}, {"measured", 1}}})}};
  const Json full{{"kind", "trnsim-claims-results"},
                  {"quick", false},
                  {"rows", Json::array({Json{{"id", "a"}, {"measured", 2}}, Json{{"id", "b"}, {"measured", 3}}})}};
  compare_full(results, full, "full.json");
  const Json& rows = results["full"]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["id"], "a");
  EXPECT_DOUBLE_EQ(rows[0]["full"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(rows[0]["quick_over_full"].get<double>(), -0.25);
  EXPECT_DOUBLE_EQ(rows[1]["quick_over_full"].get<double>(), 0);
  Json quick_file = full;
  quick_file["quick"] = true;
  try {
    compare_full(results, quick_file, "q.json");
    ADD_FAILURE() << "a quick run's results accepted as the full one";
  } catch (const ClaimsError& e) {
    EXPECT_NE(std::string(e.what()).find("q.json:/quick: expected false"), std::string::npos) << e.what();
  }
  Json not_quick = results;
  not_quick["quick"] = false;
  EXPECT_THROW(compare_full(not_quick, full, "full.json"), ClaimsError);
}

}  // namespace
}  // namespace trnsim::claims
