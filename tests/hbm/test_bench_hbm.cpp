// SPDX-License-Identifier: MIT
// `trnsim bench hbm` end to end: JSON fields, determinism, and bad arguments -> exit code 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "../common/run_trnsim.hpp"

namespace {

trnsim::test::CliResult run(const std::string& args) {
  return trnsim::test::run_trnsim("bench hbm " + args, false);
}

}  // namespace

TEST(BenchHbm, JsonHasTheDocumentedFields) {
  const auto r = run("--pattern seq-read --bytes 4MiB --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"pattern", "bytes", "time_ns", "achieved_bytes_per_s", "peak_bytes_per_s",
                        "row_hit_rate", "energy_j", "pj_per_bit"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["pattern"], "seq-read");
  EXPECT_EQ(j["bytes"], 4u << 20);
  EXPECT_EQ(j["chip"], "Trainium3");
  EXPECT_DOUBLE_EQ(j["peak_bytes_per_s"].get<double>(), 4.9e12);
  // Never above the peak the timing allows.
  EXPECT_LE(j["achieved_bytes_per_s"].get<double>(), 4.9e12);
}

TEST(BenchHbm, RandomReadIsDeterministic) {
  const auto a = run("--pattern random-read --bytes 256KiB --json");
  const auto b = run("--pattern random-read --bytes 256KiB --json");
  ASSERT_EQ(a.code, 0);
  EXPECT_EQ(a.out, b.out);
}

