// SPDX-License-Identifier: MIT
// Native trace format: round trip and one test per class of error, each checking its message.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "../common/files.hpp"

#include "trnsim/error.hpp"
#include "trnsim/trace/gzip.hpp"
#include "trnsim/trace/native.hpp"

using namespace trnsim;
using namespace trnsim::trace;

namespace {

// Two ranks that exercise every op kind once.
const char* kSample = R"({
  "format": "trnsim-trace",
  "version": 1,
  "name": "sample",
  "metadata": {"generator": "hand", "nested": {"b": 1, "a": [1, 2]}},
  "ranks": 2,
  "groups": {"world": [0, 1], "rev": [1, 0]},
  "rank_ops": [
    {"rank": 1, "ops": [
      {"id": 0, "op": "all_reduce", "group": "world", "bytes": 1024},
      {"id": 1, "op": "all_to_all_v", "group": "rev", "send_bytes": [7, 9], "deps": [0]},
      {"id": 2, "op": "recv", "peer": 0, "bytes": 64, "tag": 3},
      {"id": 3, "op": "broadcast", "group": "world", "bytes": 10, "root": 0},
      {"id": 4, "op": "all_gather", "group": "world", "bytes": 4096},
      {"id": 5, "op": "reduce_scatter", "group": "world", "bytes": 4096, "dtype": "fp32"},
      {"id": 6, "op": "all_to_all", "group": "world", "bytes": 2048},
      {"id": 7, "op": "barrier", "group": "world"}
    ]},
    {"rank": 0, "ops": [
      {"id": 10, "name": "l0.qkv", "op": "gemm", "m": 4096, "k": 7168, "n": 3072, "dtype": "mxfp8"},
      {"id": 11, "op": "elementwise", "elements": 100, "dtype": "bf16", "inputs": 3},
      {"id": 12, "op": "activation", "elements": 100, "dtype": "fp32"},
      {"id": 13, "op": "reduction", "elements": 100, "dtype": "fp16", "outputs": 4},
      {"id": 14, "op": "softmax", "elements": 100, "dtype": "bf16", "rows": 10},
      {"id": 15, "op": "norm", "elements": 100, "dtype": "bf16"},
      {"id": 16, "op": "attention", "batch": 2, "heads": 4, "seq_q": 8, "seq_kv": 16,
       "head_dim": 32, "dtype": "fp8", "causal": true},
      {"id": 17, "op": "mem_load", "bytes": 512},
      {"id": 18, "op": "mem_store", "bytes": 256, "deps": [17, 10]},
      {"id": 19, "op": "delay", "duration": "12.5us"},
      {"id": 20, "op": "all_reduce", "group": "world", "bytes": 1024, "deps": [10]},
      {"id": 21, "op": "all_to_all_v", "group": "rev", "send_bytes": [1, 2]},
      {"id": 22, "op": "send", "peer": 1, "bytes": 64, "tag": 3},
      {"id": 23, "op": "broadcast", "group": "world", "bytes": 10, "root": 0},
      {"id": 24, "op": "all_gather", "group": "world", "bytes": 4096},
      {"id": 25, "op": "reduce_scatter", "group": "world", "bytes": 4096},
      {"id": 26, "op": "all_to_all", "group": "world", "bytes": 2048},
      {"id": 27, "op": "barrier", "group": "world", "source_type": "sync"},
      {"id": 28, "op": "elementwise", "elements": 5, "dtype": "mxfp4", "flops": 2.5e11,
       "tensor_bytes": 77}
    ]}
  ]
})";

