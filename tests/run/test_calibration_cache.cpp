// SPDX-License-Identifier: MIT
// The op profile store (src/run/profile_cache.hpp): a run that finds its profiles in the store, or
// some of them, writes the same report, byte for byte, as the run that calibrated them; corrupt
// and foreign lines are ignored with a warning; concurrent writers leave every line whole; the
// size cap evicts the least recently used stores.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"
#include "profile_cache.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using trnsim::test::run_trnsim;

fs::path scratch(const std::string& what) {
  const fs::path d = fs::temp_directory_path() / ("trnsim-cache-" + what + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The fast tier (op-level compute, calibrated) on the golden 16-rank trace.
constexpr const char* kRun =
    "run --config trn2-ultraserver --trace tests/golden/inputs/golden-moe-16.json "
    "--set sim.fidelity=fast --no-progress --log-level info --out ";

struct Outcome {
  trnsim::test::CliResult cli;
  Json host;
  std::map<std::string, std::string> files;  // the deterministic ones
};

Outcome run_cached(const fs::path& cache, const fs::path& out, const std::string& extra_env = "") {
  Outcome o;
  const std::string cmd = "env TRNSIM_CACHE_DIR=" + cache.string() + " " + extra_env + " " +
                          TRNSIM_BINARY + " " + kRun + out.string();
  // run_trnsim prefixes the binary; run through env(1) instead to set the cache folder.
  o.cli = trnsim::test::CliResult{};
  FILE* p = ::popen(("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 " + cmd + " 2>&1").c_str(), "r");
  if (p) {
    char buf[4096];
    while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) o.cli.out.append(buf, n);
    const int status = ::pclose(p);
    o.cli.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  if (o.cli.code != 0) return o;
  o.host = Json::parse(trnsim::test::read_text(out / "host.json"));
  for (const char* f : {"report.json", "summary.csv", "stats.json", "ops.csv", "timeline.json"}) {
    o.files[f] = trnsim::test::read_text(out / f);
  }
  return o;
}

// report.json without its identity (the command line and the cache key live there).
Json results_of(const Outcome& o) {
  Json r = Json::parse(o.files.at("report.json"));
  r.erase("identity");
  return r;
}

TEST(CalibrationCache, HitAndMissGiveByteIdenticalReports) {
  const fs::path cache = scratch("hit");
  const fs::path out = cache / "out";
  const Outcome miss = run_cached(cache, out);
  ASSERT_EQ(miss.cli.code, 0) << miss.cli.out;
  EXPECT_EQ(miss.host["calibration"]["from"], "simulated");
  EXPECT_EQ(miss.host["calibration"]["ops_from_cache"], 0);
  const std::size_t ops = miss.host["calibration"]["ops_simulated"];
  EXPECT_GT(ops, 0u);
  const std::string key = miss.host["calibration"]["cache_key"];
  EXPECT_EQ(key.size(), 32u);
  const fs::path file = miss.host["calibration"]["cache_file"].get<std::string>();
  EXPECT_EQ(file.parent_path(), cache / "op-profiles");
  EXPECT_EQ(file.extension(), ".ops");
  // One line per op, and one of the static power.
  const std::string lines = trnsim::test::read_text(file);
  EXPECT_EQ(std::size_t(std::count(lines.begin(), lines.end(), '\n')), ops + 1);

  const Outcome hit = run_cached(cache, out);  // same command line, so identity is equal too
  ASSERT_EQ(hit.cli.code, 0) << hit.cli.out;
  EXPECT_EQ(hit.host["calibration"]["from"], "cache");
  EXPECT_EQ(hit.host["calibration"]["ops_simulated"], 0);
  EXPECT_EQ(hit.host["calibration"]["ops_from_cache"], ops);
  EXPECT_EQ(hit.host["calibration"]["cache_key"], key);
  EXPECT_NE(hit.cli.out.find("calibration skipped"), std::string::npos) << hit.cli.out;
  for (const auto& [name, text] : miss.files) EXPECT_TRUE(text == hit.files.at(name)) << name;
  const Json id = Json::parse(hit.files.at("report.json"))["identity"];
  EXPECT_EQ(id["models"]["compute"]["calibration_cache_key"], key);

  // Off (the environment's switch): calibrated afresh, nothing read, the same results.
  const Outcome off = run_cached(cache, out, "TRNSIM_NO_CACHE=1");
  ASSERT_EQ(off.cli.code, 0) << off.cli.out;
  EXPECT_EQ(off.host["calibration"]["from"], "simulated");
  EXPECT_EQ(off.host["calibration"]["cache_key"], "");
  EXPECT_EQ(results_of(off), results_of(miss));
  for (const char* f : {"summary.csv", "stats.json", "ops.csv", "timeline.json"}) {
    EXPECT_TRUE(off.files.at(f) == miss.files.at(f)) << f;
  }
  fs::remove_all(cache);
}

// The lines of a store file.
std::vector<std::string> lines_of(const fs::path& file) {
  std::vector<std::string> out;
  std::istringstream in(trnsim::test::read_text(file));
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  for (const auto& l : lines) f << l << '\n';
}

// Some ops from the store, the others simulated: the same report to the byte; a corrupt or
// foreign line is ignored with a warning and its op simulated again; a torn last line (a writer
// that died mid-append) is passed over.
TEST(CalibrationCache, PartialCorruptAndForeignLinesGiveTheSameReport) {
  const fs::path cache = scratch("corrupt");
  const fs::path out = cache / "out";
  const Outcome first = run_cached(cache, out);
  ASSERT_EQ(first.cli.code, 0) << first.cli.out;
  const fs::path file = first.host["calibration"]["cache_file"].get<std::string>();
  const std::size_t ops = first.host["calibration"]["ops_simulated"];
  ASSERT_GE(ops, 4u);
  const std::vector<std::string> all = lines_of(file);
  ASSERT_EQ(all.size(), ops + 1);

  auto expect_same = [&](const Outcome& o) {
    ASSERT_EQ(o.cli.code, 0) << o.cli.out;
    for (const auto& [name, text] : first.files) EXPECT_TRUE(text == o.files.at(name)) << name;
  };
  {  // half the lines, the last of them torn
    std::vector<std::string> half(all.begin(), all.begin() + std::ptrdiff_t(ops / 2));
    write_lines(file, half);
    const std::string text = trnsim::test::read_text(file);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text.substr(0, text.size() - 20);
  }
  const Outcome partial = run_cached(cache, out);
  expect_same(partial);
  EXPECT_EQ(partial.host["calibration"]["from"], "simulated");
  EXPECT_EQ(partial.host["calibration"]["ops_from_cache"], ops / 2 - 1);
  EXPECT_EQ(partial.host["calibration"]["ops_simulated"], ops - (ops / 2 - 1));
  EXPECT_EQ(partial.cli.out.find("corrupt or foreign"), std::string::npos) << partial.cli.out;

  // A profile's text changed (the checksum no longer matches), a line of another plan's file
  // (its checksum is of that plan's hash), and a line that is no store line.
  std::vector<std::string> bad = all;
  const auto digit = bad[0].find_first_of("123456789", bad[0].find("time_ps"));
  ASSERT_NE(digit, std::string::npos);
  bad[0][digit] = bad[0][digit] == '9' ? '8' : '9';
  const std::string value = bad[1].substr(bad[1].find('\t', 33) + 1);
  const std::string op = bad[1].substr(33, bad[1].find('\t', 33) - 33);
  bad[1] = trnsim::run::content_hash("0123456789abcdef0123456789abcdef\t" + op + "\t" + value) +
           "\t" + op + "\t" + value;
  bad.push_back("not a line of the store");
  write_lines(file, bad);
  const Outcome corrupt = run_cached(cache, out);
  expect_same(corrupt);
  EXPECT_NE(corrupt.cli.out.find("ignoring 3 corrupt or foreign line(s) of " + file.string()),
            std::string::npos) << corrupt.cli.out;
  EXPECT_EQ(corrupt.host["calibration"]["ops_simulated"], 2);

  {  // the right checksum, a profile with a field of the wrong type
    const std::string plan = file.stem().string();
    std::string v = value;
    const auto at = v.find("\"time_ps\":");
    ASSERT_NE(at, std::string::npos);
    v.insert(at + 10, "\"soon\",\"x\":");
    std::vector<std::string> typed = all;
    typed[1] = trnsim::run::content_hash(plan + "\t" + op + "\t" + v) + "\t" + op + "\t" + v;
    write_lines(file, typed);
  }
  const Outcome typed = run_cached(cache, out);
  expect_same(typed);
  EXPECT_NE(typed.cli.out.find("ignoring 1 corrupt or foreign line(s)"), std::string::npos)
      << typed.cli.out;
  EXPECT_EQ(typed.host["calibration"]["ops_simulated"], 1);

  const Outcome again = run_cached(cache, out);  // the run above appended the op again
  expect_same(again);
  EXPECT_EQ(again.host["calibration"]["from"], "cache");
  fs::remove_all(cache);
}

// A small calibration: two made-up profiles and the static power.
trnsim::run::CachedCalibration sample(double w) {
  trnsim::run::CachedCalibration c;
  trnsim::model::OpProfile p;
  p.time_ps = 123456789;
  p.flops = 1.0 / 3.0;  // a double that needs all 17 digits
  p.engine_busy_s = {1e-9, 2.5e-7, 0.1, 0};
  p.actions[trnsim::model::Action::hbm_read].count_priced(4096, 1.25e-6);
  c.profiles["gemm a"] = p;
  p.time_ps = 7;
  c.profiles["gemm b"] = p;
  c.static_power_w = w;
  return c;
}

// The store key of a Trn3 chip plan with `cores` more cores than the preset's (distinct plans).
trnsim::run::CacheKey plan_of(int cores) {
  auto plan = trnsim::resolve::plan_chip(trnsim::test::chip_preset("trn3"), 1);
  plan.params.cores += cores;
  return trnsim::run::plan_key(plan, false);
}

TEST(CalibrationCache, KeyIsCanonical) {
  const auto plan = trnsim::resolve::plan_chip(trnsim::test::chip_preset("trn3"), 1);
  const auto a = trnsim::run::calibration_key(plan, {"x", "y"}, false);
  EXPECT_EQ(a.hex, trnsim::run::calibration_key(plan, {"y", "x", "y"}, false).hex);
  EXPECT_NE(a.hex, trnsim::run::calibration_key(plan, {"x", "y"}, true).hex);
  EXPECT_NE(a.hex, trnsim::run::calibration_key(plan, {"x"}, false).hex);
  auto other = plan;
  other.params.cores += 1;
  EXPECT_NE(a.hex, trnsim::run::calibration_key(other, {"x", "y"}, false).hex);
  EXPECT_NE(a.canonical.find(trnsim::run::build_identity()), std::string::npos);
  // The store's key: the plan without the ops.
  EXPECT_EQ(trnsim::run::plan_key(plan, false).hex, trnsim::run::plan_key(plan, false).hex);
  EXPECT_NE(trnsim::run::plan_key(plan, false).hex, trnsim::run::plan_key(plan, true).hex);
  EXPECT_NE(trnsim::run::plan_key(plan, false).hex, trnsim::run::plan_key(other, false).hex);
}

TEST(CalibrationCache, StoreHitsMissesAndRoundTripsExactly) {
  const fs::path dir = scratch("roundtrip");
  const trnsim::run::ProfileCache cache({true, dir.string(), 1 << 20});
  const auto plan = plan_of(1);
  EXPECT_TRUE(cache.get(plan, {"gemm a"}).profiles.empty());
  EXPECT_FALSE(cache.get(plan, {"gemm a"}).static_power_w);
  cache.put(plan, sample(42.5));
  const auto got = cache.get(plan, {"gemm a", "gemm b", "gemm c"});
  EXPECT_EQ(got.static_power_w, 42.5);
  ASSERT_EQ(got.profiles.size(), 2u);  // gemm c: a miss
  const auto& p = got.profiles.at("gemm a");
  EXPECT_EQ(p.time_ps, 123456789);
  EXPECT_EQ(p.flops, 1.0 / 3.0);
  EXPECT_EQ(p.engine_busy_s[1], 2.5e-7);
  EXPECT_EQ(p.actions.at(trnsim::model::Action::hbm_read).rated_j, 1.25e-6);
  EXPECT_EQ(got.profiles.at("gemm b").time_ps, 7);
  // Only what is asked for.
  EXPECT_EQ(cache.get(plan, {"gemm b"}).profiles.size(), 1u);
  // Another plan: another file, nothing found.
  EXPECT_NE(cache.path_of(plan_of(2)), cache.path_of(plan));
  EXPECT_TRUE(cache.get(plan_of(2), {"gemm a"}).profiles.empty());
  // Appended later: found beside the first lines.
  trnsim::run::CachedCalibration c;
  c.profiles["gemm c"] = sample(0).profiles.at("gemm b");
  cache.put(plan, c);
  EXPECT_EQ(cache.get(plan, {"gemm a", "gemm b", "gemm c"}).profiles.size(), 3u);
  fs::remove_all(dir);
}

// Writers appending at once (as serve's shape children do): every line whole, every reader
// in between finds every profile written before it read.
TEST(CalibrationCache, ConcurrentWritersLeaveWholeLines) {
  const fs::path dir = scratch("writers");
  const trnsim::run::CacheSettings s{true, dir.string(), 1 << 24};
  const auto plan = plan_of(1);
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const trnsim::run::ProfileCache cache(s);
      for (int i = 0; i < 50; ++i) {
        trnsim::run::CachedCalibration c = sample(42.5);
        auto q = c.profiles.at("gemm a");
        c.profiles.clear();
        for (int j = 0; j < 20; ++j) c.profiles[fmt::format("op {} {} {}", w, i, j)] = q;
        cache.put(plan, c);
        std::set<std::string> mine;
        for (int j = 0; j < 20; ++j) mine.insert(fmt::format("op {} {} {}", w, i, j));
        const auto got = cache.get(plan, mine);
        if (got.profiles.size() != 20 || got.static_power_w != 42.5) ::_exit(3);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<std::string> every;
  for (int w = 0; w < 4; ++w) {
    for (int i = 0; i < 50; ++i) {
      for (int j = 0; j < 20; ++j) every.insert(fmt::format("op {} {} {}", w, i, j));
    }
  }
  testing::internal::CaptureStderr();
  const auto got = trnsim::run::ProfileCache(s).get(plan, every);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(got.profiles.size(), every.size());
  EXPECT_EQ(err.find("corrupt"), std::string::npos) << err;
  // Every line written once, whole. (A writer that finds the file not ending in a newline, as
  // after a crashed writer, starts with one: seen mid-append from another writer, that is an
  // empty line, which readers pass over.)
  const auto lines = lines_of(trnsim::run::ProfileCache(s).path_of(plan));
  EXPECT_EQ(std::size_t(std::count_if(lines.begin(), lines.end(),
                                      [](const std::string& l) { return !l.empty(); })),
            4u * 50 * 21);
  fs::remove_all(dir);
}

TEST(CalibrationCache, EvictsTheLeastRecentlyUsedBeyondItsCap) {
  const fs::path dir = scratch("evict");
  trnsim::run::ProfileCache probe({true, dir.string(), 1 << 20});
  probe.put(plan_of(1), sample(1));
  const auto one = fs::file_size(probe.path_of(plan_of(1)));
  fs::remove_all(dir);
  // Room for two stores (the sizes differ by a digit at most).
  const trnsim::run::ProfileCache cache({true, dir.string(), 2 * one + 8});
  cache.put(plan_of(1), sample(1));
  ::usleep(20000);
  cache.put(plan_of(2), sample(2));
  ::usleep(20000);
  ASSERT_EQ(cache.get(plan_of(1), {"gemm a"}).profiles.size(), 1u);  // used: now more recent
  ::usleep(20000);
  cache.put(plan_of(3), sample(3));
  EXPECT_TRUE(fs::exists(cache.path_of(plan_of(1))));
  EXPECT_FALSE(fs::exists(cache.path_of(plan_of(2))));
  EXPECT_TRUE(fs::exists(cache.path_of(plan_of(3))));
  fs::remove_all(dir);
}

// The eviction every cache folder shares (calibration, trace, flow calibration): by hand, three
// 100-byte entries of a 250-byte cap lose the oldest one that is not being kept; another
// writer's young temporary stays, an entry of another kind is not counted.
TEST(CacheEviction, OldestEntriesBeyondTheCapGoAndTheKeptOneStays) {
  const fs::path dir = scratch("evict_lru");
  fs::create_directories(dir);
  const auto write = [&](const std::string& name, std::size_t bytes, int age_s) {
    std::ofstream(dir / name) << std::string(bytes, 'x');
    fs::last_write_time(dir / name,
                        fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
  };
  write("old.trnb", 100, 300);   // the oldest, but the one being kept
  write("mid.trnb", 100, 200);   // evicted: 300 B > 250 B without it
  write("new.trnb", 100, 100);
  write("x.trnb.tmp.1", 500, 10);  // a writer's temporary, under an hour old
  trnsim::run::evict_least_recently_used(dir.string(), ".trnb", (dir / "old.trnb").string(), 250,
                                         "test");
  EXPECT_TRUE(fs::exists(dir / "old.trnb"));
  EXPECT_FALSE(fs::exists(dir / "mid.trnb"));
  EXPECT_TRUE(fs::exists(dir / "new.trnb"));
  EXPECT_TRUE(fs::exists(dir / "x.trnb.tmp.1"));
  // Two hours old: a crashed writer's, removed.
  write("x.trnb.tmp.1", 500, 7200);
  trnsim::run::evict_least_recently_used(dir.string(), ".trnb", "", 250, "test");
  EXPECT_FALSE(fs::exists(dir / "x.trnb.tmp.1"));
  EXPECT_TRUE(fs::exists(dir / "old.trnb"));  // 200 B: within the cap
  EXPECT_TRUE(fs::exists(dir / "new.trnb"));
  fs::remove_all(dir);
}

}  // namespace
