// SPDX-License-Identifier: MIT
// Library-level hostile inputs: integer parsing without wrapping, constraints given together, the
// checked JSON parser (duplicate keys, depth, 1e400), bounded reads and atomic result directories.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "../common/asan.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/io.hpp"
#include "trnsim/trace/chakra.hpp"
#include "trnsim/trace/gzip.hpp"
#include "trnsim/trace/native.hpp"

using namespace trnsim;
using namespace trnsim::config;
namespace fs = std::filesystem;

namespace {

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

struct Ints {
  int i = 0;
  std::uint32_t u = 0;
  std::uint64_t u64 = 0;
  int both = 5;
  template <class V>
  void visit(V& v) {
    v.field("i", i, "an int", AtLeast{1});
    v.field("u", u, "an unsigned");
    v.field("u64", u64, "an unsigned 64-bit");
    v.field("both", both, "two constraints", Positive{}, AtMost{10});
  }
};

std::string read_ints(const std::string& json) {
  Provenance prov;
  prov.record("", "x.json");
  Ints out;
  return error_of([&] { JsonReader::read(Json::parse(json), "", prov, out); });
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("trnsim-hostile-" + std::to_string(::getpid()) +
                                                  "-" + name())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path(name);
  }

 private:
  static std::string name() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  fs::path path_;
};

}  // namespace

TEST(HostileIntegers, NoWrapModulo2To32) {
  EXPECT_EQ(read_ints(R"({"i": 4294967304})"),
            "x.json:/i: expected an integer >= 1, got 4294967304 (this field holds -2147483648 "
            "to 2147483647)");
  EXPECT_EQ(read_ints(R"({"u": 4294967296})"),
            "x.json:/u: expected an integer, got 4294967296 (this field holds 0 to 4294967295)");
  EXPECT_EQ(read_ints(R"({"u": 4294967295})"), "");
}

TEST(HostileIntegers, Int64MinIsNotZeroInAnUnsignedField) {
  EXPECT_EQ(read_ints(R"({"u64": -9223372036854775808})"),
            "x.json:/u64: expected an integer, got -9223372036854775808 (this field holds 0 to "
            "18446744073709551615)");
  EXPECT_EQ(read_ints(R"({"i": -9223372036854775808})"),
            "x.json:/i: expected an integer >= 1, got -9223372036854775808 (this field holds "
            "-2147483648 to 2147483647)");
  EXPECT_EQ(read_ints(R"({"u64": 18446744073709551615})"), "");
}

TEST(HostileIntegers, ConstraintsCombine) {
  EXPECT_EQ(read_ints(R"({"both": 0})"), "x.json:/both: expected an integer > 0 and <= 10, got 0");
  EXPECT_EQ(read_ints(R"({"both": 11})"),
            "x.json:/both: expected an integer > 0 and <= 10, got 11");
  EXPECT_EQ(read_ints(R"({"both": 10})"), "");
}

TEST(HostileJson, DuplicateKeyNamesBoth) {
  const auto msg = error_of([] { parse_json_checked(R"({"a": {"x": 1, "y": 2, "x": 3}})", "f"); });
  EXPECT_EQ(msg, "f:/a/x: duplicate key \"x\" (keys 1 and 3 of the object at /a); a key may "
                 "appear once");
  // The same key in different objects is fine.
  EXPECT_EQ(error_of([] { parse_json_checked(R"([{"x": 1}, {"x": 2}])", "f"); }), "");
}

TEST(HostileJson, DuplicateKeyInALargeObjectNamesBothPositions) {
  // Past 16 keys the parser looks keys up in a hash map instead of in order.
  std::string text = "{\"o\": {";
  for (int i = 0; i < 20; ++i) text += fmt::format("\"k{}\": {}, ", i, i);
  text += "\"k3\": 0}}";
  const auto msg = error_of([&] { parse_json_checked(text, "f"); });
  EXPECT_EQ(msg, "f:/o/k3: duplicate key \"k3\" (keys 4 and 21 of the object at /o); a key may "
                 "appear once");
}

