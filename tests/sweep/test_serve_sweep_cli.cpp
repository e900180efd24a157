// SPDX-License-Identifier: MIT
// Serving sweeps end to end (docs/sweeps.md#serving-sweeps): three concurrencies of Llama 3.1 8B
// on one Trn2 chip (a few seconds), whose merged sweep.csv and sweep.json carry each point's
// report.json figures; `trnsim compare` of two serving runs, and its refusal of a training run
// against a serving one; bad axes refused before anything runs; the Slurm array's script; and
// tools/plot --curve on the merged sweep.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

const std::string kSrc = TRNSIM_SOURCE_DIR;

std::string read(const fs::path& p) { return trnsim::test::read_text(p); }
fs::path fresh_dir(const std::string& name) { return trnsim::test::fresh_dir("servesweep", name); }

// One Trn2 chip serving Llama 3.1 8B to closed-loop users: 128-token prompts, 4 output tokens.
const char* kSpec = R"({
  "name": "small", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
  "scheduler": {"max_batch": 8, "token_budget": 512},
  "arrivals": {"kind": "closed", "users": 1, "input_tokens": 128, "output_tokens": 4, "seed": 3},
  "run": {"requests": 6},
  "timing": {"mode": "exact", "parallel": 1}
})";

fs::path write_files(const fs::path& dir, const Json& axes) {
  std::ofstream(dir / "small.json") << kSpec;
  const fs::path f = dir / "s.json";
  std::ofstream(f) << Json{{"name", "users"}, {"command", "serve"}, {"serving", "small.json"}, {"axes", axes}}.dump();
  return f;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) out.push_back(cell);
  return out;
}

class ServeSweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fresh_dir("users"));
    const fs::path f = write_files(*dir_, Json::parse(R"([{"path": "arrivals.users", "values": [1, 2, 4]}])"));
    const auto r = trnsim::test::run_trnsim("sweep " + f.string() + " -j 2 --out " + (*dir_ / "out").string());
    code_ = r.code;
    log_ = new std::string(r.out);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete log_;
  }
  static fs::path out() { return *dir_ / "out"; }
  static Json report(const std::string& id) {
    return Json::parse(read(out() / "points" / id / "run" / "report.json"));
  }
  static inline fs::path* dir_ = nullptr;
  static inline std::string* log_ = nullptr;
  static inline int code_ = -1;
};

