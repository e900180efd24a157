// SPDX-License-Identifier: MIT
// Chakra .et reader and exporter: every third-party trace in ../shared/traces, small files
// built here with our own protobuf classes, gzip, and the export round trip.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "../common/files.hpp"

#include "chakra_et.pb.h"
#include "trnsim/error.hpp"
#include "trnsim/trace/chakra.hpp"
#include "trnsim/trace/native.hpp"
#include "trnsim/trace/pytorch_et.hpp"
#include "trnsim/trace/torch_ops.hpp"

using namespace trnsim;
using namespace trnsim::trace;
namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

namespace {

const std::string kShared = std::string(TRNSIM_SOURCE_DIR) + "/../shared/traces/";

fs::path scratch(const std::string& name) {
  return trnsim::test::fresh_dir("chakra", name);
}

std::map<OpKind, int> kinds(const RankTrace& r) {
  std::map<OpKind, int> out;
  for (const auto& op : r.ops) ++out[op.kind];
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& data) {
  std::ofstream(p, std::ios::binary) << data;
}

std::string gzip(const std::string& in) {
  z_stream zs{};
  deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, in.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// Builds one rank file message by message.
class EtFile {
 public:
  EtFile() {
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    add(meta.SerializeAsString());
  }
  pb::Node& node(std::uint64_t id, pb::NodeType type, const std::string& name = "") {
    nodes_.emplace_back();
    nodes_.back().set_id(id);
    nodes_.back().set_type(type);
    nodes_.back().set_name(name.empty() ? fmt::format("n{}", id) : name);
    return nodes_.back();
  }
  std::string bytes() {
    std::string out = data_;
    for (const auto& n : nodes_) frame(out, n.SerializeAsString());
    return out;
  }
  void save(const fs::path& p, bool compress = false) {
    write_all(p, compress ? gzip(bytes()) : bytes());
  }

 private:
  static void frame(std::string& out, const std::string& msg) {
    std::uint64_t v = msg.size();
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
    out += msg;
  }
  void add(const std::string& msg) { frame(data_, msg); }
  std::string data_;
  std::vector<pb::Node> nodes_;
};

pb::AttributeProto* attr(pb::Node& n, const std::string& name) {
  auto* a = n.add_attr();
  a->set_name(name);
  return a;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- the shared third-party traces ---------------------------------------------------------------

TEST(ChakraShared, AstraSimMicrobenchmarks) {
  const std::map<std::string, OpKind> expected = {{"all_reduce", OpKind::all_reduce},
                                                  {"all_gather", OpKind::all_gather},
                                                  {"reduce_scatter", OpKind::reduce_scatter},
                                                  {"all_to_all", OpKind::all_to_all}};
  for (const auto& [coll, kind] : expected) {
    for (int npus : {4, 8, 16}) {
      SCOPED_TRACE(fmt::format("{} {}", coll, npus));
      const auto prefix =
          fmt::format("{}astra-sim/microbenchmarks/{}/{}npus_1MB/{}", kShared, coll, npus, coll);
      const Workload w = load_chakra(prefix);
      ASSERT_EQ(w.num_ranks(), npus);
      // ASTRA-sim's microbenchmarks say nothing about their units (GlobalMetadata is only
      // version "0.0.4"): read as bytes, but not silently; the warning gives both readings.
      ASSERT_EQ(w.warnings.size(), 1u);
      EXPECT_NE(w.warnings[0].find("cannot be told"), std::string::npos);
      EXPECT_NE(w.warnings[0].find(fmt::format("read as bytes and FLOPs ({} B moved",
                                               npus * (kind == OpKind::all_gather ? npus : 1) *
                                                   1048576)),
                std::string::npos)
          << w.warnings[0];
      EXPECT_NE(w.units.find("not detected"), std::string::npos);
      ASSERT_EQ(w.groups.size(), 1u);
      EXPECT_EQ(w.groups.at("world").size(), static_cast<std::size_t>(npus));
      EXPECT_EQ(w.metadata["chakra_version"], "0.0.4");
      for (const auto& r : w.ranks) {
        ASSERT_EQ(r.ops.size(), 1u);
        EXPECT_EQ(r.ops[0].kind, kind);
        // ASTRA-sim's all-gather comm_size is each rank's input: trnsim's size is the output.
        EXPECT_EQ(r.ops[0].bytes, kind == OpKind::all_gather ? 1048576u * unsigned(npus) : 1048576u);
        EXPECT_EQ(r.ops[0].group, "world");
      }
    }
  }
}

TEST(ChakraShared, CustomRingAllReduceSendRecvIgnoresCommType) {
  const Workload w = load_chakra(kShared + "astra-sim/custom_ring_allreduce/custom_allreduce");
  ASSERT_EQ(w.num_ranks(), 8);
  EXPECT_TRUE(w.warnings.empty());
  EXPECT_TRUE(w.groups.empty());  // no collective, so no world group either
  for (const auto& r : w.ranks) {
    SCOPED_TRACE(r.rank);
    const auto k = kinds(r);
    EXPECT_EQ(k.at(OpKind::send), 14);
    EXPECT_EQ(k.at(OpKind::recv), 14);
    EXPECT_EQ(k.at(OpKind::delay), 7);
    EXPECT_EQ(r.ops.size(), 35u);
    for (const auto& op : r.ops) {
      if (op.kind == OpKind::send) {
        EXPECT_EQ(op.peer, (r.rank + 1) % 8);
        EXPECT_EQ(op.bytes, 131072u);  // 1 MiB in 8 chunks
      } else if (op.kind == OpKind::recv) {
        EXPECT_EQ(op.peer, (r.rank + 7) % 8);
      } else {
        EXPECT_DOUBLE_EQ(op.duration.si, 7e-6);
      }
    }
  }
}

TEST(ChakraShared, PyTorchTraceLoadsWithWarnings) {
  const Workload w = load_chakra(kShared + "chakra/chakra");
  ASSERT_EQ(w.num_ranks(), 1);
  const auto& r = w.ranks[0];
  EXPECT_EQ(r.ops.size(), 3664u);
  const auto k = kinds(r);
  EXPECT_EQ(k.at(OpKind::all_reduce), 5);
  EXPECT_EQ(k.at(OpKind::broadcast), 2);
  // The GPU collective kernels in file order (the README's "8.2-31.5 MB"); the host-side c10d
  // nodes and the CPU ops take no time.
  std::vector<std::uint64_t> reduce, bcast;
  for (const auto& op : r.ops) {
    if (op.kind == OpKind::all_reduce) reduce.push_back(op.bytes);
    if (op.kind == OpKind::broadcast) bcast.push_back(op.bytes);
  }
  EXPECT_EQ(reduce, (std::vector<std::uint64_t>{8196000, 31502336, 26255360, 26550272, 9724160}));
  EXPECT_EQ(bcast, (std::vector<std::uint64_t>{212480, 424}));
  ASSERT_EQ(w.warnings.size(), 3u);
  EXPECT_NE(w.warnings[0].find("1277 dependencies name nodes that are not in the file"),
            std::string::npos);
  EXPECT_NE(w.warnings[1].find("383 nodes depend on themselves"), std::string::npos);
  EXPECT_NE(w.warnings[2].find("554 dependency cycles broken"), std::string::npos);
  EXPECT_EQ(topological_order(r).size(), 3664u);
}

TEST(ChakraShared, MoeGeneratedWithProcessGroups) {
  ChakraOptions o;
  o.size_unit = ChakraOptions::SizeUnit::elements;
  o.element_bytes = 2;
  o.num_ops_unit = ChakraOptions::NumOpsUnit::macs;
  const Workload w = load_chakra(kShared + "moe-generated/mixtral_like_dp2_tp2_ep4/workload", o);
  ASSERT_EQ(w.num_ranks(), 16);
  EXPECT_TRUE(w.warnings.empty());
  EXPECT_EQ(w.groups.size(), 36u);  // workload.json, found next to the rank files
  EXPECT_EQ(w.groups.at("33"), (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(w.metadata["chakra_schema"], "symbolic_tensor_network");
  for (const auto& r : w.ranks) {
    SCOPED_TRACE(r.rank);
    ASSERT_EQ(r.ops.size(), 190u);
    const auto k = kinds(r);
    EXPECT_EQ(k.at(OpKind::elementwise), 92);
    EXPECT_EQ(k.at(OpKind::gemm), 48);  // matmuls (op_type "M") as GEMMs of the same work
    EXPECT_EQ(k.at(OpKind::all_gather), 24);
    EXPECT_EQ(k.at(OpKind::reduce_scatter), 12);
    EXPECT_EQ(k.at(OpKind::all_to_all), 8);
    EXPECT_EQ(k.at(OpKind::all_reduce), 6);
  }
  // Rank 0, node 8 (mb0.transformer.0.mha.qkv@0_X1COMM): ALL_GATHER of 33,554,432 elements on
  // pg "9"; node 9's predecessor node 2: num_ops 167,772,160 MACs, tensor_size 33,554,432.
  const auto idx = index_by_id(w.ranks[0]);
  const Op& ag = w.ranks[0].ops[idx.at(8)];
  EXPECT_EQ(ag.kind, OpKind::all_gather);
  EXPECT_EQ(ag.group, "9");
  // comm_size is the rank's input: the gathered output is that times the group's ranks
  EXPECT_EQ(ag.bytes, 33554432u * 2 * w.groups.at("9").size());
  const Op& norm = w.ranks[0].ops[idx.at(2)];
  EXPECT_EQ(norm.kind, OpKind::elementwise);
  EXPECT_EQ(norm.source_type, "E");
  EXPECT_EQ(norm.flops, 167772160.0 * 2);
  EXPECT_EQ(norm.tensor_bytes, 33554432u * 2);
}

// ---- small files built here ----------------------------------------------------------------------

TEST(Chakra, EveryIntegerAttributeKindIsRead) {
  using Set = std::function<void(pb::AttributeProto*, std::int64_t)>;
  const std::vector<std::pair<std::string, Set>> setters = {
      {"int32", [](auto* a, auto v) { a->set_int32_val(static_cast<std::int32_t>(v)); }},
      {"int64", [](auto* a, auto v) { a->set_int64_val(v); }},
      {"uint32", [](auto* a, auto v) { a->set_uint32_val(static_cast<std::uint32_t>(v)); }},
      {"uint64", [](auto* a, auto v) { a->set_uint64_val(static_cast<std::uint64_t>(v)); }},
      {"sint32", [](auto* a, auto v) { a->set_sint32_val(static_cast<std::int32_t>(v)); }},
      {"sint64", [](auto* a, auto v) { a->set_sint64_val(v); }},
      {"fixed32", [](auto* a, auto v) { a->set_fixed32_val(static_cast<std::uint32_t>(v)); }},
      {"fixed64", [](auto* a, auto v) { a->set_fixed64_val(static_cast<std::uint64_t>(v)); }},
      {"sfixed32", [](auto* a, auto v) { a->set_sfixed32_val(static_cast<std::int32_t>(v)); }},
      {"sfixed64", [](auto* a, auto v) { a->set_sfixed64_val(v); }},
      {"double", [](auto* a, auto v) { a->set_double_val(static_cast<double>(v)); }},
  };
  for (const auto& [kind, set] : setters) {
    SCOPED_TRACE(kind);
    const auto dir = scratch("int_" + kind);
    for (int r = 0; r < 2; ++r) {
      EtFile f;
      auto& n = f.node(1, pb::COMM_COLL_NODE);
      set(attr(n, "comm_type"), pb::BROADCAST);
      set(attr(n, "comm_size"), 1000 + 7);
      set(attr(n, "trnsim_root"), 1);
      auto& s = f.node(2, pb::COMM_SEND_NODE);
      set(attr(s, "comm_dst"), 1 - r);
      set(attr(s, "comm_size"), 5);
      set(attr(s, "comm_tag"), 3);
      auto& v = f.node(3, pb::COMM_RECV_NODE);
      set(attr(v, "comm_src"), 1 - r);
      set(attr(v, "comm_size"), 5);
      set(attr(v, "comm_tag"), 3);
      f.save(dir / (fmt::format("t.{}.et", r)));
    }
    const Workload w = load_chakra((dir / "t").string());
    for (const auto& rank : w.ranks) {
      EXPECT_EQ(rank.ops[0].kind, OpKind::broadcast);
      EXPECT_EQ(rank.ops[0].bytes, 1007u);
      EXPECT_EQ(rank.ops[0].root, 1);
      EXPECT_EQ(rank.ops[1].peer, 1 - rank.rank);
      EXPECT_EQ(rank.ops[1].tag, 3);
    }
  }
  // bool (is_cpu_op true makes a COMP a zero-time op) and a list kind for each integer list
  const auto dir = scratch("bool_list");
  EtFile f;
  auto& cpu = f.node(1, pb::COMP_NODE);
  cpu.set_duration_micros(50);
  attr(cpu, "is_cpu_op")->set_bool_val(true);
  auto& gpu = f.node(2, pb::COMP_NODE);
  gpu.set_duration_micros(50);
  attr(gpu, "is_cpu_op")->set_int32_val(0);
  auto& a2a = f.node(3, pb::COMM_COLL_NODE);
  attr(a2a, "comm_type")->set_uint32_val(pb::ALL_TO_ALL);
  attr(a2a, "comm_size")->set_int64_val(30);
  attr(a2a, "trnsim_send_bytes")->mutable_sfixed64_list()->add_values(30);
  auto& a2b = f.node(4, pb::COMM_COLL_NODE);
  attr(a2b, "comm_type")->set_uint32_val(pb::ALL_TO_ALL);
  attr(a2b, "comm_size")->set_int64_val(30);
  attr(a2b, "trnsim_send_bytes")->mutable_uint32_list()->add_values(31);
  f.save(dir / "b.0.et");
  const Workload w = load_chakra((dir / "b").string());
  const auto& ops = w.ranks[0].ops;
  EXPECT_EQ(ops[0].kind, OpKind::delay);
  EXPECT_EQ(ops[0].duration.si, 0.0);
  EXPECT_DOUBLE_EQ(ops[1].duration.si, 50e-6);
  EXPECT_EQ(ops[2].kind, OpKind::all_to_all_v);
  EXPECT_EQ(ops[2].send_bytes, (std::vector<std::uint64_t>{30}));
  EXPECT_EQ(ops[3].send_bytes, (std::vector<std::uint64_t>{31}));
}

TEST(Chakra, GzipAndPlainReadTheSame) {
  const auto dir = scratch("gzip");
  const std::string src = kShared + "astra-sim/custom_ring_allreduce/custom_allreduce";
  for (int r = 0; r < 8; ++r) {
    const std::string data = read_all(fmt::format("{}.{}.et", src, r));
    // odd ranks compressed, even ranks plain: detection is per file
    write_all(dir / (fmt::format("mixed.{}.et", r)), r % 2 ? gzip(data) : data);
  }
  const Workload plain = load_chakra(src);
  const Workload mixed = load_chakra((dir / "mixed").string());
  EXPECT_EQ(write_native(mixed).substr(write_native(mixed).find("\"ranks\"")),
            write_native(plain).substr(write_native(plain).find("\"ranks\"")));
  // a truncated gzip stream is an error, not a silent short read
  const std::string gz = read_all(dir / "mixed.1.et");
  write_all(dir / "mixed.1.et", gz.substr(0, gz.size() / 2));
  EXPECT_NE(error_of([&] { load_chakra((dir / "mixed").string()); })
                .find("mixed.1.et: cannot decompress gzip: the compressed data ends early"),
            std::string::npos);
}

TEST(Chakra, ToleratesAbsentSelfAndForwardDependencies) {
  const auto dir = scratch("deps");
  EtFile f;
  auto& a = f.node(10, pb::COMP_NODE);  // depends on a later node: fine
  a.add_data_deps(11);
  a.add_ctrl_deps(99);  // absent
  a.set_duration_micros(1);
  auto& b = f.node(11, pb::COMP_NODE);
  b.add_ctrl_deps(11);  // itself
  b.add_data_deps(98);  // absent
  f.save(dir / "d.0.et");
  const Workload w = load_chakra((dir / "d").string());
  ASSERT_EQ(w.warnings.size(), 2u);
  EXPECT_NE(w.warnings[0].find("d.0.et: 2 dependencies name nodes that are not in the file "
                               "(dropped), e.g. node 10 -> 99, node 11 -> 98"),
            std::string::npos)
      << w.warnings[0];
  EXPECT_NE(w.warnings[1].find("1 nodes depend on themselves (dropped), e.g. node 11"),
            std::string::npos)
      << w.warnings[1];
  EXPECT_EQ(w.ranks[0].ops[0].deps, (std::vector<OpId>{11}));
  EXPECT_TRUE(w.ranks[0].ops[1].deps.empty());
  EXPECT_EQ(topological_order(w.ranks[0]), (std::vector<std::size_t>{1, 0}));
}

TEST(Chakra, BreaksCyclesControlEdgesFirst) {
  const auto dir = scratch("cycles");
  EtFile f;
  // 1 <-> 2 by data edges only: the edge to the later node (1 needs 2) goes.
  f.node(1, pb::COMP_NODE).add_data_deps(2);
  f.node(2, pb::COMP_NODE).add_data_deps(1);
  // 3 -> 4 -> 5 -> 3 where 4 needs 3 only through ctrl_deps: that edge goes, although the data
  // edge 3 -> 5 points to a later node.
  f.node(3, pb::COMP_NODE).add_data_deps(5);
  f.node(4, pb::COMP_NODE).add_ctrl_deps(3);
  f.node(5, pb::COMP_NODE).add_data_deps(4);
  f.save(dir / "c.0.et");
  const Workload w = load_chakra((dir / "c").string());
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("c.0.et: 2 dependency cycles broken by dropping one edge each "
                               "(control edges and edges to later nodes first), e.g. node 1 -> 2 "
                               "(data), node 4 -> 3 (ctrl)"),
            std::string::npos)
      << w.warnings[0];
  const auto& ops = w.ranks[0].ops;
  EXPECT_TRUE(ops[0].deps.empty());
  EXPECT_EQ(ops[1].deps, (std::vector<OpId>{1}));
  EXPECT_EQ(ops[2].deps, (std::vector<OpId>{5}));
  EXPECT_TRUE(ops[3].deps.empty());
  EXPECT_EQ(ops[4].deps, (std::vector<OpId>{4}));
}

TEST(Chakra, SizeUnitsAndNumOpsUnits) {
  const auto dir = scratch("units");
  EtFile f;
  auto& c = f.node(1, pb::COMP_NODE);
  attr(c, "num_ops")->set_int64_val(1000);
  attr(c, "tensor_size")->set_uint64_val(10);
  auto& m = f.node(2, pb::MEM_LOAD_NODE);
  attr(m, "tensor_size")->set_uint64_val(10);
  auto& ar = f.node(3, pb::COMM_COLL_NODE);
  attr(ar, "comm_type")->set_int64_val(pb::ALL_REDUCE);
  attr(ar, "comm_size")->set_int64_val(10);
  f.save(dir / "u.0.et");
  const Workload bytes = load_chakra((dir / "u").string());
  EXPECT_EQ(bytes.ranks[0].ops[0].flops, 1000.0);
  EXPECT_EQ(bytes.ranks[0].ops[0].tensor_bytes, 10u);
  EXPECT_EQ(bytes.ranks[0].ops[1].bytes, 10u);
  EXPECT_EQ(bytes.ranks[0].ops[2].bytes, 10u);
  ChakraOptions o;
  o.size_unit = ChakraOptions::SizeUnit::elements;
  o.element_bytes = 4;
  o.num_ops_unit = ChakraOptions::NumOpsUnit::macs;
  o.dtype = DType::fp32;
  const Workload el = load_chakra((dir / "u").string(), o);
  EXPECT_EQ(el.ranks[0].ops[0].flops, 2000.0);
  EXPECT_EQ(el.ranks[0].ops[0].tensor_bytes, 40u);
  EXPECT_EQ(el.ranks[0].ops[0].dtype, DType::fp32);
  EXPECT_EQ(el.ranks[0].ops[1].bytes, 40u);
  EXPECT_EQ(el.ranks[0].ops[2].bytes, 40u);
  EXPECT_EQ(el.ranks[0].ops[2].dtype, DType::fp32);
}

// Four rank files PREFIX.<r>.et, each one collective node 1 on group "even" or "odd".
void save_even_odd(const fs::path& dir, const std::string& prefix, pb::CollectiveCommType type,
                   std::int64_t size) {
  for (int r = 0; r < 4; ++r) {
    EtFile f;
    auto& n = f.node(1, pb::COMM_COLL_NODE);
    attr(n, "comm_type")->set_int64_val(type);
    attr(n, "comm_size")->set_int64_val(size);
    attr(n, "pg_name")->set_string_val(r % 2 ? "odd" : "even");
    f.save(dir / (fmt::format("{}.{}.et", prefix, r)));
  }
}

// ALL_GATHER comm_size: each rank's input by default (ASTRA-sim), the gathered output on request.
TEST(Chakra, AllGatherSizeConventions) {
  const auto dir = scratch("ag");
  save_even_odd(dir, "g", pb::ALL_GATHER, 1000);
  write_all(dir / "g.json", R"({"even": [0, 2], "odd": [1, 3]})");
  const Workload in = load_chakra((dir / "g").string());
  EXPECT_EQ(in.ranks[0].ops[0].bytes, 2000u);  // 1000 from each of the group's 2 ranks
  ChakraOptions o;
  o.all_gather_size = ChakraOptions::AllGatherSize::output;
  const Workload out = load_chakra((dir / "g").string(), o);
  EXPECT_EQ(out.ranks[0].ops[0].bytes, 1000u);
}

// A matmul's dtype: the option, else the node's dtype attribute, else the default dtype.
TEST(Chakra, MatmulDtypeFromTheOptionOrTheTrace) {
  const auto dir = scratch("mm");
  EtFile f;
  auto& a = f.node(1, pb::COMP_NODE);
  attr(a, "num_ops")->set_int64_val(1000);
  attr(a, "op_type")->set_string_val("M");
  attr(a, "dtype")->set_string_val("fp8");
  auto& b = f.node(2, pb::COMP_NODE);
  attr(b, "num_ops")->set_int64_val(1000);
  attr(b, "op_type")->set_string_val("M");
  auto& e = f.node(3, pb::COMP_NODE);
  attr(e, "num_ops")->set_int64_val(1000);
  attr(e, "op_type")->set_string_val("E");
  attr(e, "dtype")->set_string_val("fp8");
  f.save(dir / "m.0.et");
  const Workload d = load_chakra((dir / "m").string());
  EXPECT_EQ(d.ranks[0].ops[0].dtype, DType::fp8);   // from the attribute
  EXPECT_EQ(d.ranks[0].ops[1].dtype, DType::bf16);  // none: the default
  EXPECT_EQ(d.ranks[0].ops[2].dtype, DType::bf16);  // not a matmul
  ChakraOptions o;
  o.matmul_dtype = DType::mxfp8;
  const Workload m = load_chakra((dir / "m").string(), o);
  EXPECT_EQ(m.ranks[0].ops[0].dtype, DType::mxfp8);
  EXPECT_EQ(m.ranks[0].ops[1].dtype, DType::mxfp8);
  EXPECT_EQ(m.ranks[0].ops[2].dtype, DType::bf16);
  // A dtype the reader does not know names the node.
  EtFile bad;
  auto& x = bad.node(4, pb::COMP_NODE);
  attr(x, "num_ops")->set_int64_val(1);
  attr(x, "op_type")->set_string_val("M");
  attr(x, "dtype")->set_string_val("int3");
  bad.save(dir / "b.0.et");
  EXPECT_NE(error_of([&] { load_chakra((dir / "b").string()); }).find("node 4 (n4): attribute \"dtype\""),
            std::string::npos);
}

TEST(Chakra, ProcessGroups) {
  const auto dir = scratch("pg");
  save_even_odd(dir, "p", pb::ALL_REDUCE, 64);
  // Without a process-group file: pg_names fall back to the world group, with a warning. (Units
  // given: this file says nothing that fixes them.)
  ChakraOptions bytes;
  bytes.size_unit = ChakraOptions::SizeUnit::bytes;
  const Workload world = load_chakra((dir / "p").string(), bytes);
  EXPECT_EQ(world.groups.at("world"), (std::vector<int>{0, 1, 2, 3}));
  ASSERT_EQ(world.warnings.size(), 2u);
  EXPECT_NE(world.warnings[0].find("pg_name \"even\" is used but there is no process-group file"),
            std::string::npos);
  // With one given explicitly.
  write_all(dir / "groups.json", R"({"even": [0, 2], "odd": [1, 3]})");
  ChakraOptions o = bytes;
  o.process_groups = (dir / "groups.json").string();
  const Workload w = load_chakra((dir / "p").string(), o);
  EXPECT_TRUE(w.warnings.empty());
  EXPECT_EQ(w.groups.size(), 2u);
  EXPECT_EQ(w.ranks[1].ops[0].group, "odd");
  // A pg_name the file does not define, and a file naming absent ranks.
  write_all(dir / "groups.json", R"({"even": [0, 2], "odd": [1, 3, 4]})");
  EXPECT_NE(error_of([&] { load_chakra((dir / "p").string(), o); })
                .find("group \"odd\" names rank 4, but only 4 rank files"),
            std::string::npos);
  write_all(dir / "groups.json", R"({"even": [0, 2]})");
  EXPECT_NE(error_of([&] { load_chakra((dir / "p").string(), o); })
                .find("p.1.et: node 1 (n1): pg_name \"odd\" is not in the process-group file"),
            std::string::npos);
  // Membership is checked like in native traces.
  write_all(dir / "groups.json", R"({"even": [0, 1], "odd": [2, 3]})");
  EXPECT_NE(error_of([&] { load_chakra((dir / "p").string(), o); })
                .find("p.1.et: node 1 (n1): rank 1 is not a member of group \"odd\""),
            std::string::npos);
}

TEST(Chakra, Errors) {
  EXPECT_NE(error_of([&] { load_chakra("/nonexistent/x"); })
                .find("/nonexistent/x: no Chakra trace found (expected /nonexistent/x.0.et)"),
            std::string::npos);
  const auto dir = scratch("errors");
  {
    EtFile f;
    attr(f.node(1, pb::COMM_COLL_NODE), "comm_size")->set_int64_val(1);
    f.save(dir / "nt.0.et");
  }
  EXPECT_EQ(error_of([&] { load_chakra((dir / "nt").string()); }),
            (dir / "nt.0.et").string() + ": node 1 (n1): COMM_COLL node without comm_type");
  {
    EtFile f;
    auto& n = f.node(1, pb::COMM_COLL_NODE);
    attr(n, "comm_type")->set_int64_val(pb::REDUCE);
    attr(n, "comm_size")->set_int64_val(1);
    f.save(dir / "red.0.et");
  }
  EXPECT_NE(error_of([&] { load_chakra((dir / "red").string()); })
                .find("node 1 (n1): collective type 1 (REDUCE) has no trnsim equivalent"),
            std::string::npos);
  {
    EtFile f;
    auto& n = f.node(1, pb::COMM_COLL_NODE);
    attr(n, "comm_type")->set_int64_val(pb::ALL_REDUCE);
    attr(n, "comm_size")->set_string_val("1MB");
    f.save(dir / "str.0.et");
  }
  EXPECT_NE(error_of([&] { load_chakra((dir / "str").string()); })
                .find("node 1 (n1): attribute \"comm_size\" should be an integer, got a string"),
            std::string::npos);
  {
    EtFile f;
    f.node(1, pb::COMP_NODE).set_duration_micros(3);
    const std::string bytes = f.bytes();
    write_all(dir / "cut.0.et", bytes.substr(0, bytes.size() - 2));
  }
  EXPECT_NE(error_of([&] { load_chakra((dir / "cut").string()); }).find("(truncated file?)"),
            std::string::npos);
}

// ---- export ------------------------------------------------------------------------------------

namespace {
// Everything the native format can say, on three ranks.
Workload rich_workload() {
  const char* text = R"({"format": "trnsim-trace", "version": 1, "name": "rt",
    "metadata": {"generator": "test", "seed": 7}, "ranks": 3,
    "groups": {"world": [0, 1, 2], "pair": [2, 0]},
    "rank_ops": [
      {"rank": 0, "ops": [
        {"id": 0, "name": "qkv", "op": "gemm", "m": 64, "k": 128, "n": 32, "dtype": "mxfp8", "batch": 2},
        {"id": 1, "op": "attention", "batch": 1, "heads": 2, "seq_q": 16, "seq_kv": 16,
         "head_dim": 8, "dtype": "bf16", "causal": true, "deps": [0]},
        {"id": 2, "op": "delay", "duration": "12.5ns", "deps": [1]},
        {"id": 3, "op": "all_to_all_v", "group": "pair", "send_bytes": [5, 6], "deps": [2]},
        {"id": 4, "op": "send", "peer": 1, "bytes": 64, "tag": 9},
        {"id": 5, "op": "broadcast", "group": "world", "bytes": 100, "root": 2},
        {"id": 6, "op": "mem_store", "bytes": 4096, "deps": [5, 3]},
        {"id": 7, "op": "reduce_scatter", "group": "pair", "bytes": 8, "dtype": "fp16"}
      ]},
      {"rank": 1, "ops": [
        {"id": 0, "op": "recv", "peer": 0, "bytes": 64, "tag": 9},
        {"id": 1, "op": "broadcast", "group": "world", "bytes": 100, "root": 2, "deps": [0]},
        {"id": 2, "op": "norm", "elements": 10, "dtype": "fp32", "rows": 2}
      ]},
      {"rank": 2, "ops": [
        {"id": 7, "op": "all_to_all_v", "group": "pair", "send_bytes": [7, 8]},
        {"id": 8, "op": "broadcast", "group": "world", "bytes": 100, "root": 2},
        {"id": 9, "op": "reduce_scatter", "group": "pair", "bytes": 8, "dtype": "fp16"}
      ]}]})";
  return parse_native(text, "rt.json");
}
}  // namespace

TEST(ChakraExport, RoundTripWithEmbeddedOpsIsExact) {
  const Workload w = rich_workload();
  for (bool compress : {false, true}) {
    const auto dir = scratch(compress ? "export_gz" : "export");
    ChakraExportOptions o;
    o.gzip = compress;
    export_chakra(w, (dir / "rt").string(), o);
    EXPECT_TRUE(fs::exists(dir / "rt.json"));
    EXPECT_EQ(compress, static_cast<unsigned char>(read_all(dir / "rt.0.et")[0]) == 0x1f);
    const Workload back = load_chakra((dir / "rt").string());
    EXPECT_TRUE(back.warnings.empty());
    EXPECT_EQ(write_native(back), write_native(w));
  }
}

TEST(ChakraExport, PlainChakraNodesCarryTheStandardMapping) {
  // Without the embedded native ops, other tools (and trnsim) see plain Chakra; what Chakra can
  // express comes back unchanged: collectives, p2p, memory ops, whole-microsecond delays.
  Workload w = rich_workload();
  for (auto& r : w.ranks) {
    for (auto& op : r.ops) {
      if (op.kind == OpKind::delay) op.duration = Duration(3e-6);
      if (op.kind == OpKind::reduce_scatter) op.dtype = DType::bf16;
    }
  }
  w.ranks[0].ops.erase(w.ranks[0].ops.begin(), w.ranks[0].ops.begin() + 2);  // gemm, attention
  w.ranks[0].ops[0].deps.clear();
  w.ranks[1].ops.pop_back();  // norm
  const auto dir = scratch("export_plain");
  ChakraExportOptions o;
  o.embed_native = false;
  export_chakra(w, (dir / "p").string(), o);
  const Workload back = load_chakra((dir / "p").string());
  EXPECT_EQ(write_native(back), write_native(w));

  // Compute ops become COMP nodes with num_ops in FLOPs: shape is lost, work is not. A GEMM is
  // written as a matmul ("M") and read back as a cube GEMM of the same work.
  Workload c = rich_workload();
  export_chakra(c, (dir / "c").string(), o);
  const Workload cb = load_chakra((dir / "c").string());
  const Op& gemm = cb.ranks[0].ops[0];
  EXPECT_EQ(gemm.kind, OpKind::gemm);
  EXPECT_EQ(gemm.source_type, "M");
  EXPECT_EQ(gemm.m, 81u);  // round(cbrt(64 * 128 * 32 * 2 = 524,288 MACs)) = 81
  EXPECT_EQ(gemm.flops, 2.0 * 64 * 128 * 32 * 2);
  EXPECT_DOUBLE_EQ(total_flops(cb.ranks[0]), total_flops(c.ranks[0]));
}

// ---- Chakra's JSON form ----------------------------------------------------------------------------

// Nodes become the same ops as in the protobuf form: CPU ops take no time, a GPU COMP node lasts
// its runtime, a collective known only by its runtime (no comm_type) is a delay of that runtime,
// and dependencies on absent nodes are dropped with a warning.
TEST(ChakraJson, NodesBecomeOpsWithTheirRuntimes) {
  const auto dir = scratch("json_form");
  std::ofstream(dir / "t.0.json") << R"({"workload_graph": [
      {"Id": 10, "Name": "cpu", "NodeType": 4, "ctrlDeps": [3], "runtime": 318, "is_cpu_op": true},
      {"Id": 11, "Name": "kernel", "NodeType": 4, "data_deps": [10], "runtime": 4,
       "is_cpu_op": false},
      {"Id": 12, "Name": "nccl", "NodeType": 7, "data_deps": [10, 11], "runtime": 28,
       "is_cpu_op": false}], "ngpus": 1})";
  const Workload w = load_chakra((dir / "t").string());
  ASSERT_EQ(w.num_ranks(), 1);
  const auto& ops = w.ranks[0].ops;
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].kind, OpKind::delay);
  EXPECT_EQ(ops[0].duration.si, 0.0);
  EXPECT_EQ(ops[1].kind, OpKind::delay);
  EXPECT_DOUBLE_EQ(ops[1].duration.si, 4e-6);
  EXPECT_EQ(ops[2].kind, OpKind::delay);
  EXPECT_DOUBLE_EQ(ops[2].duration.si, 28e-6);
  EXPECT_EQ(ops[2].deps, (std::vector<OpId>{10, 11}));
  EXPECT_TRUE(ops[0].deps.empty());  // node 3 is not in the file
  std::string all;
  for (const auto& s : w.warnings) all += s + "\n";
  EXPECT_NE(all.find("not in the file"), std::string::npos) << all;
  EXPECT_NE(all.find("1 COMM_COLL nodes without comm_type"), std::string::npos) << all;
}

