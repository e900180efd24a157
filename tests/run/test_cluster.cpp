// SPDX-License-Identifier: MIT
// Clusters of UltraServers (docs/scaling.md): how a replica's collectives across UltraServers
// split into levels, the unfolded expansion and its placement (by hand), and end to end: a
// hierarchical all-reduce on two UltraServers timed against its bytes and links, and folding
// against the unfolded run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"
#include "trnsim/error.hpp"
#include "trnsim/run/cluster.hpp"

namespace {

namespace fs = std::filesystem;
using trnsim::run::ClusterWorkload;
using trnsim::run::make_cluster_workload;
using trnsim::trace::Op;
using trnsim::trace::OpKind;

Op op(trnsim::trace::OpId id, OpKind k, std::string group, std::uint64_t bytes,
      std::vector<trnsim::trace::OpId> deps = {}) {
  Op o;
  o.id = id;
  o.kind = k;
  o.name = "op" + std::to_string(id);
  o.group = std::move(group);
  o.bytes = bytes;
  o.deps = std::move(deps);
  return o;
}

// Two ranks: an all-reduce over dp0 (both), an all-gather over each rank's edp group (itself),
// a send from rank 0 to rank 1.
trnsim::trace::Workload replica() {
  trnsim::trace::Workload w;
  w.name = "replica";
  w.groups = {{"dp0", {0, 1}}, {"edp0", {0}}, {"edp1", {1}}, {"ep0", {0, 1}}};
  for (int r = 0; r < 2; ++r) {
    trnsim::trace::RankTrace rt;
    rt.rank = r;
    rt.ops.push_back(op(7, OpKind::all_reduce, "dp0", 1001));
    rt.ops.push_back(op(9, OpKind::all_gather, r == 0 ? "edp0" : "edp1", 600, {7}));
    Op p = op(11, r == 0 ? OpKind::send : OpKind::recv, "", 64, {9});
    p.peer = 1 - r;
    rt.ops.push_back(p);
    w.ranks.push_back(std::move(rt));
  }
  return w;
}

trnsim::config::ClusterParams cluster(int n, bool fold) {
  trnsim::config::ClusterParams c;
  c.ultraservers = n;
  c.fold = fold;
  return c;
}

TEST(ClusterWorkload, CollectivesAcrossUltraServersSplitIntoLevels) {
  const ClusterWorkload cw = make_cluster_workload(replica(), cluster(4, true));
  ASSERT_EQ(cw.workload.num_ranks(), 2);
  EXPECT_EQ(cw.collectives_split, 4);
  const auto& ops = cw.workload.ranks[1].ops;
  // all-reduce of 1001 B over 2 local members: reduce-scatter, all-reduce of member 1's chunk
  // (500 B: 1001 = 501 + 500) across the 4 replicas, all-gather; the last keeps the id 7.
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops[0].kind, OpKind::reduce_scatter);
  EXPECT_EQ(ops[0].group, "dp0");
  EXPECT_EQ(ops[0].bytes, 1001u);
  EXPECT_EQ(ops[1].kind, OpKind::all_reduce);
  EXPECT_EQ(ops[1].group, "dp0.x1");
  EXPECT_EQ(ops[1].bytes, 500u);
  EXPECT_EQ(ops[1].deps, std::vector<trnsim::trace::OpId>{ops[0].id});
  EXPECT_EQ(ops[2].kind, OpKind::all_gather);
  EXPECT_EQ(ops[2].bytes, 1001u);
  EXPECT_EQ(ops[2].id, 7u);
  EXPECT_EQ(ops[0].id, 12u);  // new ids above the rank's largest
  // The all-gather over a one-member group: only the level across replicas, of all 600 B.
  EXPECT_EQ(ops[3].group, "edp1.x0");
  EXPECT_EQ(ops[3].bytes, 600u);
  EXPECT_EQ(ops[3].id, 9u);
  EXPECT_EQ(cw.workload.ranks[0].ops[1].bytes, 501u);  // member 0's chunk
  // Folded: the groups across replicas have this replica's member and stand for 4.
  EXPECT_EQ(cw.workload.groups.at("dp0.x1"), std::vector<int>{1});
  EXPECT_EQ(cw.scale_out.folded.at("dp0.x1"), 4);
  EXPECT_EQ(cw.scale_out.folded.size(), 4u);  // dp0.x0, dp0.x1, edp0.x0, edp1.x0
}