TEST_F(ServeSweep, MergedRowsAreThePointsReports) {
  ASSERT_EQ(code_, 0) << *log_;
  EXPECT_NE(log_->find("sweep users: 3 points in this run (3 ran, 0 already done), 0 failed"), std::string::npos)
      << *log_;
  std::istringstream csv(read(out() / "sweep.csv"));
  std::string line;
  std::getline(csv, line);
  const auto head = split(line);
  ASSERT_GE(head.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(head.begin(), head.begin() + 5),
            (std::vector<std::string>{"users", "points", "ok", "failed", "ttft_p50_s"}));
  // Each column of a serving point and where its report holds it.
  const std::vector<std::pair<std::string, std::string>> cols{
      {"ttft_p50_s", "/results/ttft_s/p50"},
      {"tpot_p99_s", "/results/tpot_s/p99"},
      {"e2e_p90_s", "/results/e2e_s/p90"},
      {"output_tokens_per_s", "/results/throughput/output_tokens_per_s"},
      {"output_tokens_per_s_per_chip", "/results/throughput/output_tokens_per_s_per_chip"},
      {"tokens_per_s_per_user_p50", "/results/throughput/tokens_per_s_per_user/p50"},
      {"goodput_fraction", "/results/goodput/fraction"},
      {"output_tokens_per_s_per_mw", "/results/energy/output_tokens_per_s_per_mw"},
      {"joules_per_output_token", "/results/energy/joules_per_output_token"},
      {"requests", "/results/requests/measured"}};
  const Json merged = Json::parse(read(out() / "sweep.json"));
  EXPECT_EQ(merged["runs"], "serving");
  int rows = 0;
  for (int users : {1, 2, 4}) {
    ASSERT_TRUE(std::getline(csv, line));
    const auto row = split(line);
    ASSERT_EQ(row.size(), head.size()) << line;
    EXPECT_EQ(row[0], std::to_string(users));
    EXPECT_EQ(row[2], "1");  // ok
    const std::string id = "p000" + std::to_string(rows);
    const Json rep = report(id);
    EXPECT_EQ(rep["spec"]["arrivals"]["users"], users);
    for (const auto& [name, ptr] : cols) {
      const auto at = std::find(head.begin(), head.end(), name);
      ASSERT_NE(at, head.end()) << name;
      const double want = rep.at(Json::json_pointer(ptr)).get<double>();
      EXPECT_DOUBLE_EQ(std::stod(row[std::size_t(at - head.begin())]), want) << id << " " << name;
      EXPECT_DOUBLE_EQ(merged["points"][rows]["metrics"][name].get<double>(), want) << id << " " << name;
    }
    ++rows;
  }
  EXPECT_FALSE(std::getline(csv, line)) << line;
  // A point keeps the figures, not requests.csv and timeline.json.
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(out() / "points" / "p0000" / "run")) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"report.json", "summary.csv"}));
  // Six measured requests a point; more users, more tokens/s from the chip, fewer per user.
  EXPECT_EQ(report("p0000")["results"]["requests"]["measured"], 6);
  const auto per = [&](const char* id, const char* what) {
    return report(id).at("results").at("throughput").at(what).get<double>();
  };
  EXPECT_GT(per("p0002", "output_tokens_per_s_per_chip"), per("p0000", "output_tokens_per_s_per_chip"));
}