TEST(ChakraJson, BadNodeNamesItsPointer) {
  const auto dir = scratch("json_bad");
  std::ofstream(dir / "t.0.json") << R"({"workload_graph": [{"Id": 1, "NodeType": 4},
                                                            {"Name": "no id", "NodeType": 4}]})";
  EXPECT_NE(error_of([&] { load_chakra((dir / "t").string()); }).find("/workload_graph/1/Id: missing"),
            std::string::npos);
  std::ofstream(dir / "u.0.json") << R"({"workload_graph": [{"Id": 1, "NodeType": 99}]})";
  EXPECT_NE(error_of([&] { load_chakra((dir / "u").string()); })
                .find("/workload_graph/0/NodeType: 99 is not a Chakra node type"),
            std::string::npos);
  // 2^32 narrowed to an int is 0 (INVALID_NODE, a valid type that orders only): refused whole.
  std::ofstream(dir / "v.0.json") << R"({"workload_graph": [{"Id": 1, "NodeType": 4294967296}]})";
  EXPECT_NE(error_of([&] { load_chakra((dir / "v").string()); })
                .find("/workload_graph/0/NodeType: 4294967296 is not a Chakra node type"),
            std::string::npos);
}

// A rank file that is a symlink loop cannot be looked up: a TraceError naming it (exit 2), not a
// filesystem_error.
TEST(ChakraJson, SymlinkLoopRankFileIsATraceError) {
  const auto dir = scratch("loop");
  std::filesystem::create_symlink(dir / "t.0.et", dir / "t.0.et");
  const std::string e = error_of([&] { load_chakra((dir / "t").string()); });
  EXPECT_NE(e.find("t.0.et: cannot read: Too many levels of symbolic links"), std::string::npos) << e;
}