// The levels of a split collective are parts of it: they take its phase, layer and
// micro-batch, from the trace's fields or the bundled generator's name, whatever their own
// names (l3.expert_grad_rs.cross matches no name rule).
TEST(ClusterWorkload, LevelsTakeTheirParentsPhase) {
  auto w = replica();
  for (auto& rt : w.ranks) {
    rt.ops[0].name = "l3.expert_grad_rs";  // no phase field: the generator's name says gradient_sync
    rt.ops[1].phase = trnsim::trace::Phase::forward;  // the trace's own field
    rt.ops[1].micro_batch = 2;
  }
  const ClusterWorkload cw = make_cluster_workload(w, cluster(4, true));
  const auto& ops = cw.workload.ranks[1].ops;
  ASSERT_EQ(ops.size(), 5u);
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(ops[k].phase) << ops[k].name;
    EXPECT_EQ(*ops[k].phase, trnsim::trace::Phase::gradient_sync) << ops[k].name;
    EXPECT_EQ(ops[k].layer, 3) << ops[k].name;
  }
  EXPECT_EQ(ops[1].name, "l3.expert_grad_rs.cross");
  ASSERT_TRUE(ops[3].phase);
  EXPECT_EQ(*ops[3].phase, trnsim::trace::Phase::forward);
  EXPECT_EQ(ops[3].micro_batch, 2);
}