TEST(HostileJson, KeysOfAClosedObjectDoNotCarryOver) {
  // A level of the parser's stack is reused by the next object at its depth.
  std::string large = "{";
  for (int i = 0; i < 20; ++i) large += fmt::format("{}\"k{}\": {}", i ? ", " : "", i, i);
  large += "}";
  EXPECT_EQ(error_of([&] { parse_json_checked("[" + large + ", {\"k0\": 1}]", "f"); }), "");
  EXPECT_EQ(error_of([] { parse_json_checked(R"({"a": {"x": 1}, "b": {"y": 1, "x": 2}})", "f"); }),
            "");
  const auto msg = error_of([] { parse_json_checked(R"([{"x": 1}, {"y": 1, "y": 2}])", "f"); });
  EXPECT_EQ(msg, "f:/1/y: duplicate key \"y\" (keys 1 and 2 of the object at /1); a key may "
                 "appear once");
}

TEST(HostileJson, DuplicateKeyInsideArrayHasIndexInPointer) {
  const auto msg = error_of([] { parse_json_checked(R"({"l": [0, {"k": 1, "k": 2}]})", "f"); });
  EXPECT_EQ(msg.substr(0, 34), "f:/l/1/k: duplicate key \"k\" (keys ") << msg;
}

TEST(HostileJson, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto msg = error_of([&] { parse_json_checked(deep, "deep.json"); });
  EXPECT_NE(msg.find("deep.json:/0/0/0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nesting deeper than 256 levels"), std::string::npos) << msg;
  const std::string ok = std::string(200, '[') + std::string(200, ']');
  EXPECT_EQ(error_of([&] { parse_json_checked(ok, "ok.json"); }), "");
}

TEST(HostileJson, NumberBeyondDoubleIsInputError) {
  const auto msg = error_of([] { parse_json_checked(R"({"chip": {"stacks": 1e400}})", "c.json"); });
  EXPECT_NE(msg.find("c.json:/chip/stacks: invalid JSON: number overflow"), std::string::npos)
      << msg;
}

TEST(HostileConfig, ValueOutOfDoubleRangeInFileIsConfigError) {
  TempDir d;
  const auto p = d.write("c.json", R"({"sim": {"seed": 1e400}})");
  const auto msg = error_of([&] { load_config(p); });
  EXPECT_NE(msg.find("c.json:/sim/seed: invalid JSON: number overflow"), std::string::npos) << msg;
}

TEST(HostileConfig, SetValueOutOfDoubleRangeNamesSetAndPointer) {
  const auto msg = error_of([] { load_config_text("{}", "t", {"sim.seed=[1e400]"}); });
  EXPECT_NE(msg.find("--set sim.seed:/sim/seed: invalid JSON: number overflow"), std::string::npos)
      << msg;
}