// ---- recorded PyTorch operators as Trainium compute ----------------------------------------------

namespace {

void io(pb::IOInfo* info, const std::string& values, const std::string& shapes,
        const std::string& types) {
  info->set_values(values);
  info->set_shapes(shapes);
  info->set_types(types);
}

// A PyTorch-derived rank: an aten::mm kernel recorded with its own shapes, a kernel of no known
// operator, and an addmm CPU op that Chakra's converter split into two nodes (same rf_id), one
// per kernel it launched.
fs::path save_torch_rank(const std::string& name) {
  const auto dir = scratch(name);
  EtFile f;
  auto& mm = f.node(1, pb::COMP_NODE, "aten::mm");
  attr(mm, "is_cpu_op")->set_bool_val(false);
  attr(mm, "tid")->set_int64_val(7);  // the CUDA stream
  mm.set_duration_micros(500);
  io(mm.mutable_inputs(), "[[1, 2, 0, 8192, 2, 'cuda:0'], [3, 4, 0, 4096, 2, 'cuda:0']]",
     "[[64, 128], [128, 32]]", "['Tensor(c10::BFloat16)', 'Tensor(c10::BFloat16)']");
  auto& custom = f.node(2, pb::COMP_NODE, "void my_custom_kernel<float>(float*)");
  attr(custom, "is_cpu_op")->set_bool_val(false);
  attr(custom, "tid")->set_int64_val(7);
  custom.set_duration_micros(250);
  for (std::uint64_t id : {10, 13}) {
    auto& cpu = f.node(id, pb::COMP_NODE, id == 10 ? "aten::addmm(0)" : "aten::addmm(1)");
    attr(cpu, "is_cpu_op")->set_bool_val(true);
    attr(cpu, "rf_id")->set_int64_val(7);
    io(cpu.mutable_inputs(), "[[5, 6, 0, 32, 4, 'cuda:0'], [7, 8, 0, 1024, 4, 'cuda:0'], "
                             "[9, 10, 0, 2048, 4, 'cuda:0'], 1, 1]",
       "[[32], [16, 64], [64, 32], [], []]",
       "['Tensor(float)', 'Tensor(float)', 'Tensor(float)', 'Int', 'Int']");
    io(cpu.mutable_outputs(), "[[11, 12, 0, 512, 4, 'cuda:0']]", "[[16, 32]]",
       "['Tensor(float)']");
  }
  for (std::uint64_t id : {11, 12}) {
    auto& k = f.node(id, pb::COMP_NODE, "sgemm_32x32x32_NN_vec");
    attr(k, "is_cpu_op")->set_bool_val(false);
    attr(k, "tid")->set_int64_val(7);
    k.add_data_deps(id == 11 ? 10 : 13);
    k.set_duration_micros(id == 11 ? 30 : 40);
  }
  f.save(dir / "t.0.et");
  return dir / "t";
}

const Op& op_by_id(const Workload& w, OpId id) {
  return w.ranks[0].ops[index_by_id(w.ranks[0]).at(id)];
}

}  // namespace