// A minimal valid trace around `ops0` (rank 0) and `ops1` (rank 1), for error tests.
std::string two_ranks(const std::string& ops0, const std::string& ops1 = "",
                      const std::string& extra = "") {
  return R"({"format": "trnsim-trace", "version": 1, "ranks": 2,)" + extra +
         R"( "groups": {"world": [0, 1], "solo": [1]},
  "rank_ops": [{"rank": 0, "ops": [)" +
         ops0 + R"(]}, {"rank": 1, "ops": [)" + ops1 + "]}]}";
}

// Asserts that parsing throws TraceError whose message contains every fragment.
void expect_error(const std::string& text, std::initializer_list<std::string> fragments) {
  try {
    parse_native(text, "t.json");
    FAIL() << "no error; expected one containing " << *fragments.begin();
  } catch (const TraceError& e) {
    const std::string msg = e.what();
    for (const auto& f : fragments) {
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nlacks: " << f;
    }
  }
}

}  // namespace

TEST(Native, ReadsEveryKindWithItsFields) {
  const Workload w = parse_native(kSample, "sample.json");
  ASSERT_EQ(w.num_ranks(), 2);
  EXPECT_EQ(w.name, "sample");
  EXPECT_EQ(w.metadata["generator"], "hand");
  EXPECT_EQ(w.groups.at("rev"), (std::vector<int>{1, 0}));
  // rank_ops listed rank 1 first: the reader places each entry by its "rank"
  ASSERT_EQ(w.ranks[0].ops.size(), 19u);
  ASSERT_EQ(w.ranks[1].ops.size(), 8u);
  const Op& g = w.ranks[0].ops[0];
  EXPECT_EQ(g.kind, OpKind::gemm);
  EXPECT_EQ(g.name, "l0.qkv");
  EXPECT_EQ(g.m, 4096u);
  EXPECT_EQ(g.k, 7168u);
  EXPECT_EQ(g.n, 3072u);
  EXPECT_EQ(g.batch, 1u);  // default
  EXPECT_EQ(g.dtype, DType::mxfp8);
  EXPECT_EQ(w.ranks[0].ops[1].inputs, 3u);
  EXPECT_EQ(w.ranks[0].ops[3].outputs, 4u);
  EXPECT_EQ(w.ranks[0].ops[4].rows, 10u);
  EXPECT_EQ(w.ranks[0].ops[5].rows, 1u);
  EXPECT_TRUE(w.ranks[0].ops[6].causal);
  EXPECT_EQ(w.ranks[0].ops[8].deps, (std::vector<OpId>{17, 10}));
  EXPECT_DOUBLE_EQ(w.ranks[0].ops[9].duration.si, 12.5e-6);
  EXPECT_EQ(w.ranks[0].ops[10].dtype, DType::bf16);  // all_reduce default
  EXPECT_EQ(w.ranks[1].ops[5].dtype, DType::fp32);
  EXPECT_EQ(w.ranks[1].ops[1].send_bytes, (std::vector<std::uint64_t>{7, 9}));
  EXPECT_EQ(w.ranks[1].ops[2].tag, 3);
  EXPECT_EQ(w.ranks[0].ops[17].source_type, "sync");
  EXPECT_EQ(w.ranks[0].ops[18].flops, 2.5e11);
  EXPECT_EQ(w.ranks[0].ops[18].tensor_bytes, 77u);
  EXPECT_TRUE(w.warnings.empty());
}

TEST(Native, RoundTripIsExactAndDeterministic) {
  const Workload w = parse_native(kSample, "sample.json");
  const std::string text = write_native(w);
  const Workload back = parse_native(text, "written.json");
  EXPECT_EQ(write_native(back), text);
  EXPECT_EQ(back.metadata, w.metadata);
  EXPECT_EQ(back.groups, w.groups);
  ASSERT_EQ(back.ranks[0].ops.size(), w.ranks[0].ops.size());
  EXPECT_DOUBLE_EQ(back.ranks[0].ops[9].duration.si, 12.5e-6);
  // One op per line, keys id/op/name first: diff-friendly.
  EXPECT_NE(text.find(R"({"id":10,"op":"gemm","name":"l0.qkv",)"), std::string::npos) << text;
}

TEST(Native, LoadsFromFileAndNamesItInErrors) {
  const auto dir = trnsim::test::fresh_dir("native", "file");
  const auto good = (dir / "good.json").string();
  std::ofstream(good) << kSample;
  EXPECT_EQ(load_native(good).num_ranks(), 2);
  const auto bad = (dir / "bad.json").string();
  std::ofstream(bad) << two_ranks(R"({"id": 0, "op": "delay", "duration": "1us", "dep": [1]})");
  try {
    load_native(bad);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()),
              bad + ":/rank_ops/0/ops/0/dep: unknown key \"dep\"; did you mean \"deps\"?");
  }
  EXPECT_THROW(load_native((dir / "absent.json").string()), TraceError);
}