// A fuzz finding (fuzz_config, tests/fuzz): a --set value with bytes that are not UTF-8 was an
// internal error (nlohmann's type_error 316 when the config was written back). Each malformed
// form is refused with the byte's offset; well-formed multi-byte text is accepted.
TEST(HostileConfig, SetThatIsNotUtf8IsConfigError) {
  EXPECT_EQ(error_of([] { load_config_text("{ }", "t", {"/chip=\x01\x13\xff\xff"}); }),
            "--set \"/chip=\\u0001\\u0013\"...: byte 8 (0xFF) is not valid UTF-8; expected "
            "path=value in UTF-8 text");
  // Overlong, overlong, surrogate, above U+10FFFF, truncated, a lone continuation byte.
  for (const char* bad : {"name=\xc0\xaf", "name=\xe0\x80\xaf", "name=\xed\xa0\x80",
                          "name=\xf4\x90\x80\x80", "name=\xe2\x82", "name=\x80"}) {
    const auto msg = error_of([&] { load_config_text("{ }", "t", {bad}); });
    EXPECT_NE(msg.find("byte 5 ("), std::string::npos) << msg;
  }
  const auto ok = load_config_text(R"({"name": "x"})", "t", {"name=\xe2\x82\xac \xf0\x9f\x98\x80"});
  EXPECT_EQ(ok.config.name, "\xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST(HostileConfig, ExtendsSymlinkLoopAndDevicesAndDirectories) {
  TempDir d;
  fs::create_symlink(d.path("b.json"), d.path("a.json"));
  fs::create_symlink(d.path("a.json"), d.path("b.json"));
  const auto loop = d.write("x.json", R"({"extends": "a.json"})");
  EXPECT_EQ(error_of([&] { load_config(loop); }),
            d.path("a.json") + ": cannot read: Too many levels of symbolic links (named by " +
                loop + ":/extends)");
  const auto zero = d.write("z.json", R"({"extends": "/dev/zero"})");
  EXPECT_EQ(error_of([&] { load_config(zero); }),
            "/dev/zero: cannot read: a character device, expected a regular file (named by " +
                zero + ":/extends)");
  fs::create_directory(d.path("dir.json"));
  EXPECT_EQ(error_of([&] { load_config(d.path("dir.json")); }),
            d.path("dir.json") + ": cannot read: a directory, expected a regular file");
}

TEST(HostileIo, FifoIsRefusedWithoutOpening) {
  TempDir d;
  ASSERT_EQ(::mkfifo(d.path("f").c_str(), 0600), 0);
  // Opening a FIFO for reading would block until a writer came.
  EXPECT_EQ(error_of([&] { read_input_file(d.path("f"), 1024); }),
            d.path("f") + ": cannot read: a FIFO, expected a regular file");
}

TEST(HostileIo, SizeLimit) {
  TempDir d;
  const auto p = d.write("big", std::string(2048, 'x'));
  EXPECT_EQ(error_of([&] { read_input_file(p, 1024); }),
            p + ": cannot read: 2048 bytes is more than the 1024 B an input file may have");
  EXPECT_EQ(read_input_file(p, 2048).size(), 2048u);
}

TEST(HostileTrace, NativeRanksWithoutEntriesAllocateNothing) {
  const auto msg = error_of([] {
    trace::parse_native(R"({"format": "trnsim-trace", "version": 1, "ranks": 2147483647,
                            "rank_ops": [{"rank": 0, "ops": []}]})",
                        "t.json");
  });
  EXPECT_EQ(msg, "t.json:/rank_ops: no entry for rank 1");
}

namespace {

// A gzip bomb: `mib` MiB of zeros, written in 1 MiB blocks at level 9.
bool write_gzipped_zeros(const std::string& path, int mib) {
  gzFile gz = gzopen(path.c_str(), "wb9");
  if (!gz) return false;
  const std::string block(1 << 20, '\0');
  for (int i = 0; i < mib; ++i) gzwrite(gz, block.data(), unsigned(block.size()));
  return gzclose(gz) == Z_OK;
}

}  // namespace

TEST(HostileTrace, GzipBombIsRefusedByItsInflatedSize) {
  // 64 MiB of zeros compress to 64 kB; with a 1 MiB limit the reader stops after 1 MiB.
  TempDir d;
  const auto path = d.path("bomb.0.et");
  ASSERT_TRUE(write_gzipped_zeros(path, 64));
  ASSERT_LT(fs::file_size(path), 1u << 20);
  trace::ChakraOptions o;
  o.max_file_bytes = 1 << 20;
  const auto msg = error_of([&] { trace::load_chakra(d.path("bomb"), o); });
  EXPECT_EQ(msg, path + ": decompresses to more than 1048576 bytes, the most a trace file may have");
}

TEST(HostileTrace, InflateLimitIsTheLeastOfLimitBudgetAndRatio) {
  const std::uint64_t gib4 = std::uint64_t(4) << 30;
  // A small file may always inflate to 64 MiB; a larger one to 256 times its size.
  EXPECT_EQ(trace::inflate_limit(1000, gib4).bytes, std::uint64_t(64) << 20);
  EXPECT_EQ(trace::inflate_limit(std::uint64_t(1) << 20, gib4).bytes, std::uint64_t(256) << 20);
  // The caller's limit when it is lower; never more than the memory budget.
  EXPECT_EQ(trace::inflate_limit(std::uint64_t(1) << 20, 1 << 20).bytes, std::uint64_t(1) << 20);
  EXPECT_EQ(trace::inflate_limit(std::uint64_t(1) << 30, UINT64_MAX).bytes,
            default_memory_budget());
  EXPECT_EQ(trace::inflate_limit(UINT64_MAX, gib4).bytes, std::min(gib4, default_memory_budget()));
}