TEST(BenchHbm, ChipPresetWorks) {
  const auto r = run("--config configs/chips/trn2.json --pattern copy --bytes 1MiB --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["chip"], "Trainium2");
}

TEST(BenchHbm, BadArgumentsExitTwo) {
  EXPECT_EQ(run("--pattern sideways").code, 2);
  EXPECT_EQ(run("--bytes 0").code, 2);
  EXPECT_EQ(run("--bytes lots").code, 2);
  EXPECT_EQ(run("--bytes 1TiB").code, 2);
  EXPECT_EQ(run("--requesters 0").code, 2);
}

// --pattern streams: independent sequential streams at aligned offsets.

namespace {

nlohmann::json run_json(const std::string& args) {
  const auto r = run(args + " --json");
  EXPECT_EQ(r.code, 0) << args;
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

// Runs `args`, expects exit code 2 and an error message that starts with `option`.
void expect_bad(const std::string& args, const std::string& option,
                const std::string& prefix = "error: ") {
  const auto r = trnsim::test::run_trnsim("bench hbm " + args, true);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(prefix + option), std::string::npos) << args << "\n" << r.out;
}

}  // namespace

TEST(BenchHbmStreams, TilingMovesTheSameBytesAsSeqRead) {
  // 16 streams x 256 KiB at stride 256 KiB (the default) tile [0, 4 MiB) like seq-read does.
  const auto seq = run_json("--pattern seq-read --bytes 4MiB --chunk 64KiB");
  const auto st = run_json("--pattern streams --requesters 16 --bytes 4MiB --chunk 64KiB");
  EXPECT_EQ(st["pattern"], "streams");
  EXPECT_EQ(seq["bytes_moved"].get<double>(), 4194304.0);
  EXPECT_EQ(st["bytes_moved"].get<double>(), 4194304.0);
  EXPECT_EQ(st["requests"], 64u);  // 16 streams x 256 KiB / 64 KiB
  // The same with groups: 4 groups of 4 streams 256 KiB apart, groups 1 MiB apart.
  const auto grouped = run_json("--pattern streams --requesters 16 --group 4 --stride 256KiB "
                                "--group-stride 1MiB --depth 3 --bytes 4MiB --chunk 64KiB");
  EXPECT_EQ(grouped["bytes_moved"].get<double>(), 4194304.0);
  EXPECT_EQ(grouped["requests"], 64u);
}

TEST(BenchHbmStreams, RequestsCountTheLastShortChunkOfEachStream) {
  // 8 streams of 1 MiB / 8 = 128 KiB in 96 KiB chunks: 96 + 32 KiB, 2 requests a stream.
  const auto one = run_json("--pattern streams --requesters 8 --bytes 1MiB --chunk 96KiB "
                            "--depth 2");
  EXPECT_EQ(one["requests"], 16u);
  EXPECT_EQ(one["bytes_moved"].get<double>(), 1048576.0);
  // A second region doubles both: every stream also reads 128 KiB from 64 MiB + i x 128 KiB,
  // its short 32 KiB chunk included (counting the two regions' bytes together would give
  // 256 KiB / 96 KiB = 3 requests a stream and lose it).
  const auto two = run_json("--pattern streams --requesters 8 --bytes 1MiB --chunk 96KiB "
                            "--depth 2 --second-base 64MiB");
  EXPECT_EQ(two["requests"], 32u);
  EXPECT_EQ(two["bytes_moved"].get<double>(), 2097152.0);
}

TEST(BenchHbmStreams, StreamsMayEndExactlyAtTheCapacity) {
  // Trainium3: 4 stacks x 36 GiB = 154618822656 B. Stream 1 of 2 (groups of 1) starts at
  // group_stride and reads 64 KiB: it fits with group_stride = capacity - 64 KiB, not 1 B more.
  const std::string base = "--pattern streams --requesters 2 --group 1 --bytes 128KiB "
                           "--chunk 64KiB --group-stride ";
  const auto fits = run_json(base + "154618757120");
  EXPECT_EQ(fits["bytes_moved"].get<double>(), 131072.0);
  expect_bad(base + "154618757121", "--bytes/--group-stride");
  // The second regions of a group of 2 end at B + stride + 64 KiB.
  const std::string second = "--pattern streams --requesters 2 --bytes 128KiB --chunk 64KiB "
                             "--second-base ";
  EXPECT_EQ(run_json(second + "154618691584")["requests"], 4u);
  expect_bad(second + "154618691585", "--second-base");
}

TEST(BenchHbmStreams, BadArgumentsExitTwoNamingTheOption) {
  const std::string s = "--pattern streams ";
  expect_bad(s + "--group 0", "--group");
  expect_bad(s + "--group 65", "--group");  // more than the 64 default requesters
  expect_bad(s + "--depth 0", "--depth");
  expect_bad(s + "--depth two", "--depth", "Could not convert: ");  // CLI11's own message
  expect_bad(s + "--stride 0", "--stride");
  expect_bad(s + "--stride lots", "--stride");
  expect_bad(s + "--group 8 --group-stride 1.5", "--group-stride");
  expect_bad(s + "--second-base nowhere", "--second-base");
  expect_bad(s + "--requesters 3 --bytes 1MiB", "--bytes");  // 1 MiB is not a multiple of 3
  expect_bad(s + "--requesters 4 --bytes 4MiB --stride 100GiB", "--bytes/--stride");
  expect_bad(s + "--requesters 2 --bytes 2MiB --stride 18446744073709551615", "--bytes/--stride");
  // Groups 2 x 60 GiB apart by default: stream 3 starts at 180 GiB.
  expect_bad(s + "--requesters 4 --group 2 --stride 60GiB --bytes 4MiB",
             "--bytes/--stride/--group");
  expect_bad(s + "--bytes 4MiB --second-base 144GiB", "--second-base");
  for (const char* opt : {"--stride 4KiB", "--group 2", "--group-stride 1MiB", "--depth 2",
                          "--second-base 1GiB"}) {
    const std::string name = std::string(opt).substr(0, std::string(opt).find(' '));
    expect_bad(std::string("--pattern seq-read --bytes 1MiB ") + opt, name);
  }
}

TEST(BenchHbmStreams, IsDeterministic) {
  const std::string args = "--pattern streams --requesters 32 --group 8 --stride 64KiB "
                           "--group-stride 4MiB --depth 4 --chunk 2KiB --bytes 2MiB "
                           "--second-base 128MiB --json";
  const auto a = run(args);
  const auto b = run(args);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
}

// Why /chip/hbm/address_hash defaults to bank_pc (docs/models/hbm.md#address-hash): on Trn2,
// 128 KiB is one pass over stack x channel x pseudo-channel x bank group, so 16 streams 128 KiB
// apart (x 8 groups 16 MiB apart, like 8 cores' DMA engines) move through the pseudo-channels in
// lockstep and leave half of them idle; the hash spreads them. Row hits are the same either way
// (a sequential stream hits each 1 KiB row 3 times out of 4), so only the spreading differs.
TEST(BenchHbm, LockstepStreamsNeedTheAddressHash) {
  const std::string streams =
      "--config configs/chips/trn2.json --pattern streams --requesters 128 --group 16 "
      "--stride 128KiB --group-stride 16MiB --depth 8 --chunk 2KiB --bytes 16MiB";
  const auto raw = run_json(streams + " --set chip.hbm.address_hash=none");
  const auto hashed = run_json(streams + " --set chip.hbm.address_hash=bank_pc");
  EXPECT_LT(raw["efficiency"].get<double>(), 0.6);
  EXPECT_GT(hashed["efficiency"].get<double>(), 0.9);
  EXPECT_NEAR(raw["row_hit_rate"].get<double>(), 0.75, 0.01);
  EXPECT_NEAR(hashed["row_hit_rate"].get<double>(), 0.75, 0.01);
}
