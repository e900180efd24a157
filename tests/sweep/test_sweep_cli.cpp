// SPDX-License-Identifier: MIT
// `trnsim sweep` end to end on a small workload (1 s per point): a bad axis path fails before
// anything runs; a sweep killed outright, or one of whose workers is killed, resumes without
// losing a completed point or running one twice.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

const std::string kSrc = TRNSIM_SOURCE_DIR;

std::string read(const fs::path& p) { return trnsim::test::read_text(p); }
fs::path fresh_dir(const std::string& name) { return trnsim::test::fresh_dir("sweepcli", name); }

// Six points of the 16-rank golden workload on the Trn2 instance.
fs::path write_sweep(const fs::path& dir, const std::string& path = "chip.hbm.bandwidth") {
  const fs::path f = dir / "s.json";
  std::ofstream(f) << Json{{"name", "six"},
                           {"config", kSrc + "/configs/racks/trn2-instance.json"},
                           {"trace", kSrc + "/tests/golden/inputs/golden-moe-16.json"},
                           {"axes", {{{"path", path}, {"values", {"1TB/s", "2TB/s", "3TB/s"}}},
                                     {{"path", "sim.seed"}, {"values", {1, 2}}}}}}
                          .dump();
  return f;
}

pid_t start(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(TRNSIM_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    ::execv(TRNSIM_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

// The points whose status.json says ok, with that file's bytes.
std::map<std::string, std::string> completed(const fs::path& out) {
  std::map<std::string, std::string> done;
  if (!fs::exists(out / "points")) return done;
  for (const auto& e : fs::directory_iterator(out / "points")) {
    const fs::path st = e.path() / "status.json";
    if (fs::exists(st) && Json::parse(read(st))["status"] == "ok") done[e.path().filename()] = read(st);
  }
  return done;
}

template <class Pred>
bool wait_for(Pred pred, int seconds = 120) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The pids of the children of `pid` (Linux: /proc/PID/task/PID/children).
std::vector<pid_t> children(pid_t pid) {
  std::istringstream in(read("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  std::vector<pid_t> out;
  pid_t c;
  while (in >> c) out.push_back(c);
  return out;
}

}  // namespace

TEST(SweepCli, BadAxisPathFailsBeforeAnythingRuns) {
  const fs::path d = fresh_dir("bad");
  const auto r = trnsim::test::run_trnsim("sweep " + write_sweep(d, "chip.hbm.bandwith").string() +
                                          " --out " + (d / "out").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("s.json:/axes/0: axis \"bandwith\" (path chip.hbm.bandwith), value 1TB/s: --set "
                       "chip.hbm.bandwith:/chip/hbm/bandwith: unknown key \"bandwith\"; did you mean "
                       "\"bandwidth\"?"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(d / "out"));  // nothing ran, nothing was written
  fs::remove_all(d);
}

TEST(SweepCli, KilledSweepResumesWithoutLosingOrRepeatingPoints) {
  const fs::path d = fresh_dir("kill");
  const fs::path out = d / "out";
  const pid_t pid = start({"sweep", write_sweep(d).string(), "--out", out.string(), "-j", "1"});
  ASSERT_TRUE(wait_for([&] { return completed(out).size() >= 2; }));
  ::kill(pid, SIGKILL);  // the whole sweep, outright: its running point dies with it
  int st = 0;
  ::waitpid(pid, &st, 0);
  const auto before = completed(out);
  ASSERT_GE(before.size(), 2u);
  ASSERT_LT(before.size(), 6u);
  const auto r = trnsim::test::run_trnsim("sweep resume " + out.string() + " -j 2");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::size_t k = before.size();
  EXPECT_NE(r.out.find("6 points in this run (" + std::to_string(6 - k) + " ran, " + std::to_string(k) +
                       " already done), 0 failed"),
            std::string::npos)
      << r.out;
  const auto after = completed(out);
  EXPECT_EQ(after.size(), 6u);
  for (const auto& [id, text] : before) EXPECT_EQ(after.at(id), text) << id << " ran again";
  const Json merged = Json::parse(read(out / "sweep.json"));
  ASSERT_EQ(merged["groups"].size(), 3u);
  for (const auto& g : merged["groups"]) {
    EXPECT_EQ(g["ok"], 2);
    EXPECT_GT(g["metrics"]["step_time_ns"]["mean"].get<double>(), 0);
    // sim.seed perturbs the fabric's arbitrary choices, so two seeds give a spread.
    EXPECT_GT(g["metrics"]["step_time_ns"]["stddev"].get<double>(), 0.0);
  }
  // More HBM bandwidth, shorter step.
  EXPECT_GT(merged["groups"][0]["metrics"]["step_time_ns"]["mean"].get<double>(),
            merged["groups"][2]["metrics"]["step_time_ns"]["mean"].get<double>());
  fs::remove_all(d);
}

TEST(SweepCli, KilledWorkerIsRecordedThenRunAgainOnResume) {
  const fs::path d = fresh_dir("worker");
  const fs::path out = d / "out";
  const pid_t pid = start({"sweep", write_sweep(d).string(), "--out", out.string(), "-j", "1"});
  std::vector<pid_t> kids;
  ASSERT_TRUE(wait_for([&] { return !(kids = children(pid)).empty(); }));
  ::kill(kids[0], SIGKILL);  // one `trnsim run` worker
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 1);  // a failed point: the others ran
  const Json failed = Json::parse(read(out / "points" / "p0000" / "status.json"));
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_EQ(failed["exit"], "killed by signal 9 (Killed)");
  EXPECT_EQ(completed(out).size(), 5u);
  const auto r = trnsim::test::run_trnsim("sweep status " + out.string());
  EXPECT_NE(r.out.find("6 points: 5 done, 1 failed, 0 running or interrupted, 0 pending"), std::string::npos) << r.out;
  const auto js = trnsim::test::run_trnsim("sweep status --json " + out.string(), false);
  ASSERT_EQ(js.code, 0) << js.out;
  const Json status = Json::parse(js.out);
  EXPECT_EQ(status["name"], "six");
  EXPECT_EQ(status["points"], 6);
  EXPECT_EQ(status["done"], 5);
  EXPECT_EQ(status["failed"], 1);
  EXPECT_EQ(status["running_or_interrupted"], 0);
  EXPECT_EQ(status["pending"], 0);
  ASSERT_EQ(status["failures"].size(), 1u);
  EXPECT_EQ(status["failures"][0]["point"], "p0000");
  EXPECT_TRUE(status["slurm"].is_null());
  const auto before = completed(out);
  const auto again = trnsim::test::run_trnsim("sweep resume " + out.string());
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_NE(again.out.find("(1 ran, 5 already done), 0 failed"), std::string::npos) << again.out;
  const auto after = completed(out);
  EXPECT_EQ(after.size(), 6u);
  for (const auto& [id, text] : before) EXPECT_EQ(after.at(id), text) << id << " ran again";
  fs::remove_all(d);
}

// A sweep whose points share the chip plan and the ops (here: the seed) calibrates once: the
// point that calibrates holds the cache's lock on its key, the other worker waits for its entry,
// and every later point reads it (docs/performance.md#calibration-cache).
TEST(SweepCli, LaterPointsTakeTheCalibrationFromTheCache) {
  const fs::path dir = fresh_dir("cache");
  const fs::path f = dir / "s.json";
  std::ofstream(f) << Json{{"name", "seeds"},
                           {"config", kSrc + "/configs/racks/trn2-instance.json"},
                           {"trace", kSrc + "/tests/golden/inputs/golden-moe-16.json"},
                           {"set", {"sim.fidelity=fast"}},
                           {"axes", {{{"path", "sim.seed"}, {"values", {1, 2, 3, 4}}}}}}
                          .dump();
  ::setenv("TRNSIM_CACHE_DIR", (dir / "cache").c_str(), 1);
  const auto r = trnsim::test::run_trnsim("sweep " + f.string() + " -j 2 --out " + (dir / "out").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::map<std::string, int> from;
  std::set<std::string> keys;
  for (const auto& e : fs::directory_iterator(dir / "out" / "points")) {
    const Json host = Json::parse(read(e.path() / "run" / "host.json"));
    ++from[host["calibration"]["from"].get<std::string>()];
    keys.insert(host["calibration"]["cache_key"].get<std::string>());
  }
  EXPECT_EQ(from["simulated"], 1);
  EXPECT_EQ(from["cache"], 3);
  EXPECT_EQ(keys.size(), 1u);
  fs::remove_all(dir);
}

// A sweep's points keep the files its figures need (report.json, summary.csv, host.json,
// config.json), not ops.csv, timeline.json and stats.json, unless the sweep file asks
// ("run_files": "all" or a list); a list without report.json is refused before anything runs.
TEST(SweepCli, PointsKeepOnlyTheFilesAsked) {
  const fs::path dir = fresh_dir("run-files");
  const auto sweep = [&](const std::string& name, const Json& run_files) {
    Json j{{"name", name},
           {"config", kSrc + "/configs/racks/trn2-instance.json"},
           {"trace", kSrc + "/tests/golden/inputs/golden-moe-16.json"},
           {"axes", {{{"path", "sim.seed"}, {"values", {1}}}}}};
    if (!run_files.is_null()) j["run_files"] = run_files;
    const fs::path f = dir / (name + ".json");
    std::ofstream(f) << j.dump();
    return trnsim::test::run_trnsim("sweep " + f.string() + " --out " + (dir / name).string());
  };
  const auto files = [&](const std::string& name) {
    std::set<std::string> n;
    for (const auto& e : fs::directory_iterator(dir / name / "points" / "p0000" / "run")) {
      n.insert(e.path().filename().string());
    }
    return n;
  };
  auto r = sweep("lean", Json());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(files("lean"), (std::set<std::string>{"config.json", "host.json", "report.json", "summary.csv"}));
  EXPECT_NE(read(dir / "lean" / "sweep.csv").find("step_time_ns"), std::string::npos);
  r = sweep("all", "all");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(files("all").size(), 7u);
  EXPECT_EQ(files("all").count("timeline.json"), 1u);
  r = sweep("some", Json::array({"report.json", "config.json", "ops.csv"}));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(files("some"), (std::set<std::string>{"config.json", "ops.csv", "report.json"}));
  // The two sweeps' step times agree: what is kept does not change what is simulated.
  const auto step = [&](const std::string& name) {
    return Json::parse(read(dir / name / "points" / "p0000" / "run" / "report.json"))["performance"]["step_time_ns"];
  };
  EXPECT_GT(step("lean").get<double>(), 0.0);
  EXPECT_EQ(step("lean"), step("all"));

  r = sweep("bad", Json::array({"config.json", "summary.csv"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("bad.json:/run_files: report.json is missing"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "bad" / "points" / "p0000" / "run"));
  r = sweep("typo", Json::array({"report.json", "config.json", "timeline"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("typo.json:/run_files/2: \"timeline\" is not a file a run writes"), std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

// sweep --dry-run --json: the points the table lists, by axis name; the filter's and the shard's
// counts. Nothing runs and nothing is written.
TEST(SweepCli, DryRunAsJson) {
  const fs::path d = fresh_dir("dry");
  const auto r = trnsim::test::run_trnsim("sweep --dry-run --json " + write_sweep(d).string() +
                                          " --shard 2/2 --out " + (d / "out").string(), false);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["name"], "six");
  EXPECT_EQ(j["combine"], "grid");
  ASSERT_EQ(j["axes"].size(), 2u);
  EXPECT_EQ(j["axes"][0]["name"], "bandwidth");
  EXPECT_EQ(j["axes"][0]["values"], Json::parse(R"(["1TB/s", "2TB/s", "3TB/s"])"));
  EXPECT_EQ(j["points_total"], 6);
  EXPECT_EQ(j["points_kept"], 6);
  EXPECT_EQ(j["shard"], "2/2");
  ASSERT_EQ(j["points"].size(), 3u);  // every second of six from the second, last axis fastest
  EXPECT_EQ(j["points"][0]["point"], "p0001");
  EXPECT_EQ(j["points"][0]["values"], Json::parse(R"({"bandwidth": "1TB/s", "seed": 2})"));
  EXPECT_FALSE(fs::exists(d / "out"));
  const auto no = trnsim::test::run_trnsim("sweep --json " + write_sweep(d).string());
  EXPECT_EQ(no.code, 2) << no.out;
  EXPECT_NE(no.out.find("sweep --json: prints the plan of --dry-run"), std::string::npos) << no.out;
  fs::remove_all(d);
}

namespace {

// The figure after `label` in `text` (the first number after it).
double figure_after(const std::string& text, const std::string& label) {
  const auto p = text.find(label);
  if (p == std::string::npos) return -1;
  return std::stod(text.substr(text.find_first_of("0123456789", p + label.size())));
}

}  // namespace

// sweep --estimate: each point's `run --estimate`, and their total at -j, by hand from those;
// nothing runs, nothing is written.
TEST(SweepCli, EstimateIsThePointsRunEstimatesAndTheirTotal) {
  const fs::path d = fresh_dir("estimate");
  const fs::path f = d / "s.json";
  const std::string config = kSrc + "/configs/racks/trn2-instance.json";
  const std::string trace = kSrc + "/tests/golden/inputs/golden-moe-16.json";
  std::ofstream(f) << Json{{"name", "two"}, {"config", config}, {"trace", trace},
                           {"axes", {{{"path", "sim.fidelity"}, {"values", {"fast", "detailed"}}}}}}
                          .dump();
  struct Figures {
    double events, memory_gb, wall_short, wall;
  };
  std::vector<Figures> runs;
  std::vector<std::string> rows;
  for (const char* fidelity : {"fast", "detailed"}) {
    const auto r = trnsim::test::run_trnsim("run --estimate --config " + config + " --trace " + trace +
                                            " --set sim.fidelity=" + fidelity, false);
    ASSERT_EQ(r.code, 0) << r.out;
    const double wall_short = figure_after(r.out, "wall time    about ");
    const std::string to = r.out.substr(r.out.find(" to ", r.out.find("wall time    about ")));
    runs.push_back({figure_after(r.out, "events       "), figure_after(r.out, "memory       "), wall_short,
                    figure_after(to, " to ")});
    // The point's row holds the run's own figures, as `run --estimate` prints them.
    const auto cut = [&](const std::string& label, const std::string& end) {
      const auto p = r.out.find(label) + label.size();
      return r.out.substr(p, r.out.find(end, p) - p);
    };
    rows.push_back(cut("events       ", " ") + " " + cut("memory       ", " GB") + " GB " +
                   cut("wall time    about ", " s ") + " s");
  }
  ASSERT_NE(runs[0].events, runs[1].events);  // the points differ
  for (int jobs : {1, 2}) {
    const auto s = trnsim::test::run_trnsim("sweep " + f.string() + " --estimate -j " + std::to_string(jobs) +
                                            " --out " + (d / "out").string(), false);
    ASSERT_EQ(s.code, 0) << s.out;
    EXPECT_FALSE(fs::exists(d / "out"));
    // The table's columns are padded: compared with single spaces.
    std::string table;
    for (char c : s.out) {
      if (c != ' ' || table.empty() || table.back() != ' ') table += c;
    }
    EXPECT_NE(table.find("p0000 fast " + rows[0]), std::string::npos) << rows[0] << "\n" << s.out;
    EXPECT_NE(table.find("p0001 detailed " + rows[1]), std::string::npos) << rows[1] << "\n" << s.out;
    // The printed figures have 3 digits: the total is their sum (or largest) within rounding.
    const auto near = [](double got, double want) { EXPECT_NEAR(got, want, want * 0.01); };
    near(figure_after(s.out, "  events       "), runs[0].events + runs[1].events);
    const auto cpu = s.out.substr(s.out.find("  CPU time     about "));
    near(figure_after(cpu, "about "), runs[0].wall_short + runs[1].wall_short);
    near(figure_after(cpu, " to "), runs[0].wall + runs[1].wall);
    const auto wall = s.out.substr(s.out.find("  wall time    about "));
    // -j 1: one after the other; -j 2: both at once, the longer's wall and both memories.
    near(figure_after(wall, " to "), jobs == 1 ? runs[0].wall + runs[1].wall : std::max(runs[0].wall, runs[1].wall));
    near(figure_after(s.out, "  memory       "),
         jobs == 1 ? std::max(runs[0].memory_gb, runs[1].memory_gb) : runs[0].memory_gb + runs[1].memory_gb);
  }
  for (const char* bad : {"--slurm", "--json", "--no-merge"}) {
    const auto b = trnsim::test::run_trnsim("sweep " + f.string() + " --estimate " + bad);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.out;
    EXPECT_NE(b.out.find("sweep --estimate: prints the estimate and runs nothing"), std::string::npos) << b.out;
  }
  fs::remove_all(d);
}