// 320 MiB of zeros gzipped: with the default 4 GiB limit, both readers stop at 256 times the
// compressed size (about 84 MB, above the 64 MiB floor) instead of inflating it all.
TEST(HostileTrace, GzipBombIsRefusedEarlyByItsRatio) {
  TempDir d;
  const auto chakra = d.path("bomb.0.et");
  ASSERT_TRUE(write_gzipped_zeros(chakra, 320));
  const std::uint64_t packed = fs::file_size(chakra);
  ASSERT_GT(packed, 300000u);  // deflate's ratio on zeros is about 1030:1
  ASSERT_LT(packed, 360000u);
  const std::uint64_t most = 256 * packed;  // above the 64 MiB floor
  const std::string why = fmt::format(
      ": decompresses to more than {} bytes, 256 times its {} compressed bytes or 64 MiB, "
      "whichever is more: refused as a gzip bomb (traces compress far less)",
      most, packed);
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  EXPECT_EQ(error_of([&] { trace::load_chakra(d.path("bomb"), {}); }), chakra + why);
  const auto native = d.path("bomb.json.gz");
  fs::copy_file(chakra, native);
  EXPECT_EQ(error_of([&] { trace::load_native(native); }), native + why);
  ::getrusage(RUSAGE_SELF, &after);
  // What was held: the output up to the limit, in a string that grows by doubling (the 320 MiB
  // of the whole bomb would be over this). AddressSanitizer keeps freed memory in quarantine, so
  // the peak says nothing there.
#ifndef TRNSIM_TEST_ASAN
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 200 * 1024) << "kB";
#endif
}

TEST(HostileOutputDir, CommitIsAllOrNothingAndNamesTheReason) {
  TempDir d;
  const auto dir = d.path("out");
  {
    OutputDir o(dir);
    o.add("a.json", "1\n");
    o.add("b.json", "2\n");
    o.commit();
  }
  EXPECT_TRUE(fs::is_regular_file(dir + "/a.json"));
  EXPECT_TRUE(fs::is_regular_file(dir + "/b.json"));
  // A second result replaces the first as a whole.
  {
    OutputDir o(dir);
    o.add("a.json", "3\n");
    o.add("b.json", "4\n");
    o.commit();
  }
  std::string b;
  std::getline(std::ifstream(dir + "/b.json"), b);
  EXPECT_EQ(b, "4");
  // A directory holding a file a run does not write is not replaced (nor deleted).
  d.write("out/notes.txt", "mine");
  {
    OutputDir o(dir);
    o.add("a.json", "4\n");
    o.add("b.json", "5\n");
    EXPECT_EQ(error_of([&] { o.commit(); }),
              dir + ": cannot write results: the directory holds notes.txt, which a run does not "
                    "write; not replacing it");
  }
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
  // Only the directory remains beside the results: no temporaries.
  EXPECT_EQ(std::distance(fs::directory_iterator(d.path("")), fs::directory_iterator{}), 1);
  // Before anything is simulated, the same directory is refused for the same reason.
  EXPECT_EQ(error_of([&] { OutputDir::check_writable(dir, {"a.json", "b.json"}); }),
            dir + ": cannot write results: the directory holds notes.txt, which a run does not "
                  "write; not replacing it (give another --out)");
  // Missing parents are created, as `sweep --out` and `claims --out` create theirs; one that
  // cannot be (under a plain file) is reported with its reason.
  EXPECT_EQ(error_of([&] { OutputDir::check_writable(d.path("no/such/dir"), {}); }), "");
  EXPECT_TRUE(fs::is_directory(d.path("no/such")));
  std::ofstream(d.path("plain")) << "x";
  EXPECT_EQ(error_of([&] { OutputDir::check_writable(d.path("plain/sub/dir"), {}); }),
            d.path("plain/sub/dir") + ": cannot write results: cannot create the folder " +
                d.path("plain/sub") + ": Not a directory");
}

TEST(HostileOutputDir, WriteFileAtomicNamesTheReason) {
  TempDir d;
  EXPECT_EQ(error_of([&] { write_file_atomic(d.path(""), "x"); }),
            d.path("") + ": cannot write: is a directory");
  EXPECT_EQ(error_of([&] { write_file_atomic(d.path("no/x.json"), "x"); }),
            d.path("no/x.json") + ": cannot write: No such file or directory");
}