TEST_F(ServeSweep, ResumeRunsNothingAgain) {
  ASSERT_EQ(code_, 0) << *log_;
  const std::string before = read(out() / "points" / "p0001" / "status.json");
  const auto r = trnsim::test::run_trnsim("sweep resume " + out().string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(0 ran, 3 already done), 0 failed"), std::string::npos) << r.out;
  EXPECT_EQ(read(out() / "points" / "p0001" / "status.json"), before);
}

TEST_F(ServeSweep, CompareTwoServingRunsRowByRow) {
  ASSERT_EQ(code_, 0) << *log_;
  const std::string a = (out() / "points" / "p0000" / "run").string(), b = (out() / "points" / "p0002" / "run").string();
  const auto r = trnsim::test::run_trnsim("compare " + a + " " + b + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json c = Json::parse(r.out);
  EXPECT_EQ(c["kind"], "run");
  EXPECT_EQ(c["runs"], "serving");
  const Json ra = report("p0000"), rb = report("p0002");
  bool seen = false;
  for (const auto& row : c["rows"]) {
    if (row["metric"] != "ttft_p99_s") continue;
    seen = true;
    EXPECT_EQ(row["unit"], "s");
    EXPECT_EQ(row["a"], ra["results"]["ttft_s"]["p99"]);
    EXPECT_EQ(row["b"], rb["results"]["ttft_s"]["p99"]);
    EXPECT_DOUBLE_EQ(row["ratio"].get<double>(),
                     rb["results"]["ttft_s"]["p99"].get<double>() / ra["results"]["ttft_s"]["p99"].get<double>());
  }
  EXPECT_TRUE(seen);
  // What was served differs in one key: the users.
  ASSERT_EQ(c["config_differences"].size(), 1u) << c["config_differences"].dump();
  EXPECT_EQ(c["config_differences"][0]["pointer"], "/spec/arrivals/users");
  EXPECT_EQ(c["config_differences"][0]["a"], 1);
  EXPECT_EQ(c["config_differences"][0]["b"], 4);
  const auto text = trnsim::test::run_trnsim("compare " + a + " " + b);
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("output_tokens_per_s_per_chip"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("/spec/arrivals/users: 1 -> 4"), std::string::npos) << text.out;
}

TEST_F(ServeSweep, CompareRefusesTrainingAgainstServing) {
  ASSERT_EQ(code_, 0) << *log_;
  const std::string serving = (out() / "points" / "p0000" / "run").string();
  const std::string training = kSrc + "/tests/golden/expected/run_trn3_gen2";
  const auto r = trnsim::test::run_trnsim("compare " + training + " " + serving);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(training + " holds a training run's report (`trnsim run`), " + serving +
                       " a serving run's (`trnsim serve`)"),
            std::string::npos)
      << r.out;
}

TEST_F(ServeSweep, CompareTwoServingSweeps) {
  ASSERT_EQ(code_, 0) << *log_;
  const auto r = trnsim::test::run_trnsim("compare " + out().string() + " " + out().string() + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json c = Json::parse(r.out);
  EXPECT_EQ(c["kind"], "sweep");
  EXPECT_EQ(c["runs"], "serving");
  EXPECT_EQ(c["rows"].size(), 3u * 21u);  // three points, each metric of a serving run
  EXPECT_EQ(c["config_differences"].size(), 0u);
}

TEST_F(ServeSweep, PlotDrawsTheCurve) {
  ASSERT_EQ(code_, 0) << *log_;
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") != 0) GTEST_SKIP() << "no matplotlib";
  const std::string prefix = (*dir_ / "curve").string();
  const std::string cmd = "/usr/bin/python3 " + kSrc + "/tools/plot --curve " + out().string() + " --out " + prefix +
                          " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(read(prefix + ".png").substr(0, 8), std::string("\x89PNG\r\n\x1a\n"));
}

TEST(ServeSweepCli, BadAxesFailBeforeAnythingRuns) {
  const fs::path d = fresh_dir("bad");
  auto r = trnsim::test::run_trnsim(
      "sweep " + write_files(d, Json::parse(R"([{"path": "arrivals.user", "values": [1, 2]}])")).string() +
      " --out " + (d / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("s.json:/axes/0: axis \"user\" (path arrivals.user), value 1: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unknown key \"user\""), std::string::npos) << r.out;
  r = trnsim::test::run_trnsim(
      "sweep " + write_files(d, Json::parse(R"([{"path": "rack", "values": ["trn2-ultraserver", "trn3-ultraserve"]}])"))
                     .string() +
      " --out " + (d / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("s.json:/axes/0: axis \"rack\" (path rack), value trn3-ultraserve: trn3-ultraserve: no such "
                       "file or preset"),
            std::string::npos)
      << r.out;
  r = trnsim::test::run_trnsim(
      "sweep " + write_files(d, Json::parse(R"([{"path": "rack.sim.fidelty", "values": ["fast"]}])")).string() +
      " --out " + (d / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("s.json:/axes/0: axis \"fidelty\" (path rack.sim.fidelty), value fast:"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(d / "out"));
  // A serving sweep names its spec, and takes no trace.
  std::ofstream(d / "t.json") << R"({"name": "t", "command": "serve", "serving": "small.json", "trace": "x",
                                     "axes": [{"path": "arrivals.users", "values": [1]}]})";
  r = trnsim::test::run_trnsim("sweep " + (d / "t.json").string() + " --dry-run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("t.json:/trace: a serving sweep takes no \"trace\""), std::string::npos) << r.out;
  std::ofstream(d / "u.json") << R"({"name": "u", "command": "serve",
                                     "axes": [{"path": "arrivals.users", "values": [1]}]})";
  r = trnsim::test::run_trnsim("sweep " + (d / "u.json").string() + " --dry-run");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("u.json:/serving: missing"), std::string::npos) << r.out;
  fs::remove_all(d);
}