// A gzip-compressed trace reads as its text; a truncated one is an error naming the file.
TEST(Native, ReadsGzipAndRefusesATruncatedOne) {
  const auto dir = trnsim::test::fresh_dir("native", "gz");
  const auto gz = (dir / "sample.json.gz").string();
  const std::string packed = gzip(kSample);
  std::ofstream(gz, std::ios::binary) << packed;
  EXPECT_EQ(write_native(load_native(gz)), write_native(parse_native(kSample, "sample.json")));
  const auto cut = (dir / "cut.json.gz").string();
  std::ofstream(cut, std::ios::binary) << packed.substr(0, packed.size() / 2);
  try {
    load_native(cut);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()),
              cut + ": cannot decompress gzip: the compressed data ends early");
  }
}

TEST(NativeErrors, UnknownKeysSuggestTheNearest) {
  expect_error(two_ranks(R"({"id": 0, "op": "gemm", "m": 1, "k": 1, "n": 1, "dtype": "bf16",
                              "batchh": 2})"),
               {"t.json:/rank_ops/0/ops/0/batchh: unknown key \"batchh\"; did you mean \"batch\"?"});
  expect_error(two_ranks("", "", R"( "grups": {},)"),
               {"t.json:/grups: unknown key \"grups\"; did you mean \"groups\"?"});
  // a field of another kind is unknown for this kind
  expect_error(two_ranks(R"({"id": 0, "op": "delay", "duration": "1us", "bytes": 4})"),
               {"/rank_ops/0/ops/0/bytes: unknown key \"bytes\""});
  expect_error(two_ranks(R"({"id": 0, "op": "gem", "m": 1, "k": 1, "n": 1, "dtype": "bf16"})"),
               {"/rank_ops/0/ops/0/op: expected one of", "got \"gem\"", "did you mean \"gemm\""});
  expect_error(two_ranks(R"({"id": 0, "op": "gemm", "m": 1, "k": 1, "n": 1, "dtype": "bf61"})"),
               {"/rank_ops/0/ops/0/dtype:", "did you mean \"bf16\""});
}

TEST(NativeErrors, WrongTypesAndMissingFields) {
  expect_error(two_ranks(R"({"id": 0, "op": "gemm", "m": "4096", "k": 1, "n": 1, "dtype": "bf16"})"),
               {"t.json:/rank_ops/0/ops/0/m: expected an integer, got \"4096\""});
  expect_error(two_ranks(R"({"id": -1, "op": "delay", "duration": "1us"})"),
               {"/rank_ops/0/ops/0/id: expected an integer, got -1"});
  expect_error(two_ranks(R"({"id": 0, "op": "delay", "duration": 12})"),
               {"/rank_ops/0/ops/0/duration: expected a duration", "got 12"});
  expect_error(two_ranks(R"({"id": 0, "op": "gemm", "m": 1, "n": 1, "dtype": "bf16"})"),
               {"/rank_ops/0/ops/0/k: missing required key \"k\""});
  expect_error(two_ranks(R"({"id": 0, "op": "gemm", "m": 0, "k": 1, "n": 1, "dtype": "bf16"})"),
               {"t.json:/rank_ops/0/ops/0: gemm \"m\" must be at least 1"});
  expect_error(two_ranks(R"({"id": 0, "op": "send", "peer": 1})"),
               {"/rank_ops/0/ops/0/bytes: missing required key \"bytes\""});
  expect_error(R"({"format": "trnsim-trace", "version": 1, "ranks": 1, "groups": {"g": [0, 0]},
                   "rank_ops": [{"rank": 0, "ops": []}]})",
               {"t.json:/groups/g/1: rank 0 is listed twice"});
  expect_error(R"({"format": "trnsim-trace", "version": 1, "ranks": 1, "groups": {"g": [3]},
                   "rank_ops": [{"rank": 0, "ops": []}]})",
               {"t.json:/groups/g/0: rank 3 is out of range (ranks are 0..0)"});
  expect_error(R"({"format": "trnsim-trace", "version": 1, "ranks": 2,
                   "rank_ops": [{"rank": 0, "ops": []}]})",
               {"t.json:/rank_ops: no entry for rank 1"});
  expect_error(R"({"format": "trnsim-trace", "version": 1, "ranks": 1,
                   "rank_ops": [{"rank": 0, "ops": []}, {"rank": 0, "ops": []}]})",
               {"t.json:/rank_ops/1/rank: rank 0 already appears at /rank_ops/0"});
  expect_error("{\"format\": \"trnsim-trace\",\n \"version\": 1,,}", {"t.json:2:15: invalid JSON"});
}

