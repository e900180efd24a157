// SPDX-License-Identifier: MIT
// The config loader: extends, --set, units, unknown keys and every class of bad input, with the
// file and JSON pointer in each message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trnsim/config/config.hpp"

using namespace trnsim;
using namespace trnsim::config;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("trnsim-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

// The message of the ConfigError thrown by f, or "" when nothing was thrown.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const std::string kTrn3 = std::string(TRNSIM_SOURCE_DIR) + "/configs/chips/trn3.json";
const std::string kGen2 = std::string(TRNSIM_SOURCE_DIR) + "/configs/racks/trn3-gen2-ultraserver.json";

}  // namespace

TEST(Config, ChipPresetResolvesWithUnits) {
  const auto c = load_config(kTrn3).config;
  ASSERT_TRUE(c.chip);
  EXPECT_EQ(c.chip->cores, 8);
  EXPECT_EQ(c.chip->hbm.stacks, 4);
  EXPECT_DOUBLE_EQ(c.chip->hbm.bandwidth.si, 4.9e12);
  EXPECT_DOUBLE_EQ(c.chip->hbm.capacity_per_stack.si * c.chip->hbm.stacks,
                   144.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(c.chip->core.tensor.clock.si, 2.4e9);
  EXPECT_DOUBLE_EQ(c.chip->core.sbuf.bytes_per_partition.si * c.chip->core.sbuf.partitions,
                   32.0 * 1048576.0);
}

TEST(Config, RackPresetExtendsChip) {
  const auto c = load_config(kGen2).config;
  ASSERT_TRUE(c.chip);
  ASSERT_TRUE(c.rack);
  EXPECT_EQ(c.chip->name, "Trainium3");
  EXPECT_TRUE(c.rack->topology.two_level.has_value());
}

TEST(Config, SetOverridesAnyFieldBothSyntaxes) {
  auto c = load_config(kTrn3, {"chip.hbm.bandwidth=4.7TB/s", "/chip/hbm/stacks=2"}).config;
  EXPECT_DOUBLE_EQ(c.chip->hbm.bandwidth.si, 4.7e12);
  EXPECT_EQ(c.chip->hbm.stacks, 2);
}

TEST(Config, ResolvedConfigRoundTrips) {
  const auto a = load_config(kGen2);
  const Json j = to_json(a.config);
  TempDir d;
  const auto path = d.write("resolved.json", j.dump(2));
  const auto b = load_config(path);
  EXPECT_EQ(to_json(b.config).dump(), j.dump());
}

TEST(Config, ExtendsMergesObjectsAndOverridesScalars) {
  TempDir d;
  d.write("base.json", R"({"name": "base", "description": "b", "sim": {"seed": 7}})");
  const auto p = d.write("top.json", R"({"extends": "base.json", "name": "top"})");
  const auto c = load_config(p).config;
  EXPECT_EQ(c.name, "top");
  EXPECT_EQ(c.description, "b");
  EXPECT_EQ(c.sim.seed, 7u);
}

TEST(Config, UnknownKeySuggestsNearest) {
  TempDir d;
  const auto p = d.write("x.json", R"({"sim": {"sed": 3}})");
  const auto msg = error_of([&] { load_config(p); });
  EXPECT_NE(msg.find("x.json:/sim/sed: unknown key \"sed\"; did you mean \"seed\"?"),
            std::string::npos)
      << msg;
}

TEST(Config, MisspeltChipKeyNamesPointerAndSuggestion) {
  const auto msg = error_of([&] { load_config(kTrn3, {"chip.hbm.stack=4"}); });
  EXPECT_NE(msg.find("--set chip.hbm.stack:/chip/hbm/stack: unknown key \"stack\"; did you mean "
                     "\"stacks\"?"),
            std::string::npos)
      << msg;
}

TEST(Config, WrongTypeNamesFilePointerAndExpectation) {
  TempDir d;
  const auto p = d.write("x.json", R"({"extends": ")" + kTrn3 +
                                        R"(", "chip": {"hbm": {"stacks": "four"}}})");
  const auto msg = error_of([&] { load_config(p); });
  EXPECT_NE(msg.find("x.json:/chip/hbm/stacks: expected an integer in [1, 64], got \"four\""),
            std::string::npos)
      << msg;
}

TEST(Config, BareNumberWhereUnitRequired) {
  const auto msg = error_of([&] { load_config(kTrn3, {"chip.tdp=700"}); });
  EXPECT_NE(msg.find("/chip/tdp: expected a power such as \"700W\" (a string with a unit), got 700"),
            std::string::npos)
      << msg;
}

TEST(Config, BadUnit) {
  const auto msg = error_of([&] { load_config(kTrn3, {"chip.hbm.bandwidth=4.9TB"}); });
  EXPECT_NE(msg.find("/chip/hbm/bandwidth: expected a bandwidth such as \"4.9TB/s\": unknown unit "
                     "\"TB\""),
            std::string::npos)
      << msg;
}

TEST(Config, RangeViolation) {
  const auto msg = error_of([&] { load_config(kTrn3, {"chip.hbm.stacks=0"}); });
  EXPECT_NE(msg.find("/chip/hbm/stacks: expected an integer in [1, 64], got 0"), std::string::npos)
      << msg;
}

TEST(Config, MissingRequiredKey) {
  TempDir d;
  const auto p = d.write("x.json", R"({"chip": {"name": "x"}})");
  const auto msg = error_of([&] { load_config(p); });
  EXPECT_NE(msg.find("x.json:/chip/core_version: missing required key"), std::string::npos) << msg;
}

TEST(Config, MissingFile) {
  const auto msg = error_of([&] { load_config("/nonexistent/trnsim.json"); });
  EXPECT_EQ(msg, "/nonexistent/trnsim.json: no such file");
}

TEST(Config, MissingExtendsTarget) {
  TempDir d;
  const auto p = d.write("x.json", R"({"extends": "nope.json"})");
  const auto msg = error_of([&] { load_config(p); });
  EXPECT_NE(msg.find("nope.json: no such file"), std::string::npos) << msg;
}

TEST(Config, CyclicExtends) {
  TempDir d;
  d.write("a.json", R"({"extends": "b.json"})");
  d.write("b.json", R"({"extends": "a.json"})");
  const auto msg = error_of([&] { load_config(d.write("c.json", R"({"extends": "a.json"})")); });
  EXPECT_NE(msg.find("cyclic extends"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a.json -> "), std::string::npos) << msg;
}

TEST(Config, InvalidJsonGivesLineAndColumn) {
  TempDir d;
  const auto p = d.write("x.json", "{\n  \"name\": \"a\",\n  oops\n}");
  const auto msg = error_of([&] { load_config(p); });
  EXPECT_NE(msg.find("x.json:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
}

TEST(Config, TopLevelMustBeObject) {
  TempDir d;
  const auto msg = error_of([&] { load_config(d.write("x.json", "[1,2]")); });
  EXPECT_NE(msg.find("x.json:/: expected a JSON object"), std::string::npos) << msg;
}

TEST(Config, MalformedSet) {
  EXPECT_NE(error_of([&] { load_config(kTrn3, {"chip.hbm.stacks"}); }).find("expected path=value"),
            std::string::npos);
}

TEST(Config, EnumValueSuggestsNearest) {
  const auto msg = error_of([&] { load_config(kTrn3, {"chip.hbm.page_policy=opne"}); });
  EXPECT_NE(msg.find("expected one of \"open\", \"closed\", got \"opne\" (did you mean \"open\"?)"),
            std::string::npos)
      << msg;
}

TEST(Config, SchemaListsEveryFieldWithDefaults) {
  const auto fields = schema_fields();
  bool saw_stacks = false, saw_seed = false;
  for (const auto& f : fields) {
    if (f.pointer == "/chip/hbm/stacks") {
      saw_stacks = true;
      EXPECT_EQ(f.default_value, "4");
    }
    if (f.pointer == "/sim/seed") saw_seed = true;
  }
  EXPECT_TRUE(saw_stacks);
  EXPECT_TRUE(saw_seed);
}
