// SPDX-License-Identifier: MIT
// The sweep library without simulations: sweep-file errors, expansion (grid, zip, ranges,
// samples, filter), validation through the config loader, sharding, merge and compare.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "../common/files.hpp"
#include "trnsim/sweep/compare.hpp"
#include "trnsim/sweep/filter.hpp"
#include "trnsim/sweep/merge.hpp"
#include "trnsim/sweep/runner.hpp"
#include "trnsim/sweep/sweep.hpp"

namespace fs = std::filesystem;
using namespace trnsim::sweep;
using trnsim::sweep::Json;

namespace {

const std::string kSrc = TRNSIM_SOURCE_DIR;

Sweep parse(const std::string& axes, const std::string& extra = "") {
  const std::string text = R"({"name": "t", "config": "configs/racks/trn2-instance.json", )" + extra +
                           R"("axes": )" + axes + "}";
  return parse_sweep(text, "t.json", kSrc);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const SweepError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> texts(const std::vector<Json>& vs) {
  std::vector<std::string> out;
  for (const auto& v : vs) out.push_back(value_text(v));
  return out;
}

void write(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("trnsim-test-sweep-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(SweepFile, RangesWithStepCountAndUnits) {
  const auto s = parse(R"([{"path": "chip.hbm.bandwidth", "range": {"from": 1, "to": 2, "step": 0.25}, "unit": "TB/s"},
                          {"path": "chip.cores", "range": {"from": 2, "to": 8, "step": 3}},
                          {"path": "chip.core.sbuf.bytes_per_partition", "range": {"from": 64, "to": 256, "count": 3, "scale": "log"}, "unit": "KiB"}])");
  EXPECT_EQ(texts(s.axes[0].values), (std::vector<std::string>{"1TB/s", "1.25TB/s", "1.5TB/s", "1.75TB/s", "2TB/s"}));
  EXPECT_EQ(texts(s.axes[1].values), (std::vector<std::string>{"2", "5", "8"}));
  EXPECT_TRUE(s.axes[1].values[0].is_number_integer());
  EXPECT_EQ(texts(s.axes[2].values), (std::vector<std::string>{"64KiB", "128KiB", "256KiB"}));
  EXPECT_EQ(s.axes[0].name, "bandwidth");
  EXPECT_EQ(s.axes[2].name, "bytes_per_partition");
  EXPECT_EQ(s.config, kSrc + "/configs/racks/trn2-instance.json");
}

TEST(SweepFile, GridIsLastAxisFastestAndZipPairs) {
  const auto g = expand(parse(R"([{"path": "a.x", "values": [1, 2]}, {"path": "b.y", "values": ["p", "q", "r"]}])"));
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(texts(g[0].values), (std::vector<std::string>{"1", "p"}));
  EXPECT_EQ(texts(g[1].values), (std::vector<std::string>{"1", "q"}));
  EXPECT_EQ(texts(g[3].values), (std::vector<std::string>{"2", "p"}));
  EXPECT_EQ(g[5].id, "p0005");
  // zip pairs the i-th values; the seed axis crosses the zipped points.
  const auto z = expand(parse(R"([{"path": "a.x", "values": [1, 2]}, {"path": "b.y", "values": ["p", "q"]},
                                  {"path": "sim.seed", "values": [7, 8, 9]}])",
                              R"("combine": "zip", )"));
  ASSERT_EQ(z.size(), 6u);
  EXPECT_EQ(texts(z[0].values), (std::vector<std::string>{"1", "p", "7"}));
  EXPECT_EQ(texts(z[2].values), (std::vector<std::string>{"1", "p", "9"}));
  EXPECT_EQ(texts(z[3].values), (std::vector<std::string>{"2", "q", "7"}));
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.x", "values": [1, 2]}, {"path": "b.y", "values": [1]}])",
                                R"("combine": "zip", )"); }),
            "t.json:/axes/1: zip needs axes of equal length: y has 1 values, x has 2");
}