TEST(NativeErrors, BadFormatAndVersion) {
  expect_error(R"({"format": "trnsim-trace", "version": 2, "ranks": 1, "rank_ops": []})",
               {"t.json:/version: unsupported trace version 2 (this reader supports 1)"});
  expect_error(R"({"format": "chakra", "version": 1, "ranks": 1, "rank_ops": []})",
               {"t.json:/format: expected \"trnsim-trace\", got \"chakra\""});
  expect_error(R"({"version": 1, "ranks": 1, "rank_ops": []})",
               {"t.json:/format: missing required key \"format\""});
}

TEST(NativeErrors, MissingDependency) {
  expect_error(two_ranks(R"({"id": 0, "op": "delay", "duration": "1us"},
                             {"id": 1, "op": "delay", "duration": "1us", "deps": [0, 5]})"),
               {"t.json:/rank_ops/0/ops/1: depends on op 5, which rank 0 does not have"});
}

TEST(NativeErrors, DuplicateId) {
  expect_error(two_ranks(R"({"id": 3, "op": "delay", "duration": "1us"},
                             {"id": 3, "op": "delay", "duration": "1us"})"),
               {"t.json:/rank_ops/0/ops/1: id 3 is already used by t.json:/rank_ops/0/ops/0"});
}

TEST(NativeErrors, CycleNamesItsOps) {
  expect_error(two_ranks(R"({"id": 0, "name": "start", "op": "delay", "duration": "1us"},
                             {"id": 1, "name": "a", "op": "delay", "duration": "1us", "deps": [0, 3]},
                             {"id": 2, "name": "b", "op": "delay", "duration": "1us", "deps": [1]},
                             {"id": 3, "name": "c", "op": "delay", "duration": "1us", "deps": [2]})"),
               {"t.json:/rank_ops/0/ops/2: dependency cycle: op 2 (b) -> op 3 (c) -> op 1 (a) -> op 2 (b)"});
}

TEST(NativeErrors, UnknownGroupAndMembership) {
  expect_error(two_ranks(R"({"id": 0, "op": "barrier", "group": "wrld"})",
                         R"({"id": 0, "op": "barrier", "group": "world"})"),
               {"t.json:/rank_ops/0/ops/0: unknown group \"wrld\"; did you mean \"world\"?"});
  expect_error(two_ranks(R"({"id": 0, "op": "barrier", "group": "solo"})"),
               {"t.json:/rank_ops/0/ops/0: rank 0 is not a member of group \"solo\""});
  expect_error(two_ranks(R"({"id": 0, "op": "all_to_all_v", "group": "world", "send_bytes": [1]})",
                         R"({"id": 0, "op": "all_to_all_v", "group": "world", "send_bytes": [1, 2]})"),
               {"t.json:/rank_ops/0/ops/0: send_bytes has 1 entries but group \"world\" has 2 members"});
  expect_error(two_ranks(R"({"id": 0, "op": "broadcast", "group": "solo", "bytes": 1, "root": 1})",
                         R"({"id": 0, "op": "broadcast", "group": "solo", "bytes": 1, "root": 0})"),
               {"rank 0 is not a member of group \"solo\""});
  expect_error(two_ranks("", R"({"id": 0, "op": "broadcast", "group": "solo", "bytes": 1, "root": 0})"),
               {"t.json:/rank_ops/1/ops/0: broadcast root 0 is not a member of group \"solo\""});
}

