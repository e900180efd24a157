// SPDX-License-Identifier: MIT
// Figures that mean the same at every fidelity tier (docs/models/fidelity.md, "What each figure
// means at each tier"): a hand-countable trace run at the fast and the detailed tier counts the
// same messages at both, one-tier figures are marked where they do not exist, busiest resources
// are named at one level, and `trnsim compare` of the two runs aligns row by row.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using trnsim::test::run_trnsim;

constexpr std::uint64_t kMiB = 1048576;

// Four ranks, one per chip of the Trn2 instance (a 4x4 torus). Rank 0 sends 1 MiB to rank 1 and
// 3 MiB to rank 2 (two sends: two messages, however many packets they take); then all four run
// an all-to-all of 8 MiB: each sends 2 MiB to each of the 3 others, as pieces of at most
// /replay/collectives/chunk_bytes (1 MiB): 2 pieces x 3 peers x 4 ranks = 24 messages. A GEMM per
// rank gives the engines work. The all-to-all has no semaphore step (sync_bytes is set to 0), so
// the fabric carries 2 + 24 = 26 messages at both tiers. The flow tier sends a peer's two pieces
// as one transfer (12 network transfers for the all-to-all), the packet tier one per piece.
constexpr std::uint64_t kMessages = 2 + 2 * 3 * 4;

Json trace_json() {
  auto gemm = [](int id) {
    return Json{{"id", id}, {"name", "mm"}, {"op", "gemm"}, {"m", 512}, {"k", 512}, {"n", 512},
                {"dtype", "bf16"}};
  };
  auto a2a = [](int id, Json deps) {
    return Json{{"id", id}, {"name", "a2a"}, {"op", "all_to_all"}, {"group", "all"},
                {"bytes", 8 * kMiB}, {"deps", std::move(deps)}};
  };
  Json ranks = Json::array();
  ranks.push_back({{"rank", 0}, {"ops", {gemm(0),
                                         {{"id", 1}, {"op", "send"}, {"peer", 1}, {"bytes", kMiB}, {"deps", {0}}},
                                         {{"id", 2}, {"op", "send"}, {"peer", 2}, {"bytes", 3 * kMiB}, {"deps", {0}}},
                                         a2a(3, {1, 2})}}});
  ranks.push_back({{"rank", 1}, {"ops", {gemm(0),
                                         {{"id", 1}, {"op", "recv"}, {"peer", 0}, {"bytes", kMiB}},
                                         a2a(2, {0, 1})}}});
  ranks.push_back({{"rank", 2}, {"ops", {gemm(0),
                                         {{"id", 1}, {"op", "recv"}, {"peer", 0}, {"bytes", 3 * kMiB}},
                                         a2a(2, {0, 1})}}});
  ranks.push_back({{"rank", 3}, {"ops", {gemm(0), a2a(1, {0})}}});
  return {{"format", "trnsim-trace"}, {"version", 1}, {"name", "fidelity-messages"},
          {"ranks", 4}, {"groups", {{"all", {0, 1, 2, 3}}}}, {"rank_ops", ranks}};
}

// The trace run once at each tier, and compared.
class Tiers : public ::testing::Test {
 protected:
  static inline fs::path dir;
  static inline Json fast, detailed, cmp;
  static inline std::string fast_text, detailed_text, cmp_text;
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("trnsim-fidelity-figures-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "trace.json") << trace_json().dump(1);
    const std::string common = "run --config trn2-instance --trace " + (dir / "trace.json").string() +
                               " --set replay.collectives.sync_bytes=0B --no-cache";
    const auto f = run_trnsim(common + " --set sim.fidelity=fast --out " + (dir / "fast").string(), false);
    ASSERT_EQ(f.code, 0) << f.out;
    fast_text = f.out;
    const auto d = run_trnsim(common + " --set sim.fidelity=detailed --out " + (dir / "detailed").string(), false);
    ASSERT_EQ(d.code, 0) << d.out;
    detailed_text = d.out;
    fast = Json::parse(trnsim::test::read_text(dir / "fast" / "report.json"));
    detailed = Json::parse(trnsim::test::read_text(dir / "detailed" / "report.json"));
    const auto c = run_trnsim("compare " + (dir / "fast").string() + " " + (dir / "detailed").string() + " --json", false);
    ASSERT_EQ(c.code, 0) << c.out;
    cmp = Json::parse(c.out);
    const auto t = run_trnsim("compare " + (dir / "fast").string() + " " + (dir / "detailed").string(), false);
    ASSERT_EQ(t.code, 0) << t.out;
    cmp_text = t.out;
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }
};