TEST(TorchOps, RecordedMmRunsAsItsGemmAndUnknownKernelsKeepTheirDuration) {
  const auto prefix = save_torch_rank("torch").string();
  const Workload w = load_chakra(prefix);
  EXPECT_TRUE(w.warnings.empty());
  const Op& mm = op_by_id(w, 1);
  ASSERT_EQ(mm.kind, OpKind::gemm);
  EXPECT_EQ(mm.m, 64u);
  EXPECT_EQ(mm.k, 128u);
  EXPECT_EQ(mm.n, 32u);
  EXPECT_EQ(mm.batch, 1u);
  EXPECT_EQ(mm.dtype, DType::bf16);
  EXPECT_EQ(op_flops(mm), 2.0 * 64 * 128 * 32);
  EXPECT_EQ(mm.source_type, "aten::mm");
  const Op& custom = op_by_id(w, 2);
  EXPECT_EQ(custom.kind, OpKind::delay);
  EXPECT_DOUBLE_EQ(custom.duration.si, 250e-6);
  // addmm(0) and addmm(1) are one call (rf_id 7): its GEMM runs at the first kernel, and the
  // second kernel takes no time.
  const Op& addmm = op_by_id(w, 11);
  ASSERT_EQ(addmm.kind, OpKind::gemm);
  EXPECT_EQ(addmm.m, 16u);
  EXPECT_EQ(addmm.k, 64u);
  EXPECT_EQ(addmm.n, 32u);
  EXPECT_EQ(addmm.dtype, DType::fp32);
  EXPECT_EQ(addmm.name, "aten::addmm(0)");
  EXPECT_EQ(op_by_id(w, 12).kind, OpKind::delay);
  EXPECT_EQ(op_by_id(w, 12).duration.si, 0.0);
  EXPECT_EQ(op_by_id(w, 10).kind, OpKind::delay);  // the CPU op itself: host time, none
  EXPECT_EQ(op_by_id(w, 10).duration.si, 0.0);
  ASSERT_TRUE(w.coverage);
  EXPECT_EQ(w.coverage->kernels, 4u);
  EXPECT_EQ(w.coverage->mapped, 3u);
  EXPECT_NEAR(w.coverage->recorded_seconds, 820e-6, 1e-12);
  EXPECT_NEAR(w.coverage->mapped_seconds, 570e-6, 1e-12);
  ASSERT_EQ(w.coverage->unmapped_ops.size(), 1u);
  EXPECT_EQ(w.coverage->unmapped_ops.begin()->first, "kernel my_custom_kernel");
  EXPECT_EQ(w.coverage->unmapped_ops.begin()->second.kernels, 1u);
  EXPECT_EQ(w.coverage->mapped_ops.at("aten::addmm").kernels, 1u);
  EXPECT_NEAR(w.coverage->mapped_ops.at("aten::addmm").seconds, 70e-6, 1e-12);
  // The kernels of stream 7 run in file order.
  EXPECT_EQ(op_by_id(w, 1).deps, std::vector<OpId>{});
  EXPECT_EQ(op_by_id(w, 2).deps, std::vector<OpId>{1});
  EXPECT_EQ(op_by_id(w, 11).deps, (std::vector<OpId>{10, 2}));
  EXPECT_EQ(op_by_id(w, 12).deps, (std::vector<OpId>{13, 11}));
  ChakraOptions unordered;
  unordered.stream_order = false;
  EXPECT_EQ(op_by_id(load_chakra(prefix, unordered), 2).deps, std::vector<OpId>{});
  const std::string d = describe(w);
  EXPECT_NE(d.find("3 of 4 recorded kernels (75.0 %), 69.5 % of 0.00082 s recorded GPU time"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("kernel my_custom_kernel 1 (30.5 %)"), std::string::npos) << d;
}

TEST(TorchOps, KeepDurationsAndUnmappedScale) {
  const auto prefix = save_torch_rank("torch_keep").string();
  ChakraOptions keep;
  keep.map_operators = false;
  const Workload w = load_chakra(prefix, keep);
  EXPECT_EQ(op_by_id(w, 1).kind, OpKind::delay);
  EXPECT_DOUBLE_EQ(op_by_id(w, 1).duration.si, 500e-6);
  EXPECT_DOUBLE_EQ(op_by_id(w, 12).duration.si, 40e-6);
  ASSERT_TRUE(w.coverage);
  EXPECT_EQ(w.coverage->mapped, 0u);
  EXPECT_EQ(w.coverage->unmapped_ops.at("aten::addmm").kernels, 2u);
  ChakraOptions half;
  half.unmapped_scale = 0.5;
  const Workload h = load_chakra(prefix, half);
  EXPECT_DOUBLE_EQ(op_by_id(h, 2).duration.si, 125e-6);
  EXPECT_EQ(op_by_id(h, 1).kind, OpKind::gemm);
  half.unmapped_scale = -1;
  EXPECT_NE(error_of([&] { load_chakra(prefix, half); }).find("must be >= 0"), std::string::npos);
}

TEST(TorchOps, OperatorTable) {
  const auto call = [](const std::string& op, const std::string& shapes, const std::string& types,
                       const std::string& values = "", const std::string& out_shapes = "",
                       const std::string& out_types = "") {
    TorchCall c;
    c.op = op;
    c.inputs = parse_torch_args(values, shapes, types, "test");
    c.outputs = parse_torch_args("", out_shapes, out_types, "test");
    return map_torch_op(c);
  };
  // bmm [20,512,64] x [20,64,512] (GPT-2's attention scores)
  auto op = call("aten::bmm", "[[20, 512, 64], [20, 64, 512]]", "['Tensor(float)', 'Tensor(float)']");
  ASSERT_TRUE(op);
  EXPECT_EQ(op_flops(*op), 2.0 * 20 * 512 * 64 * 512);
  // linear: input [4, 512, 1280], weight [5120, 1280] -> [2048 x 1280] x [1280 x 5120]
  op = call("aten::linear", "[[4, 512, 1280], [5120, 1280], [5120]]",
            "['Tensor(c10::Half)', 'Tensor(c10::Half)', 'Tensor(c10::Half)']");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->m, 2048u);
  EXPECT_EQ(op->k, 1280u);
  EXPECT_EQ(op->n, 5120u);
  EXPECT_EQ(op->dtype, DType::fp16);
  // conv2d [32,1024,14,14] * [256,1024,1,1] -> [32,256,14,14]: 6272 x 1024 x 256
  op = call("aten::conv2d", "[[32, 1024, 14, 14], [256, 1024, 1, 1], [], [[], []], [[], []], [[], []], []]",
            "['Tensor(float)', 'Tensor(float)', 'None', 'GenericList[Int,Int]', "
            "'GenericList[Int,Int]', 'GenericList[Int,Int]', 'Int']",
            "", "[[32, 256, 14, 14]]", "['Tensor(float)']");
  ASSERT_TRUE(op);
  EXPECT_EQ(op_flops(*op), 2.0 * 32 * 14 * 14 * 1024 * 256);
  // its backward with output_mask [True, True, False]: two products of that size
  op = call("aten::convolution_backward",
            "[[32, 256, 14, 14], [32, 1024, 14, 14], [256, 1024, 1, 1], [], [], [], [], [], [], "
            "[], [[], [], []]]",
            "['Tensor(float)', 'Tensor(float)', 'Tensor(float)', 'GenericList[Int]', "
            "'GenericList[Int,Int]', 'GenericList[Int,Int]', 'GenericList[Int,Int]', 'Bool', "
            "'GenericList[Int,Int]', 'Int', 'GenericList[Bool,Bool,Bool]']",
            "[[], [], [], [256], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False]]");
  ASSERT_TRUE(op);
  EXPECT_EQ(op_flops(*op), 2 * 2.0 * 32 * 14 * 14 * 1024 * 256);
  // attention [1,20,512,64], causal
  op = call("aten::scaled_dot_product_attention",
            "[[1, 20, 512, 64], [1, 20, 512, 64], [1, 20, 512, 64], [], [], []]",
            "['Tensor(c10::BFloat16)', 'Tensor(c10::BFloat16)', 'Tensor(c10::BFloat16)', 'None', "
            "'Double', 'Bool']",
            "[[], [], [], None, 0.0, True]");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->kind, OpKind::attention);
  EXPECT_TRUE(op->causal);
  EXPECT_EQ(op->heads, 20u);
  // layer norm over the last dimension; softmax rows
  op = call("aten::native_layer_norm", "[[1, 512, 1280], [[]], [1280], [1280], []]",
            "['Tensor(float)', 'GenericList[Int]', 'Tensor(float)', 'Tensor(float)', 'Double']");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->kind, OpKind::norm);
  EXPECT_EQ(op->elements, 512u * 1280);
  EXPECT_EQ(op->rows, 512u);
  op = call("aten::_softmax", "[[1, 20, 512, 512], [], []]", "['Tensor(float)', 'Int', 'Bool']");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->kind, OpKind::softmax);
  EXPECT_EQ(op->rows, 20u * 512);
  // Adam over a list of parameters
  op = call("aten::_foreach_add_", "[[[64], [256]], [[64], [256]]]",
            "['GenericList[Tensor(float),Tensor(float)]', 'GenericList[Tensor(float),Tensor(float)]']");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->elements, 320u);
  // unknown operators and missing shapes map to nothing
  EXPECT_FALSE(call("aten::embedding_bag", "[[10, 4], [3]]", "['Tensor(float)', 'Tensor(long)']"));
  EXPECT_FALSE(call("aten::mm", "[[], []]", "['Tensor(float)', 'Tensor(float)']"));
  EXPECT_EQ(torch_op_name("aten::mm(12)"), "aten::mm");
  EXPECT_EQ(torch_op_name("f(x)"), "f(x)");
  EXPECT_NE(error_of([] { parse_python_literal("[[1, 2]", "here"); }).find("here"),
            std::string::npos);
}