// End to end: the folded 8-UltraServer golden case spends most of its step in gradient
// synchronisation across UltraServers (it was reported as 87.9 % forward).
TEST(ClusterRun, GradientSyncAcrossUltraServersIsGradientSync) {
  const auto r = trnsim::test::run_trnsim(
      "run --json --config configs/clusters/trn3-gen2-ultracluster-8.json --trace "
      "tests/golden/inputs/golden-moe-16-x8.json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  const auto& by = j["breakdown"]["machine"]["by_phase"];
  ASSERT_TRUE(by.contains("gradient_sync")) << by;
  ASSERT_TRUE(by.contains("forward")) << by;
  auto busy = [&](const char* p) {
    return by[p]["compute_ns"].get<double>() + by[p]["overlapped_ns"].get<double>() +
           by[p]["exposed_communication_ns"].get<double>();
  };
  // 16 ranks x 4 collectives across UltraServers (l0.{dense,expert}_grad_rs and _param_ag, no
  // phase field: the generator's names), each split into 2 levels, all gradient_sync.
  EXPECT_EQ(by["gradient_sync"]["ops"], 128) << by;
  EXPECT_GT(busy("gradient_sync"), 5 * busy("forward")) << by;
}

// The bundled generator's traces without /metadata/parallelism/replicas were made for one
// replica: on a cluster of 8 they would run silently with gradient groups sized for one.
TEST(ClusterWorkload, AGeneratedTraceOfOneReplicaIsRefused) {
  auto w = replica();
  w.metadata = {{"generator", "tools/moe_gen.py"}, {"parallelism", {{"dp", 2}}}};
  try {
    make_cluster_workload(w, cluster(8, true));
    FAIL() << "a one-replica trace ran on 8 UltraServers";
  } catch (const trnsim::WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("workload replica was generated for 1 data-parallel "
                                         "replica (/metadata/parallelism/replicas absent: one); "
                                         "the cluster holds 8"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--replicas 8"), std::string::npos) << e.what();
  }
  // One UltraServer: one replica, as made. A trace of another tool says nothing: it runs.
  EXPECT_NO_THROW(make_cluster_workload(w, cluster(1, true)));
  w.metadata = {{"parallelism", {{"dp", 2}}}};
  EXPECT_NO_THROW(make_cluster_workload(w, cluster(8, true)));
}

// End to end: the bundled one-replica trace on a cluster preset is refused before anything
// runs; a cluster's run header names the cluster, not its UltraServers' rack.
TEST(ClusterRun, OneReplicaTraceRefusedAndTheHeaderNamesTheCluster) {
  auto r = trnsim::test::run_trnsim("run --config configs/clusters/trn3-gen2-ultracluster-8.json "
                                    "--trace traces/mixtral-moe-16.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("workload mixtral-moe-16 was generated for 1 data-parallel replica"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("wall time"), std::string::npos) << r.out;
  r = trnsim::test::run_trnsim("run --config configs/clusters/trn3-gen2-ultracluster-8.json "
                               "--trace tests/golden/inputs/golden-moe-16-x8.json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trnsim run: trn3-gen2-ultracluster-8 (8 UltraServers of 144 x Trainium3), "
                       "workload golden-moe-16-x8"),
            std::string::npos)
      << r.out;
}

TEST(ClusterWorkload, UnfoldedEveryReplicaHasItsRanksAndTheCrossGroupsJoinThem) {
  const ClusterWorkload cw = make_cluster_workload(replica(), cluster(3, false));
  ASSERT_EQ(cw.workload.num_ranks(), 6);
  EXPECT_EQ(cw.simulated_replicas, 3);
  EXPECT_EQ(cw.workload.groups.at("dp0@2"), (std::vector<int>{4, 5}));
  EXPECT_EQ(cw.workload.groups.at("dp0.x1"), (std::vector<int>{1, 3, 5}));
  EXPECT_TRUE(cw.scale_out.unfolded.count("edp0.x0"));
  EXPECT_TRUE(cw.scale_out.folded.empty());
  const auto& r4 = cw.workload.ranks[4].ops;  // replica 2, rank 0
  EXPECT_EQ(r4[0].group, "dp0@2");
  EXPECT_EQ(r4[1].group, "dp0.x0");
  EXPECT_EQ(r4.back().peer, 5);
  // Rank r of replica u on chip u * chips + (its chip within the UltraServer).
  EXPECT_EQ(trnsim::run::cluster_placement(cw, {10, 11}, 144),
            (std::vector<int>{10, 11, 154, 155, 298, 299}));
}

TEST(ClusterWorkload, OnlyReductionsAndGathersCrossUltraServers) {
  auto w = replica();
  w.ranks[0].ops[0].kind = OpKind::all_to_all;
  try {
    make_cluster_workload(w, cluster(2, true));
    FAIL() << "an all_to_all across UltraServers was accepted";
  } catch (const trnsim::WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 op 7 (\"op7\"): all_to_all on group \"dp0\""),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(trnsim::run::is_replica_group("edp12", {"dp", "edp"}));
  EXPECT_FALSE(trnsim::run::is_replica_group("ep12", {"dp", "edp"}));
  EXPECT_FALSE(trnsim::run::is_replica_group("dp", {"dp"}));
}

TEST(ClusterWorkload, ATraceMadeForOtherReplicasIsRefused) {
  auto w = replica();
  w.metadata = {{"parallelism", {{"replicas", 8}}}};
  EXPECT_THROW(make_cluster_workload(w, cluster(2, true)), trnsim::WorkloadError);
  EXPECT_NO_THROW(make_cluster_workload(w, cluster(8, true)));
}

// ---- end to end -------------------------------------------------------------------------------

// Two ranks of one server of a Trn3 Gen2 UltraServer: one all-reduce of 256 MiB over both.
std::string two_rank_trace(const fs::path& dir) {
  nlohmann::json t = {{"format", "trnsim-trace"}, {"version", 1}, {"name", "ar-256m"}, {"ranks", 2},
                      {"groups", {{"dp0", {0, 1}}}}};
  for (int r = 0; r < 2; ++r) {
    t["rank_ops"].push_back({{"rank", r},
                             {"ops", {{{"id", 0}, {"name", "grad"}, {"op", "all_reduce"},
                                       {"group", "dp0"}, {"bytes", 268435456}, {"dtype", "bf16"}}}}});
  }
  const fs::path p = dir / "ar.json";
  std::ofstream(p) << t.dump();
  return p.string();
}

struct OpTimes {
  std::map<std::string, double> ns;  // rank 0's ops by name: duration
  double step_ms = 0;
};

OpTimes run(const std::string& trace, const fs::path& out, const std::string& extra) {
  const auto r = trnsim::test::run_trnsim("run --config configs/clusters/trn3-gen2-ultracluster.json "
                                          "--trace " + trace + " --out " + out.string() + " " + extra);
  EXPECT_EQ(r.code, 0) << r.out;
  OpTimes t;
  std::istringstream csv(trnsim::test::read_text(out / "ops.csv"));
  std::string line;
  std::getline(csv, line);  // rank,id,name,kind,phase,layer,start_ns,end_ns,duration_ns,flops
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    if (f.size() >= 9 && f[0] == "0") t.ns[f[2]] = std::stod(f[8]);
  }
  const auto s = nlohmann::json::parse(trnsim::test::read_text(out / "report.json"));
  t.step_ms = s["performance"]["step_time_ns"].get<double>() / 1e6;
  return t;
}

TEST(ClusterRun, HierarchicalAllReduceOnTwoUltraServersByHand) {
  const fs::path dir = trnsim::test::fresh_dir("cluster", "hier");
  const OpTimes t = run(two_rank_trace(dir), dir / "out", "");
  // Local reduce-scatter over the server's switch: each chip sends 128 MiB on its 256 GB/s link.
  ASSERT_TRUE(t.ns.count("grad.local_rs"));
  EXPECT_GT(t.ns.at("grad.local_rs"), 134217728 / 256e9 * 1e9);
  EXPECT_LT(t.ns.at("grad.local_rs"), 1.5 * 134217728 / 256e9 * 1e9);
  // Across the 2 UltraServers, chip 0's 128 MiB chunk: halving then doubling, 64 MiB each way per
  // step on its 25 GB/s NIC (the receive shares nothing with the send: the other direction).
  ASSERT_TRUE(t.ns.count("grad.cross"));
  const double wire = 2 * 67108864 / 25e9 * 1e9;
  EXPECT_GT(t.ns.at("grad.cross"), wire);
  EXPECT_LT(t.ns.at("grad.cross"), 1.1 * wire);
  ASSERT_TRUE(t.ns.count("grad.local_ag"));  // the local all-gather, which keeps the op's id
  EXPECT_GT(t.ns.at("grad.local_ag"), 134217728 / 256e9 * 1e9);
  EXPECT_LT(t.ns.at("grad.local_ag"), 1.5 * 134217728 / 256e9 * 1e9);
  fs::remove_all(dir);
}

TEST(ClusterRun, FoldedAgreesWithUnfolded) {
  const fs::path dir = trnsim::test::fresh_dir("cluster", "fold");
  const std::string trace = two_rank_trace(dir);
  for (const int n : {2, 4}) {
    const std::string set = " --set cluster.ultraservers=" + std::to_string(n);
    const OpTimes folded = run(trace, dir / "f", set);
    const OpTimes unfolded = run(trace, dir / "u", set + " --set cluster.fold=false");
    EXPECT_NEAR(folded.step_ms, unfolded.step_ms, 0.005 * unfolded.step_ms) << n << " UltraServers";
    const auto id = nlohmann::json::parse(trnsim::test::read_text(dir / "f" / "report.json"))["identity"];
    EXPECT_EQ(id["cluster"]["ultraservers"], n);
    EXPECT_EQ(id["cluster"]["chips"], 144 * n);
    EXPECT_EQ(id["cluster"]["simulated_ultraservers"], 1);
    EXPECT_EQ(id["cluster"]["ranks_per_simulated_rank"], n);
    fs::remove_all(dir / "f");
    fs::remove_all(dir / "u");
  }
  fs::remove_all(dir);
}

// What-if: chip 0's compute twice as slow. The trace is communication only, so its step stays;
// a compute op before the all-reduce moves it by that op's extra time.
TEST(ClusterRun, AStragglerHoldsItsComputeOpsLonger) {
  const fs::path dir = trnsim::test::fresh_dir("cluster", "straggler");
  nlohmann::json t = nlohmann::json::parse(trnsim::test::read_text(two_rank_trace(dir)));
  for (auto& r : t["rank_ops"]) {
    r["ops"][0]["deps"] = {1};
    r["ops"].push_back({{"id", 1}, {"name", "mm"}, {"op", "gemm"}, {"m", 4096}, {"k", 8192},
                        {"n", 8192}, {"dtype", "bf16"}});
  }
  std::ofstream(dir / "mm.json") << t.dump();
  const std::string trace = (dir / "mm.json").string();
  const OpTimes base = run(trace, dir / "a", "");
  const OpTimes slow = run(trace, dir / "b", "--set cluster.straggler.chip=0 "
                                             "--set cluster.straggler.slowdown=2");
  EXPECT_NEAR(slow.ns.at("mm"), 2 * base.ns.at("mm"), 1.0);
  EXPECT_NEAR(slow.step_ms - base.step_ms, base.ns.at("mm") / 1e6, 0.01 * base.step_ms);
  fs::remove_all(dir);
}

// `trnsim topo` on the million-chip preset: the scale-out network by rule, nothing per chip.
TEST(ClusterRun, TopoCountsTheSwitchesOfAMillionChips) {
  const auto r = trnsim::test::run_trnsim(
      "topo configs/clusters/trn3-gen2-ultracluster-7282.json --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto c = nlohmann::json::parse(r.out)["cluster"];
  EXPECT_EQ(c["chips"], 7282 * 144);
  ASSERT_EQ(c["tiers"].size(), 4u);  // 32 x 32 x 32 = 32,768 NICs < 1,048,608 <= 32^3 x 64
  EXPECT_EQ(c["tiers"][0]["switches"], 32769);       // ceil(1,048,608 / 32) leaves
  EXPECT_EQ(c["tiers"][1]["switches"], 1025 * 32);   // ceil(1,048,608 / 1,024) groups of 32
  EXPECT_EQ(c["tiers"][3]["switches"], 32 * 32 * 32);  // one top group
  EXPECT_EQ(c["tiers"][3]["down_ports"], 64);
  EXPECT_EQ(c["diameter_hops"], 8);
}

// A million chips unfolded would need terabytes of route tables: refused before anything is
// built, naming /cluster/fold. A top tier too small names its ports.
TEST(ClusterRun, WhatCannotBeBuiltIsRefusedNamingThePointer) {
  const fs::path dir = trnsim::test::fresh_dir("cluster", "refuse");
  const std::string trace = two_rank_trace(dir);
  auto r = trnsim::test::run_trnsim("run --config configs/clusters/trn3-gen2-ultracluster-7282.json "
                                    "--set cluster.fold=false --trace " + trace);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("/cluster/fold: false: the unfolded scale-out network of 1048608 chips"),
            std::string::npos)
      << r.out;
  r = trnsim::test::run_trnsim("run --config configs/clusters/trn3-gen2-ultracluster-7282.json "
                               "--set cluster.scale_out.tiers.3.ports=2 --trace " + trace);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("/cluster/scale_out/tiers/3/ports: the top tier \"super\" reaches 65536 "
                       "NICs"),
            std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

// A replica of two UltraServers (expert parallelism across them): rank 1 on chip 0 of the second
// UltraServer. The all-to-all crosses EFA inside the replica; folded (2 of 4 UltraServers
// simulated) agrees with unfolded.
TEST(ClusterRun, AReplicaSpanningTwoUltraServersSendsItsAllToAllOverEfa) {
  const fs::path dir = trnsim::test::fresh_dir("cluster", "span");
  nlohmann::json t = {{"format", "trnsim-trace"}, {"version", 1}, {"name", "span"}, {"ranks", 2},
                      {"groups", {{"ep0", {0, 1}}, {"dp0", {0, 1}}}}};
  for (int r = 0; r < 2; ++r) {
    t["rank_ops"].push_back(
        {{"rank", r},
         {"ops", {{{"id", 0}, {"name", "a2a"}, {"op", "all_to_all"}, {"group", "ep0"},
                   {"bytes", 67108864}},
                  {{"id", 1}, {"name", "grad"}, {"op", "all_reduce"}, {"group", "dp0"},
                   {"bytes", 67108864}, {"dtype", "bf16"}, {"deps", {0}}}}}});
  }
  std::ofstream(dir / "span.json") << t.dump();
  std::ofstream(dir / "place.json") << R"({"chips": [0, 144]})";
  const std::string set = "--set cluster.ultraservers=4 --set cluster.ultraservers_per_replica=2 "
                          "--set replay.placement=file --set replay.placement_file=" +
                          (dir / "place.json").string();
  const OpTimes folded = run((dir / "span.json").string(), dir / "f", set);
  const OpTimes unfolded = run((dir / "span.json").string(), dir / "u", set + " --set cluster.fold=false");
  // Each rank sends the other half of its 64 MiB over its 25 GB/s NIC.
  ASSERT_TRUE(folded.ns.count("a2a"));
  EXPECT_GT(folded.ns.at("a2a"), 33554432 / 25e9 * 1e9);
  EXPECT_LT(folded.ns.at("a2a"), 1.1 * 33554432 / 25e9 * 1e9);
  EXPECT_NEAR(folded.step_ms, unfolded.step_ms, 0.01 * unfolded.step_ms);
  const auto id = nlohmann::json::parse(trnsim::test::read_text(dir / "f" / "report.json"))["identity"];
  EXPECT_EQ(id["cluster"]["simulated_ultraservers"], 2);
  EXPECT_EQ(id["cluster"]["ranks_per_simulated_rank"], 2);
  fs::remove_all(dir);
}

// Build only what runs: two ranks on a rack elaborate their two chips as models and one idle chip
// besides (the first, chip 1), which stands for every other idle chip in stats.json and the
// energy (idle chips are alike). On the Trn2 torus the ranks (chips 0 and 2) sit two hops apart,
// so the route crosses an idle chip (its router and links are the fabric's, built all the same).
TEST(RackRun, TwoRanksBuildTwoChipModelsAndOneIdleStandIn) {
  const fs::path dir = trnsim::test::fresh_dir("cluster", "built");
  const std::string trace = two_rank_trace(dir);
  std::ofstream(dir / "place.json") << R"({"chips": [0, 2]})";
  const std::string place =
      " --set replay.placement=file --set replay.placement_file=" + (dir / "place.json").string();
  struct Case {
    std::string config;
    int chips;
  };
  for (const Case& c : {Case{"configs/racks/trn3-gen2-ultraserver.json", 144},
                        Case{"configs/racks/trn2-ultraserver.json", 64}}) {
    const fs::path out = dir / "out";
    const auto r = trnsim::test::run_trnsim("run --config " + c.config + " --trace " + trace +
                                            " --out " + out.string() + place);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto host = nlohmann::json::parse(trnsim::test::read_text(out / "host.json"));
    EXPECT_EQ(host["chip_models_elaborated"], 3) << c.config;
    const auto rep = nlohmann::json::parse(trnsim::test::read_text(out / "report.json"));
    const auto& e = rep["energy"];
    EXPECT_EQ(e["chips_used"], 2);
    EXPECT_EQ(e["idle_chips"]["chips"], c.chips - 2);
    // Every chip draws the same static power for the same time: the idle ones, each counted,
    // draw (chips - 2) / 2 times what the two used ones do.
    const double used_static = e["components_j"]["chip_static"].get<double>();
    ASSERT_GT(used_static, 0);
    EXPECT_NEAR(e["idle_chips"]["static_j"].get<double>(), used_static * (c.chips - 2) / 2,
                1e-9 * used_static * c.chips);
    EXPECT_EQ(e["idle_chips"]["dynamic_j"].get<double>(), 0.0);
    // The last chip (never built) has the blocks and figures of the idle chip that was.
    const auto stats = nlohmann::json::parse(trnsim::test::read_text(out / "stats.json"));
    const std::string last = "rack.chip" + std::to_string(c.chips - 1);
    const std::string built = "rack.chip1";  // the first idle chip on either rack
    std::size_t blocks = 0;
    for (const auto& [name, figures] : stats.items()) {
      if (name != built && !name.starts_with(built + ".")) continue;
      ++blocks;
      const std::string mine = last + name.substr(built.size());
      ASSERT_TRUE(stats.contains(mine)) << mine;
      EXPECT_EQ(stats[mine], figures) << mine;
    }
    EXPECT_GT(blocks, 0u);
    fs::remove_all(out);
  }
  fs::remove_all(dir);
}

}  // namespace
