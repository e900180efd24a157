// SPDX-License-Identifier: MIT
// The calibration cache (src/run/profile_cache.hpp): a run that finds its profiles in the cache
// writes the same report, byte for byte, as the run that calibrated them; corrupt and foreign
// entries are ignored with a warning; concurrent writers of one entry leave a valid one; the size
// cap evicts the least recently used entries.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
  const std::string key = miss.host["calibration"]["cache_key"];
  EXPECT_EQ(key.size(), 32u);
  EXPECT_TRUE(fs::exists(cache / "calibration" / (key + ".json")));

  const Outcome hit = run_cached(cache, out);  // same command line, so identity is equal too
  ASSERT_EQ(hit.cli.code, 0) << hit.cli.out;
  EXPECT_EQ(hit.host["calibration"]["from"], "cache");
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

TEST(CalibrationCache, CorruptOrForeignEntryIsIgnoredWithAWarning) {
  const fs::path cache = scratch("corrupt");
  const fs::path out = cache / "out";
  const Outcome first = run_cached(cache, out);
  ASSERT_EQ(first.cli.code, 0) << first.cli.out;
  const fs::path entry = first.host["calibration"]["cache_file"].get<std::string>();
  ASSERT_TRUE(fs::exists(entry));

  {  // cut short: not JSON
    const std::string text = trnsim::test::read_text(entry);
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text.substr(0, text.size() / 2);
  }
  const Outcome corrupt = run_cached(cache, out);
  ASSERT_EQ(corrupt.cli.code, 0) << corrupt.cli.out;
  EXPECT_NE(corrupt.cli.out.find("ignoring corrupt entry " + entry.string()), std::string::npos)
      << corrupt.cli.out;
  EXPECT_EQ(corrupt.host["calibration"]["from"], "simulated");
  for (const auto& [name, text] : first.files) EXPECT_TRUE(text == corrupt.files.at(name)) << name;

  {  // valid JSON for another key: never trusted
    Json j = Json::parse(trnsim::test::read_text(entry));  // rewritten whole by the run above
    j["key"] = "another plan";
    std::ofstream(entry, std::ios::trunc) << j.dump();
  }
  const Outcome foreign = run_cached(cache, out);
  ASSERT_EQ(foreign.cli.code, 0) << foreign.cli.out;
  EXPECT_NE(foreign.cli.out.find("an entry for another plan"), std::string::npos) << foreign.cli.out;
  EXPECT_EQ(foreign.host["calibration"]["from"], "simulated");

  {  // the right key, a profile with a field of the wrong type
    Json j = Json::parse(trnsim::test::read_text(entry));
    j["profiles"].begin().value()["time_ps"] = "soon";
    std::ofstream(entry, std::ios::trunc) << j.dump();
  }
  const Outcome typed = run_cached(cache, out);
  ASSERT_EQ(typed.cli.code, 0) << typed.cli.out;
  EXPECT_NE(typed.cli.out.find("ignoring corrupt entry"), std::string::npos) << typed.cli.out;
  for (const auto& [name, text] : first.files) EXPECT_TRUE(text == typed.files.at(name)) << name;

  const Outcome again = run_cached(cache, out);  // the run above stored a valid entry again
  EXPECT_EQ(again.host["calibration"]["from"], "cache");
  fs::remove_all(cache);
}

// A small entry: two made-up profiles.
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

trnsim::run::CacheKey key_of(const std::string& op) {
  const auto plan = trnsim::resolve::plan_chip(trnsim::test::chip_preset("trn3"), 1);
  return trnsim::run::calibration_key(plan, {op, "other"}, false);
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
}

TEST(CalibrationCache, RoundTripsExactly) {
  const fs::path dir = scratch("roundtrip");
  const trnsim::run::ProfileCache cache({true, dir.string(), 1 << 20});
  const auto key = key_of("a");
  EXPECT_FALSE(cache.get(key));
  cache.put(key, sample(42.5));
  const auto got = cache.get(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->static_power_w, 42.5);
  ASSERT_EQ(got->profiles.size(), 2u);
  const auto& p = got->profiles.at("gemm a");
  EXPECT_EQ(p.time_ps, 123456789);
  EXPECT_EQ(p.flops, 1.0 / 3.0);
  EXPECT_EQ(p.engine_busy_s[1], 2.5e-7);
  EXPECT_EQ(p.actions.at(trnsim::model::Action::hbm_read).rated_j, 1.25e-6);
  EXPECT_EQ(got->profiles.at("gemm b").time_ps, 7);
  fs::remove_all(dir);
}

TEST(CalibrationCache, ConcurrentWritersLeaveAValidEntry) {
  const fs::path dir = scratch("writers");
  const trnsim::run::CacheSettings s{true, dir.string(), 1 << 20};
  const auto key = key_of("a");
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const trnsim::run::ProfileCache cache(s);
      for (int i = 0; i < 200; ++i) {
        cache.put(key, sample(42.5));
        // Once written, a reader between the writers' renames always finds a whole entry.
        const auto got = cache.get(key);
        if (!got || got->static_power_w != 42.5) ::_exit(3);
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
  const auto got = trnsim::run::ProfileCache(s).get(key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->profiles.size(), 2u);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "calibration")) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".json") << e.path();  // no temporary left behind
  }
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

TEST(CalibrationCache, EvictsTheLeastRecentlyUsedBeyondItsCap) {
  const fs::path dir = scratch("evict");
  trnsim::run::ProfileCache probe({true, dir.string(), 1 << 20});
  probe.put(key_of("a"), sample(1));
  const auto one = fs::file_size(probe.path_of(key_of("a")));
  fs::remove_all(dir);
  // Room for two entries (the sizes differ by a digit at most).
  const trnsim::run::ProfileCache cache({true, dir.string(), 2 * one + 8});
  cache.put(key_of("a"), sample(1));
  ::usleep(20000);
  cache.put(key_of("b"), sample(2));
  ::usleep(20000);
  ASSERT_TRUE(cache.get(key_of("a")));  // used: now more recent than b
  ::usleep(20000);
  cache.put(key_of("c"), sample(3));
  EXPECT_TRUE(fs::exists(cache.path_of(key_of("a"))));
  EXPECT_FALSE(fs::exists(cache.path_of(key_of("b"))));
  EXPECT_TRUE(fs::exists(cache.path_of(key_of("c"))));
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