TEST(NativeErrors, MismatchedCollective) {
  expect_error(two_ranks(R"({"id": 0, "op": "all_reduce", "group": "world", "bytes": 1024})",
                         R"({"id": 0, "op": "all_reduce", "group": "world", "bytes": 2048})"),
               {"group \"world\": collective #0 does not match between ranks 0 and 1: bytes 1024 vs "
                "2048 (t.json:/rank_ops/0/ops/0 / t.json:/rank_ops/1/ops/0)"});
  expect_error(two_ranks(R"({"id": 0, "op": "all_reduce", "group": "world", "bytes": 1},
                            {"id": 1, "op": "all_gather", "group": "world", "bytes": 1})",
                         R"({"id": 0, "op": "all_reduce", "group": "world", "bytes": 1},
                            {"id": 1, "op": "reduce_scatter", "group": "world", "bytes": 1})"),
               {"group \"world\": collective #1 does not match between ranks 0 and 1: all_gather vs "
                "reduce_scatter"});
  expect_error(two_ranks(R"({"id": 0, "op": "broadcast", "group": "world", "bytes": 1, "root": 0})",
                         R"({"id": 0, "op": "broadcast", "group": "world", "bytes": 1, "root": 1})"),
               {"collective #0 does not match between ranks 0 and 1: root 0 vs 1"});
}

TEST(NativeErrors, MissingCollectiveMember) {
  expect_error(two_ranks(R"({"id": 0, "op": "barrier", "group": "world"},
                            {"id": 1, "op": "all_reduce", "group": "world", "bytes": 8})",
                         R"({"id": 0, "op": "barrier", "group": "world"})"),
               {"group \"world\": collective #1 (all_reduce at t.json:/rank_ops/0/ops/1) is issued "
                "by ranks [0] but never by ranks [1]; the replay would wait for them forever"});
}

TEST(NativeErrors, SendWithoutRecv) {
  expect_error(two_ranks(R"({"id": 0, "op": "send", "peer": 1, "bytes": 8, "tag": 2})",
                         R"({"id": 0, "op": "recv", "peer": 0, "bytes": 8, "tag": 1})"),
               {"t.json:/rank_ops/0/ops/0: send #0 to rank 1 (tag 2) has no matching recv on rank 1"});
  expect_error(two_ranks("", R"({"id": 0, "op": "recv", "peer": 0, "bytes": 8})"),
               {"t.json:/rank_ops/1/ops/0: recv #0 from rank 0 (tag 0) has no matching send on rank 0"});
  expect_error(two_ranks(R"({"id": 0, "op": "send", "peer": 1, "bytes": 8})",
                         R"({"id": 0, "op": "recv", "peer": 0, "bytes": 16})"),
               {"send #0 of 8 bytes is received as 16 bytes"});
  expect_error(two_ranks(R"({"id": 0, "op": "send", "peer": 0, "bytes": 8})"),
               {"t.json:/rank_ops/0/ops/0: send peer 0 is not another rank (ranks are 0..1)"});
}

// The generator's bundled traces (tools/moe_gen.py, committed in traces/) load, round-trip, and
// their GEMM/attention FLOPs agree with the generator's own count in metadata.stats.
TEST(Native, BundledGeneratorTraces) {
  for (const char* file : {"traces/mixtral-moe-16.json", "traces/deepseek-v3-moe-144.json"}) {
    SCOPED_TRACE(file);
    const Workload w = load_native(std::string(TRNSIM_SOURCE_DIR) + "/" + file);
    EXPECT_TRUE(w.warnings.empty());
    EXPECT_EQ(write_native(parse_native(write_native(w))), write_native(w));
    double total = 0.0, most = 0.0;
    for (const auto& r : w.ranks) {
      double rank_total = 0.0;
      for (const auto& op : r.ops) {
        if (op.kind == OpKind::gemm || op.kind == OpKind::attention) rank_total += op_flops(op);
      }
      total += rank_total;
      most = std::max(most, rank_total);
    }
    const auto& stats = w.metadata.at("stats");
    EXPECT_EQ(total, stats.at("flops_total").get<double>());
    EXPECT_EQ(most, stats.at("flops_per_rank_max").get<double>());
  }
}

// The reader streams ops out of the document as it parses (each op leaves the DOM when it is
// complete): every bundled trace, and the golden inputs, read back exactly what was written. One
// case per file, so that the large default step's case runs beside the others (and the sanitizer
// suite, which exercises the same reader on the smaller files, can leave it to the release suite).
static std::vector<std::string> bundled_trace_files() {
  std::vector<std::string> files;
  for (const char* dir : {"traces", "tests/golden/inputs"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(TRNSIM_SOURCE_DIR) + "/" + dir)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".json") || name.ends_with(".json.gz")) files.push_back(std::string(dir) + "/" + name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Native, BundledTracesAreFound) { EXPECT_GE(bundled_trace_files().size(), 6u); }

class BundledRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(BundledRoundTrip, ReadsBackWhatWasWritten) {
  const Workload w = load_native(std::string(TRNSIM_SOURCE_DIR) + "/" + GetParam());
  std::size_t ops = 0;
  for (const auto& r : w.ranks) ops += r.ops.size();
  EXPECT_GT(ops, 0u);
  const std::string text = write_native(w);
  const Workload back = parse_native(text, "written.json");
  EXPECT_EQ(write_native(back), text);
  std::size_t back_ops = 0;
  for (const auto& r : back.ranks) back_ops += r.ops.size();
  EXPECT_EQ(back_ops, ops);
}

INSTANTIATE_TEST_SUITE_P(Native, BundledRoundTrip, ::testing::ValuesIn(bundled_trace_files()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Entries of rank_ops in any order, each with its ops before its rank: the streamed ops land on
// the right rank.
TEST(Native, StreamedOpsFollowTheirEntry) {
  const Workload w = parse_native(kSample, "sample.json");
  Json j = Json::parse(write_native(w));  // nlohmann sorts keys: "ops" before "rank"
  std::reverse(j["rank_ops"].begin(), j["rank_ops"].end());
  const std::string text = j.dump();
  ASSERT_LT(text.find("\"ops\""), text.find("\"rank\":"));
  const Workload back = parse_native(text, "reordered.json");
  EXPECT_EQ(write_native(back), write_native(w));
  EXPECT_EQ(back.ranks[0].ops.front().id, 10u);
  EXPECT_EQ(back.ranks[1].ops.front().id, 0u);
}

// An op error waits for the header: a file of another format says so first.
TEST(NativeErrors, FormatBeforeStreamedOps) {
  expect_error(R"({"rank_ops": [{"rank": 0, "ops": [{"id": 0, "op": "warp"}]}], "format": "chakra",
                   "version": 1, "ranks": 1})",
               {"t.json:/format: expected \"trnsim-trace\", got \"chakra\""});
  expect_error(two_ranks(R"({"id": 0, "op": "gemm", "m": 1, "k": 1, "n": "x", "dtype": "bf16"})"),
               {"t.json:/rank_ops/0/ops/0/n"});
}

// ---- the binary form ----------------------------------------------------------------------------

// The binary form holds the same workload: the JSON written from it is the JSON written from the
// original, and its own bytes are reproduced (they carry every double's bits: durations, flops).
static void expect_binary_round_trip(const Workload& w) {
  const std::string bin = write_native_binary(w);
  ASSERT_TRUE(is_native_binary(bin));
  const Workload back = parse_native_binary(bin, "written.trnb");
  EXPECT_EQ(write_native(back), write_native(w));
  EXPECT_EQ(write_native_binary(back), bin);
  EXPECT_EQ(back.metadata, w.metadata);
  EXPECT_EQ(back.groups, w.groups);
  EXPECT_EQ(back.name, w.name);
}

TEST(NativeBinary, RoundTripIsExactAndDeterministic) {
  const Workload w = parse_native(kSample, "sample.json");
  expect_binary_round_trip(w);
  const std::string bin = write_native_binary(w);
  EXPECT_EQ(bin.substr(0, 8), std::string("\x89TRNSIM\n", 8));
  EXPECT_EQ(bin[8], '\x01');  // version 1
  const Workload back = parse_native_binary(bin, "s.trnb");
  EXPECT_EQ(back.ranks[0].ops[9].duration.si, w.ranks[0].ops[9].duration.si);  // every bit
  EXPECT_EQ(back.ranks[0].ops[18].flops, 2.5e11);
  EXPECT_EQ(back.ranks[0].ops[8].deps, (std::vector<OpId>{17, 10}));
  // Smaller than the JSON it came from.
  EXPECT_LT(bin.size(), write_native(w).size() / 2);
}