// sweep --estimate of a serving sweep: each point's row holds the shape bound `serve --estimate`
// gives that point (its spec with the point's sets), and nothing runs.
TEST(ServeSweepCli, EstimateRowsAreEachPointsServeEstimate) {
  const fs::path d = fresh_dir("estimate");
  const fs::path f = write_files(d, Json::parse(R"([{"path": "arrivals.users", "values": [1, 4]}])"));
  const auto s = trnsim::test::run_trnsim("sweep " + f.string() + " --estimate -j 1 --out " +
                                          (d / "out").string());
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_NE(s.out.find("estimate of serving sweep users (2 points of"), std::string::npos) << s.out;
  EXPECT_FALSE(fs::exists(d / "out"));
  for (const char* users : {"1", "4"}) {
    const auto e = trnsim::test::run_trnsim("serve " + (d / "small.json").string() +
                                            " --set arrivals.users=" + users + " --estimate");
    ASSERT_EQ(e.code, 0) << e.out;
    const std::string key = "shapes       at least 1, at most ";
    const std::size_t at = e.out.find(key);
    ASSERT_NE(at, std::string::npos) << e.out;
    const std::string shapes = e.out.substr(at + key.size(), e.out.find(' ', at + key.size()) - at - key.size());
    // The point's row: its id, the axis value, the requests, then the shapes.
    std::istringstream rows(s.out);
    std::string line;
    bool found = false;
    while (std::getline(rows, line)) {
      std::istringstream cells(line);
      std::string id, value, requests, bound;
      cells >> id >> value >> requests >> bound;
      if (value == users && id != "point") {
        EXPECT_EQ(bound, shapes) << line << "\n" << e.out;
        found = true;
      }
    }
    EXPECT_TRUE(found) << s.out;
  }
  fs::remove_all(d);
}

// sweep --estimate counts a shape group's grid once: points on one rack (one model, layout and
// grid) share their shapes through the shape cache, points on another rack do not. The small spec
// in grid mode (2 points per octave, chunked prefill), KV and row tile 128, 1 attention group:
// 6 requests of 128 + 4 tokens reach decode batch 6, context 132, chunk 128 after 127 cached:
// decodes 5 batches (1, 2, 3, 4, 6) x 4 contexts (1, 128, 129, 256), prefills 2 chunks (1, 128)
// x 6 cached (0, 1, 4, 16, 64, 256), mixed 3 batches (1, 4, 16) x 4 rows (1, 128, 129, 256) and
// 1 anchor decode (16 above the decode batches): 20 + 12 + 12 + 1 = 45. Two requests: batches
// (1, 2), mixed (1, 4), one anchor (4): 8 + 12 + 8 + 1 = 29. On a rack the group's grid is the
// larger point's (45, not 45 + 29); the two racks count 45 each.
TEST(ServeSweepCli, EstimateCountsAShapeGroupsGridOnce) {
  const fs::path d = fresh_dir("estimate-groups");
  write_files(d, Json::array());
  const fs::path f = d / "g.json";
  std::ofstream(f) << R"({"name": "groups", "command": "serve", "serving": "small.json", "set": ["timing.mode=grid"],
                          "axes": [{"path": "rack", "values": ["trn2-ultraserver", "trn3-gen2-ultraserver"]},
                                   {"path": "run.requests", "values": [6, 2]}]})";
  const auto s = trnsim::test::run_trnsim("sweep " + f.string() + " --estimate -j 1");
  ASSERT_EQ(s.code, 0) << s.out;
  std::istringstream rows(s.out);
  std::string line;
  std::vector<std::string> bounds;
  while (std::getline(rows, line)) {
    std::istringstream cells(line);
    std::string id, rack, requests, issued, bound;
    cells >> id >> rack >> requests >> issued >> bound;
    if (id.rfind("p00", 0) == 0) bounds.push_back(requests + " " + bound);
  }
  EXPECT_EQ(bounds, (std::vector<std::string>{"6 45", "2 29", "6 45", "2 29"})) << s.out;
  EXPECT_NE(s.out.find("shapes       90 at most, all points together: 2 shape groups"), std::string::npos) << s.out;
  EXPECT_NE(s.out.find("148 the points' bounds summed"), std::string::npos) << s.out;
  // One rack alone: its group's 45.
  std::ofstream(f) << R"({"name": "groups", "command": "serve", "serving": "small.json", "set": ["timing.mode=grid"],
                          "axes": [{"path": "run.requests", "values": [6, 2]}]})";
  const auto one = trnsim::test::run_trnsim("sweep " + f.string() + " --estimate -j 1");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_NE(one.out.find("shapes       45 at most, all points together: 1 shape group "), std::string::npos) << one.out;
  // Exact timing: each point its own bound (no grid to share).
  std::ofstream(f) << R"({"name": "groups", "command": "serve", "serving": "small.json",
                          "axes": [{"path": "run.requests", "values": [6, 2]}]})";
  const auto exact = trnsim::test::run_trnsim("sweep " + f.string() + " --estimate -j 1");
  ASSERT_EQ(exact.code, 0) << exact.out;
  EXPECT_NE(exact.out.find("all points together: 2 shape groups"), std::string::npos) << exact.out;
  fs::remove_all(d);
}