TEST(SweepFile, SamplesAreReproducibleAndInRange) {
  const std::string axes = R"([{"path": "chip.hbm.bandwidth", "samples": {"distribution": "uniform", "min": 2, "max": 5, "count": 50, "seed": 3}, "unit": "TB/s"}])";
  const auto a = parse(axes), b = parse(axes);
  EXPECT_EQ(a.axes[0].values, b.axes[0].values);
  std::set<std::string> distinct;
  for (const auto& v : a.axes[0].values) {
    double x = 0;
    ASSERT_TRUE(numeric_value(v, x));
    EXPECT_GE(x, 2e12);
    EXPECT_LE(x, 5e12);
    distinct.insert(value_text(v));
  }
  EXPECT_GT(distinct.size(), 40u);
  const auto c = parse(R"([{"path": "chip.hbm.bandwidth", "samples": {"distribution": "uniform", "min": 2, "max": 5, "count": 50, "seed": 4}, "unit": "TB/s"}])");
  EXPECT_NE(a.axes[0].values, c.axes[0].values);
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.b", "samples": {"distribution": "uniform", "min": 1, "max": 2, "count": 3}}])"); }),
            "t.json:/axes/0/samples/seed: missing: expected an integer >= 0 (samples are reproducible)");
}

TEST(SweepFile, FilterDropsPointsWithUnitsComparedBySiValue) {
  const auto pts = expand(parse(R"([{"path": "chip.hbm.bandwidth", "values": ["500GB/s", "1TB/s", "2TB/s"]},
                                   {"name": "n", "path": "chip.cores", "values": [1, 2, 4]}])",
                                R"x("filter": "bandwidth >= 0.9TB/s && n * 2 != 4 || (n == 1 && bandwidth == '500GB/s')", )x"));
  std::vector<std::string> got;
  for (const auto& p : pts) got.push_back(value_text(p.values[0]) + "/" + value_text(p.values[1]));
  EXPECT_EQ(got, (std::vector<std::string>{"500GB/s/1", "1TB/s/1", "1TB/s/4", "2TB/s/1", "2TB/s/4"}));
  EXPECT_EQ(pts[1].id, "p0001");  // ids count the kept points
}

TEST(SweepFile, ErrorsNameFileAndPointer) {
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.b", "valeus": [1]}])"); }),
            "t.json:/axes/0/valeus: unknown key \"valeus\" (did you mean \"values\"?); expected one of "
            "\"path\", \"name\", \"values\", \"range\", \"samples\", \"unit\"");
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.b", "range": {"from": 1, "to": 2}}])"); }),
            "t.json:/axes/0/range: expected exactly one of \"step\" and \"count\"");
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.b", "range": {"from": 0, "to": 1e9, "step": 1}}])"); }),
            "t.json:/axes/0/range/step: gives 1000000001 values; at most 100000 are allowed");
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.b", "values": [1]}, {"path": "c.b", "values": [2]}])"); }),
            "t.json:/axes/1: a second axis named \"b\": give one a \"name\"");
  EXPECT_EQ(error_of([] { parse(R"([{"path": "a.b", "values": [1]}])", R"("filter": "b >", )"); }),
            "t.json:/filter: invalid filter \"b >\" at character 4: expected a value, a name or \"(\"");
  EXPECT_EQ(error_of([] { parse_sweep("{\"name\": 1", "x.json", kSrc); }).substr(0, 9), "x.json:1:");
}