TEST_F(Tiers, RanAtTheTierAsked) {
  EXPECT_EQ(fast["identity"]["fidelity"], "fast");
  EXPECT_EQ(fast["identity"]["models"]["network"]["model"], "flow");
  EXPECT_EQ(detailed["identity"]["fidelity"], "detailed");
  EXPECT_EQ(detailed["identity"]["models"]["network"]["model"], "packet");
}

// N pieces issued -> N messages at both tiers, whatever each network made of them.
TEST_F(Tiers, MessagesAreCountedAlikeAtBothTiers) {
  for (const Json* r : {&fast, &detailed}) {
    const Json& f = (*r)["fabric"];
    EXPECT_EQ(f["messages"].get<std::uint64_t>(), kMessages) << (*r)["identity"]["fidelity"];
    EXPECT_EQ(f["messages_simulated"].get<std::uint64_t>(), kMessages);
    EXPECT_EQ(f["messages_fast_forwarded"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(f["tiers"]["all"]["message_latency_ns"]["count"].get<std::uint64_t>(), kMessages);
    // 1 + 3 MiB of sends and 24 MiB of the all-to-all cross the fabric at both tiers.
    EXPECT_EQ(f["bytes_delivered"].get<std::uint64_t>(), 28 * kMiB);
  }
  // What the networks moved differs: the flow network merged each peer's two pieces.
  EXPECT_EQ(fast["fabric"]["network_transfers"].get<std::uint64_t>(), 2u + 3 * 4);
  EXPECT_EQ(detailed["fabric"]["network_transfers"].get<std::uint64_t>(), kMessages);
}

TEST_F(Tiers, OneTierFiguresAreMarkedNotZero) {
  auto figure = [](const Json& r, const std::string& name) {
    for (const auto& f : r["figures"]) {
      if (f["name"] == name) return f;
    }
    ADD_FAILURE() << "no figure " << name;
    return Json();
  };
  for (const char* n : {"packet_latency_p50_ns", "packet_latency_p99_ns", "credit_stall_ns"}) {
    const Json ff = figure(fast, n), fd = figure(detailed, n);
    EXPECT_TRUE(ff["value"].is_null()) << n;
    EXPECT_EQ(ff["only_at"], "detailed") << n;
    EXPECT_TRUE(fd["value"].is_number()) << n;
  }
  // A torus of one tier: no message crosses servers at either tier, and neither says it lacks
  // the figure.
  for (const Json* r : {&fast, &detailed}) {
    EXPECT_TRUE(figure(*r, "message_latency_across_servers_p50_ns")["value"].is_null());
    EXPECT_FALSE(figure(*r, "message_latency_across_servers_p50_ns").contains("only_at"));
  }
  EXPECT_TRUE(fast["fabric"]["packets_delivered"].is_null());
  EXPECT_TRUE(fast["fabric"]["credit_stall_ns"].is_null());
  EXPECT_GT(detailed["fabric"]["packets_delivered"].get<std::uint64_t>(), kMessages);
  // Figures of every tier have a value at both.
  for (const char* n : {"fabric_messages", "message_latency_p50_ns", "message_latency_p99_ns",
                        "link_mean_utilisation",
                        "engine_busiest_utilisation", "core_busiest_utilisation"}) {
    EXPECT_TRUE(figure(fast, n)["value"].is_number()) << n;
    EXPECT_TRUE(figure(detailed, n)["value"].is_number()) << n;
    EXPECT_FALSE(figure(fast, n).contains("only_at")) << n;
  }
  // The terminal summary says so instead of printing a number.
  EXPECT_NE(fast_text.find("packets \u2014 (detailed tier only)"), std::string::npos) << fast_text;
  EXPECT_NE(fast_text.find("packet latency \u2014 (detailed tier only)"), std::string::npos) << fast_text;
  EXPECT_NE(fast_text.find("credit stalls \u2014 (detailed tier only)"), std::string::npos) << fast_text;
  EXPECT_EQ(detailed_text.find("tier only"), std::string::npos) << detailed_text;
  // The message latency is at both tiers.
  EXPECT_NE(fast_text.find("    all                message p50 "), std::string::npos) << fast_text;
  EXPECT_EQ(fast_text.find("message p50 \u2014"), std::string::npos) << fast_text;
  EXPECT_NE(fast_text.find("fabric               26 messages"), std::string::npos) << fast_text;
  EXPECT_NE(detailed_text.find("fabric               26 messages"), std::string::npos) << detailed_text;
}

// Compute engines by the same names at both tiers (rack.chipN.ncM.<engine>), cores as busy as
// their busiest engine.
TEST_F(Tiers, BusiestResourcesAtOneLevel) {
  // rack.chip[0-3].nc<digits>, and the length of that prefix (0 when it is not one). Written out
  // rather than with std::regex, whose inlined automaton GCC 12 warns about at -O1 (the asan preset).
  auto core_prefix = [](const std::string& name) -> std::size_t {
    const std::string head = "rack.chip";
    if (name.size() < head.size() + 5 || name.compare(0, head.size(), head) != 0) return 0;
    std::size_t i = head.size();
    if (name[i] < '0' || name[i] > '3' || name.compare(i + 1, 3, ".nc") != 0) return 0;
    i += 4;
    const std::size_t digits = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    return i > digits ? i : 0;
  };
  auto is_core = [&](const std::string& name) { return core_prefix(name) == name.size(); };
  auto is_engine = [&](const std::string& name) {
    const std::size_t n = core_prefix(name);
    if (n == 0 || n == name.size()) return false;
    const std::string engine = name.substr(n);
    return engine == ".tensor" || engine == ".vector" || engine == ".scalar" || engine == ".gpsimd";
  };
  for (const Json* r : {&fast, &detailed}) {
    ASSERT_FALSE((*r)["busiest_engines"].empty());
    ASSERT_FALSE((*r)["busiest_cores"].empty());
    for (const auto& e : (*r)["busiest_engines"]) {
      EXPECT_TRUE(is_engine(e["name"].get<std::string>())) << e;
    }
    for (const auto& c : (*r)["busiest_cores"]) {
      EXPECT_TRUE(is_core(c["name"].get<std::string>())) << c;
    }
    // The busiest core is exactly as busy as the busiest engine (the core's busiest engine).
    EXPECT_DOUBLE_EQ((*r)["busiest_cores"][0]["utilisation"].get<double>(),
                     (*r)["busiest_engines"][0]["utilisation"].get<double>());
    // The one GEMM per chip is on the Tensor engine: it is the busiest engine at both tiers.
    EXPECT_TRUE((*r)["busiest_engines"][0]["name"].get<std::string>().ends_with(".tensor"));
    for (const auto& b : (*r)["busiest"]) {
      EXPECT_FALSE(b["name"].get<std::string>().ends_with(".sync")) << b;
    }
  }
}

// Same rows in the same order, a difference on each row where both have a number, the one-tier
// rows marked on the side that lacks them.
TEST_F(Tiers, CompareReadsLineByLine) {
  EXPECT_EQ(cmp["kind"], "run");
  EXPECT_EQ(cmp["fidelity"]["a"], "fast");
  EXPECT_EQ(cmp["fidelity"]["b"], "detailed");
  const Json& rows = cmp["rows"];
  ASSERT_EQ(rows.size(), fast["figures"].size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Json& r = rows[i];
    EXPECT_EQ(r["metric"], fast["figures"][i]["name"]);
    EXPECT_EQ(r["metric"], detailed["figures"][i]["name"]);
    const bool one_tier = fast["figures"][i].contains("only_at");
    if (one_tier) {
      EXPECT_EQ(r["a_note"], "\u2014 (detailed tier only)") << r;
      EXPECT_TRUE(r["b"].is_number()) << r;
      EXPECT_TRUE(r["diff"].is_null()) << r;
    } else {
      EXPECT_FALSE(r.contains("a_note")) << r;
      EXPECT_FALSE(r.contains("b_note")) << r;
    }
    if (r["metric"] == "fabric_messages") {
      EXPECT_EQ(r["a"].get<double>(), double(kMessages));
      EXPECT_EQ(r["diff"].get<double>(), 0.0);
      EXPECT_EQ(r["ratio"].get<double>(), 1.0);
    }
  }
  EXPECT_NE(cmp_text.find("(fidelity fast)"), std::string::npos) << cmp_text;
  // The text table: the packet latency row names its tier on A's side.
  std::istringstream lines(cmp_text);
  std::string line;
  bool seen = false;
  while (std::getline(lines, line)) {
    if (!line.starts_with("packet_latency_p50_ns")) continue;
    seen = true;
    EXPECT_NE(line.find("\u2014 (detailed tier only)"), std::string::npos) << line;
  }
  EXPECT_TRUE(seen) << cmp_text;
}

}  // namespace

namespace {

// The committed golden runs of one trace at both tiers (tests/golden, kept current by the golden
// tests): the same messages, where the networks' own transfer counts differ.
TEST(GoldenTiers, SameMessagesAtBothTiers) {
  for (const char* rack : {"run_trn3_gen2", "run_trn2_ultraserver"}) {
    const fs::path base = fs::path("tests/golden/expected");
    const Json d = Json::parse(trnsim::test::read_text(base / rack / "report.json"));
    const Json f = Json::parse(trnsim::test::read_text(base / (std::string(rack) + "_fast") / "report.json"));
    // Golden reports keep no identity (it names this checkout): the network model tells the tier.
    ASSERT_EQ(d["fabric"]["model"], "packet");
    ASSERT_EQ(f["fabric"]["model"], "flow");
    EXPECT_EQ(f["fabric"]["messages"], d["fabric"]["messages"]) << rack;
    EXPECT_GT(d["fabric"]["network_transfers"].get<std::uint64_t>(),
              f["fabric"]["network_transfers"].get<std::uint64_t>()) << rack;
    EXPECT_EQ(d["fabric"]["network_transfers"], d["fabric"]["messages"]) << rack;
  }
}

// A message's latency runs to the arrival of the last of the pieces sent with it, at both tiers:
// rank 0 sends rank 1 2 MiB in an all-to-all-v (two messages, pieces of 1 MiB, sent together;
// rank 1 sends nothing). The flow network carries them as one transfer, the packet network as
// two, which end a packet apart; both messages have the latency of the later, so every
// percentile is that latency (before, the packet tier's median was the first piece's).
TEST(MessageLatency, IsThatOfTheLastPieceAtBothTiers) {
  const fs::path dir =
      fs::temp_directory_path() / ("trnsim-message-latency-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto a2av = [](Json send) {
    return Json{{"id", 0}, {"name", "a2av"}, {"op", "all_to_all_v"}, {"group", "pair"},
                {"send_bytes", std::move(send)}};
  };
  const Json trace = {{"format", "trnsim-trace"}, {"version", 1}, {"name", "one-message"},
                      {"ranks", 2}, {"groups", {{"pair", {0, 1}}}},
                      {"rank_ops", {{{"rank", 0}, {"ops", {a2av({0, 2 * kMiB})}}},
                                    {{"rank", 1}, {"ops", {a2av({0, 0})}}}}}};
  std::ofstream(dir / "trace.json") << trace.dump(1);
  Json latency[2];
  int k = 0;
  for (const std::string tier : {"fast", "detailed"}) {
    const auto r = run_trnsim("run --config trn2-instance --trace " + (dir / "trace.json").string() +
                                  " --set replay.collectives.sync_bytes=0B --no-cache" +
                                  " --set sim.fidelity=" + tier + " --json",
                              false);
    ASSERT_EQ(r.code, 0) << r.out;
    const Json j = Json::parse(r.out);
    latency[k] = j["fabric"]["tiers"]["all"]["message_latency_ns"];
    EXPECT_EQ(latency[k]["count"].get<std::uint64_t>(), 2u) << tier;
    EXPECT_EQ(latency[k]["p50"].get<double>(), latency[k]["max"].get<double>()) << tier << latency[k];
    EXPECT_EQ(latency[k]["mean"].get<double>(), latency[k]["max"].get<double>()) << tier << latency[k];
    ++k;
  }
  // And the two tiers give it within 1 %.
  EXPECT_NEAR(latency[0]["p50"].get<double>() / latency[1]["p50"].get<double>(), 1.0, 0.01)
      << latency[0] << latency[1];
  fs::remove_all(dir);
}

}  // namespace