// The Slurm array of a serving sweep: its plan is written as the tasks read it, each task a
// `trnsim sweep resume --shard` of the same directory (no cluster needed to check the script).
TEST(ServeSweepCli, SlurmDryRunPrintsTheArray) {
  const fs::path d = fresh_dir("slurm");
  const fs::path f = write_files(d, Json::parse(R"([{"path": "arrivals.users", "values": [1, 2, 4]},
                                                    {"path": "rack", "values": ["trn2-ultraserver", "trn3-gen2-ultraserver"]}])"));
  const auto r = trnsim::test::run_trnsim("sweep " + f.string() + " --slurm --dry-run --json --out " +
                                          (d / "out").string(), false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["points"], 6);
  EXPECT_EQ(j["array_tasks"], 6);
  const std::string script = j["sbatch_script"];
  EXPECT_NE(script.find("#SBATCH --array=1-6"), std::string::npos) << script;
  EXPECT_NE(script.find("sweep resume"), std::string::npos) << script;
  EXPECT_FALSE(fs::exists(d / "out"));
  fs::remove_all(d);
}

// The shipped curve (configs/sweeps/serving-llama-3.1-70b-curve.json): its 24 points (12
// concurrencies, each with its warm-up and measured requests, on each rack) load as `trnsim
// serve` loads them.
TEST(ServeSweepCli, ShippedCurveValidates) {
  const auto r = trnsim::test::run_trnsim("sweep " + kSrc + "/configs/sweeps/serving-llama-3.1-70b-curve.json --dry-run --json",
                                          false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["points_kept"], 24);
  EXPECT_EQ(j["points_total"], 2 * 12 * 12 * 12);
  EXPECT_EQ(j["points"][23]["values"], Json::parse(R"({"rack": "trn2-ultraserver", "users": 12288, "warmup": 12288,
                                                      "requests": 49152})"));
  // DeepSeek-V3's curve (issue 28): the same 2 racks x 12 concurrencies, from 8,192 users down to
  // 4, the racks alternating (the first point on each rack simulates most of its grid).
  const auto d = trnsim::test::run_trnsim("sweep " + kSrc + "/configs/sweeps/serving-deepseek-v3-curve.json --dry-run --json",
                                          false);
  ASSERT_EQ(d.code, 0) << d.out;
  const Json k = Json::parse(d.out);
  EXPECT_EQ(k["points_kept"], 24);
  EXPECT_EQ(k["points"][0]["values"], Json::parse(R"({"rack": "trn3-gen2-ultraserver", "users": 8192, "warmup": 8192,
                                                     "requests": 32768})"));
  EXPECT_EQ(k["points"][1]["values"], Json::parse(R"({"rack": "trn2-ultraserver", "users": 8192, "warmup": 8192,
                                                     "requests": 32768})"));
  EXPECT_EQ(k["points"][23]["values"], Json::parse(R"({"rack": "trn2-ultraserver", "users": 4, "warmup": 4,
                                                      "requests": 16})"));
}

}  // namespace