TEST(SweepValidate, BadAxisPathIsNamedBeforeAnythingRuns) {
  const auto s = parse(R"([{"path": "chip.cores", "values": [2, 8]}, {"path": "chip.hbm.bandwidht", "values": ["1TB/s"]}])");
  EXPECT_EQ(error_of([&] { validate(s, expand(s)); }),
            "t.json:/axes/1: axis \"bandwidht\" (path chip.hbm.bandwidht), value 1TB/s: --set "
            "chip.hbm.bandwidht:/chip/hbm/bandwidht: unknown key \"bandwidht\"; did you mean "
            "\"bandwidth\"?");
  // A point whose topology cannot be built is named with its values.
  const auto t = parse(R"([{"path": "rack.topology.torus.dims", "values": [[4, 4], [4, 0]]}])");
  const std::string e = error_of([&] { validate(t, expand(t)); });
  EXPECT_EQ(e.rfind("t.json:/axes/0: axis \"dims\" (path rack.topology.torus.dims), value [4,0]: ", 0), 0u) << e;
}

TEST(SweepShard, EveryPointInExactlyOneShard) {
  const auto s = parse(R"([{"path": "a.x", "range": {"from": 1, "to": 23, "step": 1}}])");
  const auto all = expand(s);
  for (int n = 1; n <= 8; ++n) {
    std::multiset<std::string> seen;
    std::size_t largest = 0, smallest = all.size();
    for (int i = 1; i <= n; ++i) {
      const auto part = shard_points(all, parse_shard(std::to_string(i) + "/" + std::to_string(n)));
      largest = std::max(largest, part.size());
      smallest = std::min(smallest, part.size());
      for (const auto& p : part) seen.insert(p.id);
    }
    EXPECT_EQ(seen.size(), all.size()) << n;
    for (const auto& p : all) EXPECT_EQ(seen.count(p.id), 1u) << n << " " << p.id;
    EXPECT_LE(largest - smallest, 1u) << n;  // 23 points over n shards: sizes differ by at most one
  }
  EXPECT_EQ(error_of([] { parse_shard("0/4"); }), "--shard 0/4: expected I/N with 1 <= I <= N, such as 2/8");
  EXPECT_EQ(error_of([] { parse_shard("2/4x"); }), "--shard 2/4x: expected I/N with 1 <= I <= N, such as 2/8");
}

namespace {

// A point directory as a finished `trnsim run --out` leaves it, with a chosen step time.
void fake_point(const fs::path& dir, const std::string& id, double step_ns, const std::string& status = "ok") {
  const fs::path pd = dir / "points" / id;
  write(pd / "point.json", "{}");
  write(pd / "run" / "report.json",
        Json{{"performance", {{"step_time_ns", step_ns}}}, {"energy", {{"total_j", step_ns / 10}}}}.dump());
  write(pd / "status.json", Json{{"status", status}, {"error", status == "ok" ? "" : "trnsim: error: boom"}}.dump());
}

}  // namespace