TEST(TorchOps, SharedResNetTraceRunsAsTrainiumCompute) {
  const Workload w = load_chakra(kShared + "chakra/chakra");
  ASSERT_TRUE(w.coverage);
  EXPECT_EQ(w.coverage->kernels, 1209u);
  EXPECT_EQ(w.coverage->mapped, 1209u);
  EXPECT_NEAR(w.coverage->recorded_seconds, 0.292828, 1e-9);
  // ResNet-50 on 32 images of 224x224: 53 convolutions of 8.17 GFLOP an image forward.
  double conv = 0, conv_bwd = 0;
  for (const auto& op : w.ranks[0].ops) {
    if (op.source_type == "aten::conv2d") conv += op_flops(op);
    if (op.source_type == "aten::convolution_backward") conv_bwd += op_flops(op);
  }
  EXPECT_NEAR(conv / 32, 8.174e9, 0.01e9);
  EXPECT_NEAR(conv_bwd / conv, 1.97, 0.01);  // the first layer computes no input gradient
  EXPECT_NE(w.units.find("detected: GlobalMetadata schema \"1.0.1\""), std::string::npos);
}

// ---- units ---------------------------------------------------------------------------------------

TEST(ChakraUnitsDetected, GeneratorTraceWithoutFlagsMatchesTheFlags) {
  const std::string prefix = kShared + "moe-generated/mixtral_like_dp2_tp2_ep4/workload";
  ChakraOptions flags;
  flags.size_unit = ChakraOptions::SizeUnit::elements;
  flags.num_ops_unit = ChakraOptions::NumOpsUnit::macs;
  const Workload given = load_chakra(prefix, flags);
  const Workload detected = load_chakra(prefix);
  EXPECT_TRUE(detected.warnings.empty());
  EXPECT_NE(detected.units.find("detected: GlobalMetadata schema \"symbolic_tensor_network\""),
            std::string::npos);
  EXPECT_NE(detected.units.find("elements of 2 bytes, num_ops in MACs"), std::string::npos);
  double f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  for (int r = 0; r < 16; ++r) {
    f0 += total_flops(given.ranks[r]);
    f1 += total_flops(detected.ranks[r]);
    for (const auto& op : given.ranks[r].ops) b0 += comm_bytes(op);
    for (const auto& op : detected.ranks[r].ops) b1 += comm_bytes(op);
  }
  EXPECT_EQ(f0, f1);
  EXPECT_EQ(b0, b1);
  EXPECT_NEAR(f1, 295.4e12, 0.1e12);
  EXPECT_TRUE(given.warnings.empty());
  // Options that contradict the trace win, with a warning.
  ChakraOptions bytes;
  bytes.size_unit = ChakraOptions::SizeUnit::bytes;
  bytes.num_ops_unit = ChakraOptions::NumOpsUnit::flops;
  const Workload contrary = load_chakra(prefix, bytes);
  ASSERT_EQ(contrary.warnings.size(), 1u);
  EXPECT_NE(contrary.warnings[0].find("read as bytes and FLOPs as the options ask, but the trace "
                                      "says elements and MACs"),
            std::string::npos);
}

