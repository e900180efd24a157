// SPDX-License-Identifier: MIT
// The trace cache (src/cli/trace_cache.hpp): `trnsim run` stores a native JSON trace's binary form
// under the hash of the file's bytes and reads it back on the next run of the same bytes, with
// the same outputs byte for byte; corrupt and foreign entries are ignored with a warning and
// rewritten; --no-cache neither reads nor writes; a trace whose ranks are listed out of order
// (whose JSON pointers the binary form would not reproduce) is not stored.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

struct Outcome {
  trnsim::test::CliResult cli;
  std::map<std::string, std::string> files;  // the deterministic ones
};

const std::string kTrace = std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/inputs/golden-moe-16.json";

Outcome run_with(const fs::path& cache, const std::string& trace, const fs::path& out,
                 const std::string& extra = "") {
  ::setenv("TRNSIM_CACHE_DIR", cache.c_str(), 1);
  Outcome o;
  o.cli = trnsim::test::run_trnsim("run --config trn2-ultraserver --set sim.fidelity=fast "
                                   "--no-progress --log-level info --trace " +
                                   trace + " --out " + out.string() + " " + extra);
  if (o.cli.code != 0) return o;
  for (const char* f : {"report.json", "summary.csv", "stats.json", "ops.csv", "timeline.json"}) {
    o.files[f] = trnsim::test::read_text(out / f);
  }
  return o;
}

std::vector<fs::path> entries(const fs::path& cache) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(cache / "traces", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".trnb") out.push_back(it->path());
  }
  return out;
}

constexpr const char* kHit = "trace read from its binary form in the trace cache";

TEST(TraceCache, HitGivesTheSameOutputsAndBadEntriesAreIgnored) {
  const fs::path cache = trnsim::test::fresh_dir("trace-cache", "hit");
  const fs::path out = cache / "out";
  const Outcome miss = run_with(cache, kTrace, out);
  ASSERT_EQ(miss.cli.code, 0) << miss.cli.out;
  EXPECT_EQ(miss.cli.out.find(kHit), std::string::npos) << miss.cli.out;
  const auto stored = entries(cache);
  ASSERT_EQ(stored.size(), 1u);
  const fs::path entry = stored[0];

  const Outcome hit = run_with(cache, kTrace, out);  // the same command line: report.json equal too
  ASSERT_EQ(hit.cli.code, 0) << hit.cli.out;
  EXPECT_NE(hit.cli.out.find(kHit), std::string::npos) << hit.cli.out;
  for (const auto& [name, text] : miss.files) EXPECT_TRUE(text == hit.files.at(name)) << name;

  const std::string whole = trnsim::test::read_text(entry);
  {  // cut short
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() / 2);
  }
  const Outcome cut = run_with(cache, kTrace, out);
  ASSERT_EQ(cut.cli.code, 0) << cut.cli.out;
  EXPECT_NE(cut.cli.out.find("trace cache: ignoring corrupt entry " + entry.string()), std::string::npos)
      << cut.cli.out;
  EXPECT_EQ(cut.cli.out.find(kHit), std::string::npos) << cut.cli.out;
  for (const auto& [name, text] : miss.files) EXPECT_TRUE(text == cut.files.at(name)) << name;
  EXPECT_EQ(trnsim::test::read_text(entry), whole);  // rewritten whole by that run

  {  // one byte of the payload changed: its checksum no longer matches
    std::string bad = whole;
    bad[bad.size() - 2] = char(bad[bad.size() - 2] ^ 0x01);
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << bad;
  }
  const Outcome flipped = run_with(cache, kTrace, out);
  ASSERT_EQ(flipped.cli.code, 0) << flipped.cli.out;
  EXPECT_NE(flipped.cli.out.find("does not match its checksum"), std::string::npos) << flipped.cli.out;
  for (const auto& [name, text] : miss.files) EXPECT_TRUE(text == flipped.files.at(name)) << name;

  {  // another trace's entry under this name
    const std::size_t a = whole.find('\n'), b = whole.find('\n', a + 1);
    std::string foreign = whole;
    foreign.replace(a + 1, b - a - 1, R"({"build":"another","format":"trnsim-trace-cache-1"})");
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << foreign;
  }
  const Outcome foreign = run_with(cache, kTrace, out);
  ASSERT_EQ(foreign.cli.code, 0) << foreign.cli.out;
  EXPECT_NE(foreign.cli.out.find("an entry for another trace or build"), std::string::npos)
      << foreign.cli.out;
  for (const auto& [name, text] : miss.files) EXPECT_TRUE(text == foreign.files.at(name)) << name;
  fs::remove_all(cache);
}

TEST(TraceCache, NoCacheNeitherReadsNorWrites) {
  const fs::path cache = trnsim::test::fresh_dir("trace-cache", "off");
  const Outcome off = run_with(cache, kTrace, cache / "out", "--no-cache");
  ASSERT_EQ(off.cli.code, 0) << off.cli.out;
  EXPECT_TRUE(entries(cache).empty());
  fs::remove_all(cache);
}

TEST(TraceCache, RanksOutOfFileOrderAreNotStored) {
  // The same trace with its /rank_ops listed last rank first: messages name /rank_ops/<position>,
  // which the binary form (ranks in order) would not reproduce.
  const fs::path cache = trnsim::test::fresh_dir("trace-cache", "order");
  Json t = Json::parse(trnsim::test::read_text(kTrace));
  std::reverse(t["rank_ops"].begin(), t["rank_ops"].end());
  const fs::path reversed = cache / "reversed.json";
  std::ofstream(reversed) << t.dump();
  const Outcome r = run_with(cache, reversed.string(), cache / "out");
  ASSERT_EQ(r.cli.code, 0) << r.cli.out;
  EXPECT_TRUE(entries(cache).empty());
  fs::remove_all(cache);
}

}  // namespace