TEST(SweepMerge, MeanAndSpreadOverSeedsAcrossShardDirectories) {
  const auto s = parse(R"([{"path": "chip.cores", "values": [2, 4]}, {"path": "sim.seed", "values": [1, 2, 3]}])");
  const auto plan = make_plan(s, expand(s));
  const fs::path d1 = fresh_dir("m1"), d2 = fresh_dir("m2");
  write_or_check_plan(d1, plan);
  write_or_check_plan(d2, plan);
  // Shard 1/2 holds p0000, p0002, p0004; shard 2/2 the others. cores=2: 10, 20, 30 ns.
  fake_point(d1, "p0000", 10);
  fake_point(d2, "p0001", 20);
  fake_point(d1, "p0002", 30);
  fake_point(d2, "p0003", 100);
  fake_point(d1, "p0004", 100, "failed");
  fake_point(d2, "p0005", 100);
  const Json m = merge({d1.string(), d2.string()});
  ASSERT_EQ(m["groups"].size(), 2u);
  const Json& g0 = m["groups"][0]["metrics"]["step_time_ns"];
  EXPECT_EQ(g0["n"], 3);
  EXPECT_DOUBLE_EQ(g0["mean"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(g0["stddev"].get<double>(), 10.0);  // sample sd of 10, 20, 30
  EXPECT_EQ(m["groups"][1]["failed"], 1);
  EXPECT_DOUBLE_EQ(m["groups"][1]["metrics"]["step_time_ns"]["stddev"].get<double>(), 0.0);
  EXPECT_EQ(m["points"][4]["error"], "trnsim: error: boom");
  EXPECT_TRUE(m["points"][0]["metrics"]["tflops_per_w"].is_null());  // not in the report: null
  const std::string csv = merged_csv(m);
  EXPECT_EQ(csv.substr(0, csv.find('\n')).substr(0, 56), "cores,points,ok,failed,step_time_ns,step_time_ns_sd,flop");
  EXPECT_NE(csv.find("\n2,3,3,0,20,10,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n4,3,2,1,100,0,"), std::string::npos) << csv;
  // Written where --out says, its missing parent folders created.
  const fs::path deep = d1 / "merged" / "a" / "b";
  write_merged(deep.string(), m);
  EXPECT_EQ(trnsim::test::read_text(deep / "sweep.csv"), csv);
  // A directory of another sweep is refused.
  const auto other = parse(R"([{"path": "chip.cores", "values": [2, 8]}])");
  EXPECT_NE(error_of([&] { write_or_check_plan(d1, make_plan(other, expand(other))); }).find("holds another sweep"),
            std::string::npos);
  fs::remove_all(d1);
  fs::remove_all(d2);
}

TEST(Compare, RunDirectoriesTableDifferenceRatioAndConfigKeys) {
  const fs::path a = fresh_dir("ca"), b = fresh_dir("cb");
  write(a / "report.json", R"({"performance": {"step_time_ns": 200}, "energy": {"total_j": 4}})");
  write(b / "report.json", R"({"performance": {"step_time_ns": 150}, "energy": {"total_j": 5}})");
  write(a / "config.json", R"({"chip": {"hbm": {"bandwidth": "4.9TB/s"}, "cores": 8}, "sim": {"seed": 1}})");
  write(b / "config.json", R"({"chip": {"hbm": {"bandwidth": "4.7TB/s"}, "cores": 8}})");
  const Json c = compare(a, b);
  EXPECT_EQ(c["kind"], "run");
  EXPECT_EQ(c["rows"][0]["metric"], "step_time_ns");
  EXPECT_EQ(c["rows"][0]["diff"].get<double>(), -50.0);
  EXPECT_EQ(c["rows"][0]["ratio"].get<double>(), 0.75);
  ASSERT_EQ(c["config_differences"].size(), 2u);
  EXPECT_EQ(c["config_differences"][0], (Json{{"pointer", "/chip/hbm/bandwidth"}, {"a", "4.9TB/s"}, {"b", "4.7TB/s"}}));
  EXPECT_EQ(c["config_differences"][1], (Json{{"pointer", "/sim/seed"}, {"a", 1}, {"b", "(absent)"}}));
  const std::string t = compare_text(c);
  EXPECT_NE(t.find("step_time_ns              ns        200  150  -50  0.75\n"), std::string::npos) << t;
  EXPECT_NE(t.find("energy_j                  J           4    5    1  1.25\n"), std::string::npos) << t;
  EXPECT_NE(t.find("packet_latency_p99_ns     ns          -    -    -     -\n"), std::string::npos) << t;
  EXPECT_NE(t.find("configuration keys and traces that differ: 2\n  /chip/hbm/bandwidth: 4.9TB/s -> 4.7TB/s\n"
                   "  /sim/seed: 1 -> (absent)\n"),
            std::string::npos)
      << t;
  EXPECT_NE(error_of([&] { compare(a, fresh_dir("empty")); }).find("neither a run directory"), std::string::npos);
  fs::remove_all(a);
  fs::remove_all(b);
}

// Two runs of one config on different traces: the traces are named and count as a difference
// (it said "configuration keys that differ: 0"); numbers read without exponents.
TEST(Compare, RunsOfDifferentTracesNameThemAndReadableNumbers) {
  const fs::path a = fresh_dir("ta"), b = fresh_dir("tb");
  write(a / "report.json", R"({"performance": {"step_time_ns": 3009610000.4},
    "identity": {"trace": {"given": "traces/a.json", "sha256": "aa"}}})");
  write(b / "report.json", R"({"performance": {"step_time_ns": 1504805000.2},
    "identity": {"trace": {"given": "traces/b.json", "sha256": "bb"}}})");
  write(a / "config.json", R"({"chip": {"cores": 8}})");
  write(b / "config.json", R"({"chip": {"cores": 8}})");
  const Json c = compare(a, b);
  ASSERT_EQ(c["config_differences"].size(), 1u);
  EXPECT_EQ(c["config_differences"][0], (Json{{"pointer", "(trace)"}, {"a", "traces/a.json"}, {"b", "traces/b.json"}}));
  EXPECT_EQ(c["traces"]["a"]["sha256"], "aa");
  const std::string t = compare_text(c);
  EXPECT_NE(t.find("configuration keys and traces that differ: 1\n  trace: traces/a.json -> traces/b.json\n"),
            std::string::npos) << t;
  // 6 significant digits, grouped: 3,009,610,000 - 1,504,805,000 = -1,504,805,000; ratio 0.5.
  EXPECT_NE(t.find("3,009,610,000  1,504,805,000  -1,504,805,000  0.5\n"), std::string::npos) << t;
  // The same trace twice: no difference.
  write(b / "report.json", R"({"identity": {"trace": {"given": "elsewhere/a.json", "sha256": "aa"}}})");
  EXPECT_EQ(compare(a, b)["config_differences"].size(), 0u);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST(SweepFile, ShippedSweepsLoadAndEveryPointValidates) {
  const std::map<std::string, std::size_t> points = {{"hbm-bandwidth.json", 9}, {"link-bandwidth.json", 6},
                                                     {"switch-latency.json", 6}, {"chips-per-server.json", 4},
                                                     {"sbuf-size.json", 6},
                                                     // the seeded stability sweeps (docs/results/stability.md)
                                                     {"stability-hbm-bandwidth.json", 20},
                                                     {"stability-link-bandwidth.json", 20},
                                                     {"stability-sbuf-size.json", 20},
                                                     {"stability-sbuf-size-fast.json", 20},
                                                     {"stability-switch-latency.json", 25},
                                                     // two racks x 12 concurrencies (docs/serving.md)
                                                     {"serving-llama-3.1-70b-curve.json", 24},
                                                     {"serving-deepseek-v3-curve.json", 24}};
  std::size_t seen = 0;
  for (const auto& e : fs::directory_iterator(kSrc + "/configs/sweeps")) {
    if (e.path().extension() != ".json") continue;
    ++seen;
    const auto s = load_sweep(e.path().string());
    const auto all = expand(s);
    ASSERT_TRUE(points.count(e.path().filename().string())) << e.path() << " is not listed here";
    EXPECT_EQ(all.size(), points.at(e.path().filename().string())) << e.path();
    if (s.kind() == RunKind::serve) {
      // Its points are checked as `trnsim serve` loads them in ServeSweepCli.ShippedCurveValidates.
      EXPECT_EQ(s.serving, kSrc + (e.path().filename() == "serving-deepseek-v3-curve.json"
                                        ? "/configs/serving/deepseek-v3-trn3-azure-conv.json"
                                        : "/configs/serving/llama-3.1-70b-ultraserver.json"));
      continue;
    }
    EXPECT_NO_THROW(validate(s, all)) << e.path();
    const bool stability = e.path().filename().string().starts_with("stability-");
    EXPECT_EQ(s.trace, kSrc + (stability ? "/traces/mixtral-moe-16.json"
                                         : "/traces/deepseek-v3-moe-144.json")) << e.path();
  }
  EXPECT_EQ(seen, points.size());
}

TEST(Compare, SweepDirectoriesMatchPointsByAxisValues) {
  const auto sa = parse(R"([{"path": "chip.cores", "values": [2, 4]}])");
  const auto sb = parse(R"([{"path": "chip.cores", "values": [4, 8]}])");
  const fs::path a = fresh_dir("sa"), b = fresh_dir("sb");
  write_or_check_plan(a, make_plan(sa, expand(sa)));
  write_or_check_plan(b, make_plan(sb, expand(sb)));
  fake_point(a, "p0000", 50);
  fake_point(a, "p0001", 40);  // cores=4
  fake_point(b, "p0000", 30);  // cores=4
  fake_point(b, "p0001", 20);
  const Json c = compare(a, b);
  EXPECT_EQ(c["kind"], "sweep");
  EXPECT_EQ(c["only_in_a"], 1);
  EXPECT_EQ(c["only_in_b"], 1);
  ASSERT_EQ(c["rows"][0]["point"], "cores=4");
  EXPECT_EQ(c["rows"][0]["metric"], "step_time_ns");
  EXPECT_EQ(c["rows"][0]["a"].get<double>(), 40.0);
  EXPECT_EQ(c["rows"][0]["b"].get<double>(), 30.0);
  EXPECT_EQ(c["rows"][0]["ratio"].get<double>(), 0.75);
  ASSERT_EQ(c["config_differences"].size(), 1u);
  EXPECT_EQ(c["config_differences"][0], (Json{{"pointer", "/axes/chip.cores"}, {"a", {2, 4}}, {"b", {4, 8}}}));
  fs::remove_all(a);
  fs::remove_all(b);
}

// A serving sweep's assignments go where `trnsim serve` takes them: "rack" to --config, "rack.X"
// to --rack-set X, the rest to the spec's --set; the last "rack" wins over the file's "config".
TEST(ServeSweep, PointCommandSplitsSetsBetweenSpecAndRack) {
  const Sweep s = parse_sweep(R"({"name": "c", "command": "serve", "serving": "configs/serving/llama-3.1-8b-trn2-azure-conv.json",
                                  "config": "configs/racks/trn2-ultraserver.json", "set": ["run.requests=10"],
                                  "axes": [{"path": "rack", "values": ["trn3-gen2-ultraserver"]},
                                           {"path": "rack.sim.fidelity", "values": ["fast"]},
                                           {"path": "arrivals.seed", "values": [1, 2]}]})",
                              "c.json", kSrc);
  EXPECT_EQ(s.kind(), trnsim::sweep::RunKind::serve);
  EXPECT_EQ(s.serving, kSrc + "/configs/serving/llama-3.1-8b-trn2-azure-conv.json");
  EXPECT_EQ(s.seed_axis(), 2);
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 2u);
  const Plan plan = make_plan(s, points);
  EXPECT_EQ(point_command(plan, plan.points[1], "OUT"),
            (std::vector<std::string>{"serve", s.serving, "--config", "trn3-gen2-ultraserver", "--set",
                                      "run.requests=10", "--set", "arrivals.seed=2", "--rack-set",
                                      "sim.fidelity=fast", "--out", "OUT", "--out-files", "report.json,summary.csv"}));
  const ServeArgs a = serve_args("r.json", {"/rack/sim/seed=3", "arrivals.users=4"});
  EXPECT_EQ(a.rack, "r.json");
  EXPECT_EQ(a.rack_sets, std::vector<std::string>{"/sim/seed=3"});
  EXPECT_EQ(a.spec_sets, std::vector<std::string>{"arrivals.users=4"});
  // The plan says what its points are; read back, it is the same sweep.
  EXPECT_EQ(Plan::from_json(plan.to_json(), "plan.json").serving, s.serving);
  EXPECT_EQ(error_of([] { parse_sweep(R"({"name": "c", "command": "srve", "axes": []})", "c.json", kSrc); }),
            "c.json:/command: expected \"run\" (the default: training steps) or \"serve\" (serving runs of the spec "
            "in \"serving\"), got \"srve\"");
}