TEST(ChakraUnitsDetected, FromTheGeneratorsShapeRecords) {
  // No schema, but an outputs attribute of (name, element count) pairs that sums to tensor_size.
  const auto dir = scratch("units_shapes");
  EtFile f;
  auto& c = f.node(1, pb::COMP_NODE);
  attr(c, "num_ops")->set_int64_val(1000);
  attr(c, "tensor_size")->set_uint64_val(96);
  auto* outs = attr(c, "outputs")->mutable_string_list();
  outs->add_values("x@0Seq,Dmodel");
  outs->add_values("64.0");
  outs->add_values("y@0Seq,Dmodel");
  outs->add_values("32.0");
  f.save(dir / "s.0.et");
  const Workload w = load_chakra((dir / "s").string());
  EXPECT_TRUE(w.warnings.empty());
  EXPECT_EQ(w.ranks[0].ops[0].flops, 2000.0);
  EXPECT_EQ(w.ranks[0].ops[0].tensor_bytes, 192u);
  EXPECT_NE(w.units.find("node 1: its outputs attribute lists 96 elements"), std::string::npos);
}

TEST(ChakraUnitsDetected, UnknownUnitsAreNotReadSilently) {
  const auto dir = scratch("units_unknown");
  EtFile f;
  auto& c = f.node(1, pb::COMP_NODE);
  attr(c, "num_ops")->set_int64_val(1000);
  auto& ar = f.node(2, pb::COMM_COLL_NODE);
  attr(ar, "comm_type")->set_int64_val(pb::ALL_REDUCE);
  attr(ar, "comm_size")->set_int64_val(4096);
  f.save(dir / "u.0.et");
  const Workload w = load_chakra((dir / "u").string());
  ASSERT_EQ(w.warnings.size(), 1u);
  EXPECT_NE(w.warnings[0].find("cannot be told"), std::string::npos);
  EXPECT_NE(w.warnings[0].find("read as bytes and FLOPs (4096 B moved, 1000 FLOP); read as 2-byte "
                               "elements and MACs they would be 8192 B and 2000 FLOP"),
            std::string::npos)
      << w.warnings[0];
  EXPECT_EQ(w.ranks[0].ops[1].bytes, 4096u);
  // Either flag settles it, without a warning.
  ChakraOptions o;
  o.num_ops_unit = ChakraOptions::NumOpsUnit::flops;
  EXPECT_TRUE(load_chakra((dir / "u").string(), o).warnings.empty());
}

TEST(ChakraUnitsDetected, TrnsimExportReadsBackAsBytes) {
  const auto dir = scratch("units_export");
  Workload w;
  w.name = "x";
  w.groups["world"] = {0};
  RankTrace r;
  Op ar;
  ar.id = 1;
  ar.kind = OpKind::all_reduce;
  ar.group = "world";
  ar.bytes = 4096;
  r.ops.push_back(ar);
  w.ranks.push_back(r);
  ChakraExportOptions plain;
  plain.embed_native = false;
  export_chakra(w, (dir / "x").string(), plain);
  const Workload back = load_chakra((dir / "x").string());
  EXPECT_TRUE(back.warnings.empty());
  EXPECT_EQ(back.ranks[0].ops[0].bytes, 4096u);
  EXPECT_NE(back.units.find("trnsim's own export"), std::string::npos);
}

// ---- PyTorch execution traces read directly ------------------------------------------------------

TEST(PytorchEt, Gpt2StepIsTheModelsFlops) {
  const auto w = load_pytorch_et(kShared + "pytorch/param/hf_gpt2/hf_GPT2_et.json.gz");
  ASSERT_TRUE(w);
  ASSERT_EQ(w->num_ranks(), 1);
  ASSERT_TRUE(w->coverage);
  EXPECT_EQ(w->coverage->kernels, 3313u);
  EXPECT_EQ(w->coverage->mapped, 3312u);
  EXPECT_EQ(w->coverage->unmapped_ops.at("aten::arange").kernels, 1u);
  // gpt2-large (774M parameters) on 512 tokens: 6 x N x T for the weights plus the attention
  // products (3 x 4 x T^2 x d_model per layer, 36 layers): 2.52 TFLOP a training step.
  double matrix = 0;
  std::size_t gemms = 0;
  for (const auto& op : w->ranks[0].ops) {
    if (op.kind == OpKind::gemm) {
      matrix += op_flops(op);
      ++gemms;
    }
  }
  const double model = 6.0 * 774.03e6 * 512 + 3 * 4.0 * 512 * 512 * 1280 * 36;
  EXPECT_NEAR(matrix / model, 1.0, 0.01) << matrix;
  EXPECT_EQ(gemms, 651u);
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_NE(w->warnings[0].find("1 calls on host (cpu) tensors only"), std::string::npos);
  EXPECT_EQ(w->metadata["pytorch_et_schema"], "1.1.0-chakra.0.0.4");
}

TEST(PytorchEt, UnmappedCallsAndCollectivesAreCounted) {
  const auto add = load_pytorch_et(kShared + "pytorch/hta/simple_add/benchmark_simple_add_et.json.gz");
  ASSERT_TRUE(add);
  // torch.add of two [256, 256] tensors, twice; the inputs come from aten::rand (counted once, not
  // its uniform_ inside); 4 calls on CPU tensors are host work.
  EXPECT_EQ(add->coverage->kernels, 4u);
  EXPECT_EQ(add->coverage->mapped, 2u);
  EXPECT_EQ(add->coverage->unmapped_ops.at("aten::rand").kernels, 2u);
  const auto dlrm = load_pytorch_et(kShared + "pytorch/param/dlrm_8rank/et/dlrm_eg_1.json.gz");
  ASSERT_TRUE(dlrm);
  ASSERT_EQ(dlrm->warnings.size(), 2u);
  // One rank of the 8: its 8 collectives (the waits are not collectives) run on it alone.
  EXPECT_NE(dlrm->warnings[1].find("8 collectives of a 8-rank job run on the 1 rank read"),
            std::string::npos)
      << dlrm->warnings[1];
  EXPECT_EQ(kinds(dlrm->ranks[0])[OpKind::all_to_all_v], 4);
  // The embedding lookups do not map: counted once each, at the fbgemm call.
  EXPECT_EQ(dlrm->coverage->unmapped_ops.at("fbgemm::split_embedding_codegen_lookup_adagrad_function")
                .kernels,
            1u);
  // A native trace and a Chakra JSON file are not PyTorch ETs.
  EXPECT_FALSE(load_pytorch_et(std::string(TRNSIM_SOURCE_DIR) + "/tests/golden/inputs/golden-moe-16.json"));
  EXPECT_FALSE(load_pytorch_et(kShared + "chakra/small_chakra.0.json"));
  const auto dir = scratch("et_bad");
  write_all(dir / "bad.json", R"({"schema": "1.0.1", "nodes": [{"id": 1}]})");
  EXPECT_NE(error_of([&] { load_pytorch_et((dir / "bad.json").string()); })
                .find("bad.json:/nodes/0/name: missing"),
            std::string::npos);
}

// ---- PyTorch ETs: collectives and several ranks -----------------------------------------------

namespace {

// A record_param_comms node of schema 1.0.1 (flat inputs): [tensor, seq, pg pointer, rank, name,
// input splits, output splits], a float tensor of rows x 16 in and out_rows x 16 out.
std::string et_comm_node(int id, int rank, const std::string& coll, std::uint64_t rows,
                         std::uint64_t out_rows, const std::vector<int>& in_splits,
                         const std::vector<int>& out_splits) {
  const auto list = [](const std::vector<int>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  return fmt::format(
      R"et({{"name": "record_param_comms", "id": {}, "parent": 1, "inputs": [[100, 101, 0, {}, 4, "cuda:{}"], 7, 12345, {}, "{}", {}, {}], "input_shapes": [[{}, 16], [], [], [], [], [], []], "input_types": ["Tensor(float)", "Int", "Int", "Int", "String", "GenericList[Int]", "GenericList[Int]"], "outputs": [[102, 103, 0, {}, 4, "cuda:{}"]], "output_shapes": [[{}, 16]], "output_types": ["Tensor(float)"]}})et",
      id, rows * 16, rank, rank, coll, list(in_splits), list(out_splits), rows, out_rows * 16,
      rank, out_rows);
}

// An aten::mm of [64, 32] x [32, 16] on the GPU, so each rank has compute.
std::string et_mm_node(int id) {
  return fmt::format(
      R"et({{"name": "aten::mm", "id": {}, "parent": 1, "inputs": [[1, 2, 0, 2048, 4, "cuda:0"], [3, 4, 0, 512, 4, "cuda:0"]], "input_shapes": [[64, 32], [32, 16]], "input_types": ["Tensor(float)", "Tensor(float)"], "outputs": [[5, 6, 0, 1024, 4, "cuda:0"]], "output_shapes": [[64, 16]], "output_types": ["Tensor(float)"]}})et",
      id);
}

std::string et_file(const std::vector<std::string>& nodes) {
  std::string s = R"et({"schema": "1.0.1", "pid": 1, "nodes": [{"name": "[pytorch|profiler|execution_graph|thread]", "id": 1, "parent": 1, "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []})et";
  for (const auto& n : nodes) s += ", " + n;
  return s + "]}";
}

// Three ranks; rank r sends splits[r][p] rows of 16 floats (64 bytes) to rank p and receives
// splits[p][r] from it.
const std::vector<std::vector<int>> kSplits = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};

void write_a2a_set(const fs::path& dir, int wrong_rank = -1) {
  for (int r = 0; r < 3; ++r) {
    std::vector<int> in = kSplits[std::size_t(r)], out;
    for (int p = 0; p < 3; ++p) out.push_back(kSplits[std::size_t(p)][std::size_t(r)]);
    if (r == wrong_rank) out[2] += 1;  // expects one row more from rank 2 than it sends
    int rows = 0, out_rows = 0;
    for (int x : in) rows += x;
    for (int x : out) out_rows += x;
    write_all(dir / fmt::format("et_{}.json", r),
              et_file({et_mm_node(2), et_comm_node(3, r, "all_to_allv", std::uint64_t(rows),
                                                   std::uint64_t(out_rows), in, out)}));
  }
}

}  // namespace

TEST(PytorchEtComms, AllToAllVHasItsPerPeerBytes) {
  const auto dir = scratch("et_a2a");
  write_a2a_set(dir);
  const auto files = pytorch_et_rank_files(dir.string());
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[2], (dir / "et_2.json").string());
  const Workload w = load_pytorch_et_ranks(files);
  ASSERT_EQ(w.num_ranks(), 3);
  EXPECT_EQ(w.groups.at("world"), (std::vector<int>{0, 1, 2}));
  for (int r = 0; r < 3; ++r) {
    const auto& ops = w.ranks[std::size_t(r)].ops;
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0].kind, OpKind::gemm);
    ASSERT_EQ(ops[1].kind, OpKind::all_to_all_v);
    EXPECT_EQ(ops[1].group, "world");
    std::vector<std::uint64_t> expect;
    for (int x : kSplits[std::size_t(r)]) expect.push_back(std::uint64_t(x) * 16 * 4);
    EXPECT_EQ(ops[1].send_bytes, expect) << "rank " << r;
  }
  // rank 2 sends 7, 8, 9 rows of 64 bytes
  EXPECT_EQ(w.ranks[2].ops[1].send_bytes, (std::vector<std::uint64_t>{448, 512, 576}));
  EXPECT_EQ(w.metadata["pytorch_et_ranks"], 3);
}

TEST(PytorchEtComms, ReceiveSplitsThatNoPeerSendsAreAnError) {
  const auto dir = scratch("et_a2a_bad");
  write_a2a_set(dir, 1);
  const std::string e = error_of([&] { load_pytorch_et_ranks(pytorch_et_rank_files(dir.string())); });
  EXPECT_NE(e.find("et_1.json: node 3: all_to_allv receives 576 bytes from rank 2, but "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("et_2.json: node 3 sends it 512 bytes"), std::string::npos) << e;
}

TEST(PytorchEtComms, RankFilesOutOfOrderOrMissingAreErrors) {
  const auto dir = scratch("et_order");
  write_a2a_set(dir);
  // et_0 and et_1 swapped: the recorded ranks say so
  fs::rename(dir / "et_0.json", dir / "x.tmp");
  fs::rename(dir / "et_1.json", dir / "et_0.json");
  fs::rename(dir / "x.tmp", dir / "et_1.json");
  std::string e = error_of([&] { load_pytorch_et_ranks(pytorch_et_rank_files(dir.string())); });
  EXPECT_NE(e.find("et_0.json: node 3: all_to_allv records rank 1 in its group, but this file is "
                   "rank 0 of the set"),
            std::string::npos)
      << e;
  // two ranks of three: the splits name a third
  fs::remove(dir / "et_2.json");
  e = error_of([&] { load_pytorch_et_ranks(pytorch_et_rank_files(dir.string())); });
  EXPECT_NE(e.find("node 3: all_to_allv runs on a group of 3 ranks, but 2 rank files were given"),
            std::string::npos)
      << e;
  // a gap in the numbering
  write_a2a_set(dir);
  fs::remove(dir / "et_1.json");
  e = error_of([&] { pytorch_et_rank_files(dir.string()); });
  EXPECT_NE(e.find("rank 1 is missing"), std::string::npos) << e;
}

TEST(PytorchEtComms, DlrmEightRanksReplayTheirAllToAllV) {
  if (!fs::exists(kShared + "pytorch/param/dlrm_8rank/et")) GTEST_SKIP() << "no shared traces";
  const auto files = pytorch_et_rank_files(kShared + "pytorch/param/dlrm_8rank/et");
  ASSERT_EQ(files.size(), 8u);
  const Workload w = load_pytorch_et_ranks(files);
  ASSERT_EQ(w.num_ranks(), 8);
  EXPECT_EQ(w.name, "dlrm_eg");
  EXPECT_EQ(w.groups.at("world").size(), 8u);
  // Per rank: 4 all-to-all-v, 1 all-to-all, 3 all-reduces (dlrm_eg_0.json.gz nodes 727 .. 1841).
  for (const auto& rank : w.ranks) {
    auto k = kinds(rank);
    EXPECT_EQ(k[OpKind::all_to_all_v], 4);
    EXPECT_EQ(k[OpKind::all_to_all], 1);
    EXPECT_EQ(k[OpKind::all_reduce], 3);
  }
  std::vector<const Op*> colls;
  for (const auto& op : w.ranks[0].ops) {
    if (is_collective(op.kind)) colls.push_back(&op);
  }
  ASSERT_EQ(colls.size(), 8u);
  // node 727: 6144 floats in 8 splits of 768: 3072 bytes to each peer
  EXPECT_EQ(colls[0]->send_bytes, std::vector<std::uint64_t>(8, 3072));
  // node 1068: all_to_all of 24 int64
  EXPECT_EQ(colls[1]->kind, OpKind::all_to_all);
  EXPECT_EQ(colls[1]->bytes, 192u);
  // node 1103: 3392 int32 split [96, 224, 288, 1664, 592, 96, 192, 240]: uneven
  EXPECT_EQ(colls[3]->send_bytes,
            (std::vector<std::uint64_t>{384, 896, 1152, 6656, 2368, 384, 768, 960}));
  // node 1246: all-reduce of 394241 floats
  EXPECT_EQ(colls[4]->kind, OpKind::all_reduce);
  EXPECT_EQ(colls[4]->bytes, 394241u * 4);
  EXPECT_EQ(colls[4]->dtype, DType::fp32);
  EXPECT_EQ(colls[7]->bytes, 226960u * 4);
}

// ---- PyTorch ET + Kineto profile ----------------------------------------------------------------

namespace {

// An ET of two GPU calls on thread 1: aten::mm (mapped) and fbgemm::lookup (not mapped).
std::string et_with_unmapped() {
  return R"et({"schema": "1.0.1", "pid": 1, "nodes": [
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 1, "rf_id": 0, "tid": 1, "parent": 1, "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []},
    {"name": "aten::mm", "id": 2, "rf_id": 1, "tid": 1, "parent": 1, "inputs": [[1, 2, 0, 2048, 4, "cuda:0"], [3, 4, 0, 512, 4, "cuda:0"]], "input_shapes": [[64, 32], [32, 16]], "input_types": ["Tensor(float)", "Tensor(float)"], "outputs": [[5, 6, 0, 1024, 4, "cuda:0"]], "output_shapes": [[64, 16]], "output_types": ["Tensor(float)"]},
    {"name": "fbgemm::lookup", "id": 3, "rf_id": 2, "tid": 1, "parent": 1, "inputs": [[7, 8, 0, 4096, 4, "cuda:0"]], "input_shapes": [[4096]], "input_types": ["Tensor(float)"], "outputs": [[9, 10, 0, 64, 4, "cuda:0"]], "output_shapes": [[64]], "output_types": ["Tensor(float)"]}]})et";
}

// Its profile: each call launches one kernel (aten::mm 30 us, fbgemm::lookup 50 us), through a
// CUDA runtime call inside it on the same thread, linked by "correlation".
std::string kineto_for(const std::string& first, const std::string& second, int rank = 0) {
  return fmt::format(R"et({{"schemaVersion": 1, "distributedInfo": {{"rank": {}}}, "traceEvents": [
    {{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#3", "pid": 1, "tid": 100, "ts": 0, "dur": 200, "args": {{"External id": 1}}}},
    {{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 100, "ts": 10, "dur": 20, "args": {{"External id": 2}}}},
    {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 100, "ts": 15, "dur": 5, "args": {{"correlation": 7}}}},
    {{"ph": "X", "cat": "cpu_op", "name": "{}", "pid": 1, "tid": 100, "ts": 40, "dur": 20, "args": {{"External id": 3}}}},
    {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 100, "ts": 45, "dur": 5, "args": {{"correlation": 8}}}},
    {{"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 20, "dur": 30, "args": {{"correlation": 7, "stream": 7}}}},
    {{"ph": "X", "cat": "kernel", "name": "lookup_kernel", "pid": 0, "tid": 7, "ts": 60, "dur": 50, "args": {{"correlation": 8, "stream": 7}}}}]}})et",
                     rank, first, second);
}

}  // namespace

TEST(PytorchEtKineto, AnUnmappedCallKeepsItsRecordedGpuTime) {
  const auto dir = scratch("et_kineto");
  write_all(dir / "et.json", et_with_unmapped());
  write_all(dir / "kineto.json", kineto_for("aten::mm", "fbgemm::lookup"));
  PytorchEtOptions o;
  o.kineto = (dir / "kineto.json").string();
  const auto w = load_pytorch_et((dir / "et.json").string(), o);
  ASSERT_TRUE(w);
  const auto& ops = w->ranks[0].ops;
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].kind, OpKind::gemm);
  ASSERT_EQ(ops[1].kind, OpKind::delay);  // in its recorded place, after the mm
  EXPECT_EQ(ops[1].name, "fbgemm::lookup");
  EXPECT_NEAR(ops[1].duration.si, 50e-6, 1e-12);
  EXPECT_EQ(ops[1].deps, std::vector<OpId>{0});
  ASSERT_TRUE(w->coverage);
  EXPECT_NEAR(w->coverage->recorded_seconds, 80e-6, 1e-12);
  EXPECT_NEAR(w->coverage->mapped_seconds, 30e-6, 1e-12);
  EXPECT_NEAR(w->coverage->unmapped_ops.at("fbgemm::lookup").seconds, 50e-6, 1e-12);
  EXPECT_NE(w->coverage->describe().find("37.5 % of 8e-05 s recorded GPU time"), std::string::npos)
      << w->coverage->describe();
  // scaled, and every call kept as recorded
  o.unmapped_scale = 2;
  EXPECT_NEAR(load_pytorch_et((dir / "et.json").string(), o)->ranks[0].ops[1].duration.si,
              100e-6, 1e-12);
  o.unmapped_scale = 1;
  o.keep_durations = true;
  const auto kept = load_pytorch_et((dir / "et.json").string(), o);
  ASSERT_EQ(kept->ranks[0].ops.size(), 2u);
  EXPECT_EQ(kept->ranks[0].ops[0].kind, OpKind::delay);
  EXPECT_NEAR(kept->ranks[0].ops[0].duration.si, 30e-6, 1e-12);
  EXPECT_EQ(kept->coverage->mapped, 0u);
}

TEST(PytorchEtKineto, AProfileOfAnotherRunIsAnError) {
  const auto dir = scratch("et_kineto_bad");
  write_all(dir / "et.json", et_with_unmapped());
  write_all(dir / "other.json", kineto_for("aten::add", "aten::relu"));
  PytorchEtOptions o;
  o.kineto = (dir / "other.json").string();
  const std::string e = error_of([&] { load_pytorch_et((dir / "et.json").string(), o); });
  EXPECT_NE(e.find("other.json: does not belong to " + (dir / "et.json").string() +
                   ": the 2 calls of its thread 1 (nodes 2 .. 3) match no thread of the profile"),
            std::string::npos)
      << e;
  write_all(dir / "notkineto.json", R"({"events": []})");
  o.kineto = (dir / "notkineto.json").string();
  EXPECT_NE(error_of([&] { load_pytorch_et((dir / "et.json").string(), o); })
                .find("notkineto.json:/traceEvents: missing"),
            std::string::npos);
}

TEST(PytorchEtKineto, ProfilesOfASetAreMatchedByTheirRank) {
  const auto dir = scratch("et_kineto_set");
  fs::create_directories(dir / "et");
  fs::create_directories(dir / "kineto");
  for (int r = 0; r < 2; ++r) {
    write_all(dir / "et" / fmt::format("et_{}.json", r), et_with_unmapped());
    // file names that do not say the rank: the profile's distributedInfo does
    write_all(dir / "kineto" / fmt::format("worker_{}.json", 1 - r),
              kineto_for("aten::mm", "fbgemm::lookup", r));
  }
  PytorchEtOptions o;
  o.kineto = (dir / "kineto").string();
  const Workload w = load_pytorch_et_ranks(pytorch_et_rank_files((dir / "et").string()), o);
  ASSERT_EQ(w.num_ranks(), 2);
  EXPECT_NEAR(w.coverage->recorded_seconds, 160e-6, 1e-12);
  // a profile of a rank the set does not have
  write_all(dir / "kineto" / "worker_0.json", kineto_for("aten::mm", "fbgemm::lookup", 5));
  const std::string e =
      error_of([&] { load_pytorch_et_ranks(pytorch_et_rank_files((dir / "et").string()), o); });
  EXPECT_NE(e.find("worker_0.json:/distributedInfo/rank: 5: expected the rank (0 .. 1)"),
            std::string::npos)
      << e;
}