namespace {

// timeline.json of a serving run: one request of 3 output tokens on an idle chip is three
// iterations on replica 0's track (its prefill, then two decodes), each as long as its shape's
// simulated time in report.json, and the request's spans: no queue, prefill to its first token
// (TTFT), decode to its last (E2E - TTFT).
TEST(ServeTimeline, IterationTracksAndRequestSpans) {
  const fs::path d = fresh_dir("timeline");
  std::ofstream(d / "one.json") << R"({
    "name": "one", "rack": "trn2-ultraserver", "model": "llama-3.1-8b", "layout": "tp=1",
    "arrivals": {"kind": "poisson", "rate_per_s": 1, "input_tokens": 128, "output_tokens": 3},
    "run": {"requests": 1}, "timing": {"mode": "exact", "parallel": 1}})";
  const auto r = trnsim::test::run_trnsim("serve " + (d / "one.json").string() + " --out " + (d / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json rep = Json::parse(read(d / "out" / "report.json"));
  const Json tl = Json::parse(read(d / "out" / "timeline.json"));
  std::vector<Json> iterations, spans;
  for (const auto& e : tl["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["pid"] == 1 ? iterations : spans).push_back(e);
  }
  ASSERT_EQ(iterations.size(), 3u);
  EXPECT_EQ(iterations[0]["name"], "prefill");
  EXPECT_EQ(iterations[0]["args"]["prefill"], 128);
  EXPECT_EQ(iterations[1]["name"], "decode");
  EXPECT_EQ(iterations[2]["args"]["context"], 130);
  // Each iteration lasts its shape's time (columns decode, context, prefill, prefill_context, time_s).
  for (const auto& it : iterations) {
    EXPECT_EQ(it["tid"], 0);
    double want = -1;
    for (const auto& row : rep["timing"]["shapes"]["rows"]) {
      if (row[0] == it["args"]["decode"] && row[1] == it["args"]["context"] && row[2] == it["args"]["prefill"]) {
        want = row[4].get<double>() * 1e6;
      }
    }
    EXPECT_NEAR(it["dur"].get<double>(), want, 1e-6) << it.dump();
  }
  EXPECT_NEAR(iterations[1]["ts"].get<double>(),
              iterations[0]["ts"].get<double>() + iterations[0]["dur"].get<double>(), 1e-6);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0]["name"], "queue");
  EXPECT_EQ(spans[0]["dur"], 0.0);
  EXPECT_EQ(spans[1]["name"], "prefill");
  const double ttft = rep["results"]["ttft_s"]["p50"].get<double>(), e2e = rep["results"]["e2e_s"]["p50"].get<double>();
  EXPECT_NEAR(spans[1]["dur"].get<double>(), ttft * 1e6, 1e-6);
  EXPECT_EQ(spans[2]["name"], "decode");
  EXPECT_NEAR(spans[2]["dur"].get<double>(), (e2e - ttft) * 1e6, 1e-6);
  EXPECT_EQ(tl["otherData"]["requests_drawn"], 1);
  EXPECT_EQ(tl["otherData"]["iterations_total"], 3);
  // --out-files keeps some; a name serve does not write is refused.
  const auto some = trnsim::test::run_trnsim("serve " + (d / "one.json").string() + " --out " + (d / "out").string() +
                                             " --out-files report.json,summary.csv");
  ASSERT_EQ(some.code, 0) << some.out;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(d / "out")) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"report.json", "summary.csv"}));
  const auto bad = trnsim::test::run_trnsim("serve " + (d / "one.json").string() + " --out " + (d / "out").string() +
                                            " --out-files report.json,timeline");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--out-files timeline: not a file serve writes"), std::string::npos) << bad.out;
  fs::remove_all(d);
}

}  // namespace