// Ids far apart, dependencies on later-listed and distant ops, and the largest id: the deltas
// wrap and come back exact.
TEST(NativeBinary, ExtremeIdsAndDependencies) {
  Workload w = parse_native(two_ranks(R"({"id": 18446744073709551615, "op": "delay", "duration": "1ns"},
    {"id": 0, "op": "delay", "duration": "2ns", "deps": [18446744073709551615]},
    {"id": 7, "op": "delay", "duration": "3ns", "deps": [0, 18446744073709551615]})"),
                            "ids.json");
  expect_binary_round_trip(w);
}

TEST(NativeBinary, LoadNativeReadsItPlainAndGzipped) {
  const auto dir = trnsim::test::fresh_dir("native", "bin");
  const Workload w = parse_native(kSample, "sample.json");
  const std::string bin = write_native_binary(w);
  const auto plain = (dir / "sample.trnb").string(), gz = (dir / "sample.trnb.gz").string();
  std::ofstream(plain, std::ios::binary) << bin;
  std::ofstream(gz, std::ios::binary) << gzip(bin);
  EXPECT_EQ(write_native(load_native(plain)), write_native(w));
  EXPECT_EQ(write_native(load_native(gz)), write_native(w));
  // Errors name the file, the byte offset and where in the trace it was.
  const auto cut = (dir / "cut.trnb").string();
  std::ofstream(cut, std::ios::binary) << bin.substr(0, bin.size() / 2);
  try {
    load_native(cut);
    FAIL();
  } catch (const TraceError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(cut + ": offset ", 0), 0u) << m;
    EXPECT_NE(m.find("(/rank_ops/"), std::string::npos) << m;
    // A count the bytes left cannot hold, or the end of the file in the middle of a field.
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
}

// Every prefix of a binary trace, and every one-byte corruption, is a TraceError naming the
// origin and an offset, never a crash or a workload.
TEST(NativeBinary, EveryTruncationAndCorruptionIsAnError) {
  const std::string bin = write_native_binary(parse_native(kSample, "sample.json"));
  for (std::size_t n = 0; n < bin.size(); ++n) {
    SCOPED_TRACE(n);
    try {
      parse_native_binary(std::string_view(bin).substr(0, n), "t.trnb");
      ADD_FAILURE() << "a prefix of " << n << " bytes was accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("t.trnb: offset ", 0), 0u) << e.what();
    }
  }
  for (std::size_t i = 0; i < bin.size(); ++i) {
    SCOPED_TRACE(i);
    std::string bad = bin;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      parse_native_binary(bad, "t.trnb");
      ADD_FAILURE() << "a corrupt byte at " << i << " was accepted";
    } catch (const TraceError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("t.trnb: offset ", 0), 0u) << e.what();
    }
  }
}

TEST(NativeBinary, VersionMagicAndChecksum) {
  const std::string bin = write_native_binary(parse_native(kSample, "sample.json"));
  std::string v2 = bin;
  v2[8] = '\x02';
  EXPECT_THROW(
      {
        try {
          parse_native_binary(v2, "t.trnb");
        } catch (const TraceError& e) {
          EXPECT_EQ(std::string(e.what()),
                    "t.trnb: offset 8 (version): unsupported binary trace version 2 (this reader "
                    "supports 1)");
          throw;
        }
      },
      TraceError);
  try {
    parse_native_any(std::string("\x89PNG\r\n\x1a\n", 8), "image.png");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "image.png: offset 0 (magic): not a binary trnsim trace (expected the magic bytes "
              "\\x89TRNSIM\\n)");
  }
  // The last byte is the checksum's: the structure reads, the sum does not match.
  std::string sum = bin;
  sum.back() = static_cast<char>(sum.back() ^ 1);
  try {
    parse_native_binary(sum, "t.trnb");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("t.trnb: offset {} (end): checksum mismatch",
                                                     bin.size() - 4)),
              std::string::npos)
        << e.what();
  }
}

class BundledBinaryRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(BundledBinaryRoundTrip, ReadsBackExactly) {
  expect_binary_round_trip(load_native(std::string(TRNSIM_SOURCE_DIR) + "/" + GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Native, BundledBinaryRoundTrip, ::testing::ValuesIn(bundled_trace_files()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });
