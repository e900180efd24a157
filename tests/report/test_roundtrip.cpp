// SPDX-License-Identifier: MIT
// The bundled traces through Chakra and back (protobuf and JSON forms, with and without the
// embedded native ops): every op keeps its kind, sizes and dependencies.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>

#include "trnsim/trace/chakra.hpp"
#include "trnsim/trace/native.hpp"

namespace trnsim::trace {
namespace {

namespace fs = std::filesystem;

struct Form {
  const char* name;
  bool json, embed;
};

class RoundTrip : public ::testing::TestWithParam<std::tuple<const char*, Form>> {};

TEST_P(RoundTrip, KeepsKindsSizesAndDeps) {
  const auto [file, form] = GetParam();
  const Workload a = load_native(std::string(TRNSIM_SOURCE_DIR) + "/traces/" + file);
  const fs::path dir = fs::temp_directory_path() / fmt::format("trnsim-roundtrip-{}-{}", form.name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string prefix = (dir / "t").string();
  ChakraExportOptions o;
  o.embed_native = form.embed;
  if (form.json) {
    export_chakra_json(a, prefix, o);
  } else {
    export_chakra(a, prefix, o);
  }
  const Workload b = load_chakra(prefix);
  ASSERT_EQ(a.num_ranks(), b.num_ranks());
  EXPECT_EQ(a.groups, b.groups);
  for (int r = 0; r < a.num_ranks(); ++r) {
    const auto& x = a.ranks[std::size_t(r)].ops;
    const auto& y = b.ranks[std::size_t(r)].ops;
    ASSERT_EQ(x.size(), y.size()) << "rank " << r;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::string at = fmt::format("rank {} op {} ({})", r, x[i].id, x[i].name);
      EXPECT_EQ(x[i].id, y[i].id) << at;
      EXPECT_EQ(x[i].name, y[i].name) << at;
      EXPECT_EQ(x[i].deps, y[i].deps) << at;
      EXPECT_DOUBLE_EQ(op_flops(x[i]), op_flops(y[i])) << at;
      EXPECT_DOUBLE_EQ(comm_bytes(x[i]), comm_bytes(y[i])) << at;
      if (form.embed || !is_compute(x[i].kind)) {
        EXPECT_EQ(x[i].kind, y[i].kind) << at;
        EXPECT_EQ(x[i].group, y[i].group) << at;
        EXPECT_EQ(x[i].send_bytes, y[i].send_bytes) << at;
      } else {
        // Plain Chakra nodes carry compute as num_ops: matrix work is marked "M" and comes back
        // as a GEMM of the same FLOPs; other kinds come back element-wise, their name in op_type.
        const bool matrix = x[i].kind == OpKind::gemm || x[i].kind == OpKind::attention;
        ASSERT_TRUE(y[i].source_type.has_value()) << at;
        EXPECT_EQ(*y[i].source_type, matrix ? std::string("M") : std::string(kind_name(x[i].kind))) << at;
        EXPECT_EQ(y[i].kind, matrix ? OpKind::gemm : OpKind::elementwise) << at;
      }
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Bundled, RoundTrip,
    ::testing::Combine(::testing::Values("deepseek-v3-moe-144.json", "mixtral-moe-16.json"),
                       ::testing::Values(Form{"et", false, true}, Form{"et_plain", false, false},
                                         Form{"json", true, true}, Form{"json_plain", true, false})),
    [](const auto& p) {
      std::string n = std::string(std::get<0>(p.param)).substr(0, 8) + "_" + std::get<1>(p.param).name;
      for (char& c : n) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return n;
    });

}  // namespace
}  // namespace trnsim::trace
