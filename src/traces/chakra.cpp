// SPDX-License-Identifier: MIT
// Chakra execution traces: reader and exporter. The mapping is specified in docs/trace-format.md.
#include "trnsim/trace/chakra.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>

#include <google/protobuf/arena.h>
#include <google/protobuf/util/json_util.h>

#include "chakra_et.pb.h"
#include "trnsim/dtype.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/trace/gzip.hpp"
#include "trnsim/trace/native.hpp"
#include "trnsim/trace/torch_ops.hpp"

namespace trnsim::trace {

namespace fs = std::filesystem;

namespace {
// Whether `path` exists; a path that cannot be looked up (a symlink loop: ELOOP) is a TraceError
// naming it, where fs::exists() would throw a filesystem_error (exit 1).
bool file_exists(const std::string& path) {
  std::error_code ec;
  const bool present = fs::exists(path, ec);
  if (ec) throw TraceError(fmt::format("{}: cannot read: {}", path, ec.message()));
  return present;
}
}  // namespace
namespace pb = ChakraProtoMsg;

namespace {

// The nodes of one rank file, in file order, parsed into one arena: allocated in blocks and
// freed together (a rank's thousands of small attribute messages and strings cost a malloc and a
// destructor each otherwise).
class RankNodes {
 public:
  pb::Node& add() {
    list_.push_back(google::protobuf::Arena::CreateMessage<pb::Node>(arena_.get()));
    return *list_.back();
  }
  void reserve(std::size_t n) { list_.reserve(n); }
  std::size_t size() const { return list_.size(); }
  const pb::Node& operator[](std::size_t i) const { return *list_[i]; }

 private:
  std::unique_ptr<google::protobuf::Arena> arena_ = std::make_unique<google::protobuf::Arena>();
  std::vector<pb::Node*> list_;
};

// ---- bytes on disk ------------------------------------------------------------------------------

std::string read_bytes(const std::string& path, std::uint64_t limit = kMaxTraceFileBytes) {
  return read_trace_bytes(path, limit);
}


// Splits a file into its varint32-framed messages.
std::vector<std::string_view> frames(const std::string& data, const std::string& path) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < data.size()) {
    const std::size_t start = pos;
    std::uint64_t len = 0;
    int shift = 0;
    for (;;) {
      if (pos >= data.size()) {
        throw TraceError(fmt::format("{}: byte {}: the file ends inside a length prefix", path,
                                     start));
      }
      const auto b = static_cast<unsigned char>(data[pos++]);
      len |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
      shift += 7;
      if (shift >= 35) {
        throw TraceError(fmt::format("{}: byte {}: invalid length prefix", path, start));
      }
    }
    if (len > data.size() - pos) {
      throw TraceError(fmt::format(
          "{}: byte {}: message #{} claims {} bytes but only {} remain (truncated file?)", path,
          start, out.size(), len, data.size() - pos));
    }
    out.emplace_back(data.data() + pos, len);
    pos += len;
  }
  return out;
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// ---- attributes ---------------------------------------------------------------------------------

using Attr = pb::AttributeProto;

// Integer value of an attribute of any integer kind (producers disagree on which one to use).
std::optional<std::int64_t> int_value(const Attr& a) {
  switch (a.value_case()) {
    case Attr::kInt32Val:
      return a.int32_val();
    case Attr::kInt64Val:
      return a.int64_val();
    case Attr::kUint32Val:
      return a.uint32_val();
    case Attr::kUint64Val:
      if (a.uint64_val() > std::uint64_t(std::numeric_limits<std::int64_t>::max())) return {};
      return static_cast<std::int64_t>(a.uint64_val());
    case Attr::kSint32Val:
      return a.sint32_val();
    case Attr::kSint64Val:
      return a.sint64_val();
    case Attr::kFixed32Val:
      return a.fixed32_val();
    case Attr::kFixed64Val:
      if (a.fixed64_val() > std::uint64_t(std::numeric_limits<std::int64_t>::max())) return {};
      return static_cast<std::int64_t>(a.fixed64_val());
    case Attr::kSfixed32Val:
      return a.sfixed32_val();
    case Attr::kSfixed64Val:
      return a.sfixed64_val();
    case Attr::kBoolVal:
      return a.bool_val() ? 1 : 0;
    default:
      return {};
  }
}

template <class List>
std::vector<std::int64_t> to_vec(const List& l) {
  std::vector<std::int64_t> v;
  for (auto x : l.values()) v.push_back(static_cast<std::int64_t>(x));
  return v;
}

std::optional<std::vector<std::int64_t>> int_list(const Attr& a) {
  switch (a.value_case()) {
    case Attr::kInt32List:
      return to_vec(a.int32_list());
    case Attr::kInt64List:
      return to_vec(a.int64_list());
    case Attr::kUint32List:
      return to_vec(a.uint32_list());
    case Attr::kUint64List:
      return to_vec(a.uint64_list());
    case Attr::kSint32List:
      return to_vec(a.sint32_list());
    case Attr::kSint64List:
      return to_vec(a.sint64_list());
    case Attr::kFixed32List:
      return to_vec(a.fixed32_list());
    case Attr::kFixed64List:
      return to_vec(a.fixed64_list());
    case Attr::kSfixed32List:
      return to_vec(a.sfixed32_list());
    case Attr::kSfixed64List:
      return to_vec(a.sfixed64_list());
    case Attr::kBoolList:
      return to_vec(a.bool_list());
    default:
      return {};
  }
}

const char* value_kind(const Attr& a) {
  switch (a.value_case()) {
    case Attr::kDoubleVal:
    case Attr::kFloatVal:
      return "a floating-point value";
    case Attr::kStringVal:
    case Attr::kBytesVal:
      return "a string";
    case Attr::VALUE_NOT_SET:
      return "no value";
    default:
      return "a list";
  }
}

// A node's attributes by name, with typed accessors whose errors name file, node and attribute.
// Of two attributes of one name, the later counts. A node has a handful: they are looked up in
// place, and the node's description is built only for a message.
class Attrs {
 public:
  Attrs(const pb::Node& node, const std::string& file) : node_(node), file_(file) {}

  bool has(std::string_view name) const { return named(name) != nullptr; }

  std::optional<std::int64_t> get_int(std::string_view name) const {
    const Attr* a = find(name);
    if (!a) return {};
    if (auto v = int_value(*a)) return v;
    // A whole number stored as floating point is still a whole number.
    if (a->value_case() == Attr::kDoubleVal && std::floor(a->double_val()) == a->double_val()) {
      return static_cast<std::int64_t>(a->double_val());
    }
    throw TraceError(fmt::format("{}: attribute \"{}\" should be an integer, got {}", where(), name,
                                 value_kind(*a)));
  }

  std::int64_t need_int(std::string_view name) const {
    auto v = get_int(name);
    if (!v) throw TraceError(fmt::format("{}: missing integer attribute \"{}\"", where(), name));
    return *v;
  }

  std::optional<std::vector<std::int64_t>> get_int_list(std::string_view name) const {
    const Attr* a = find(name);
    if (!a) return {};
    if (auto v = int_list(*a)) return v;
    throw TraceError(fmt::format("{}: attribute \"{}\" should be an integer list, got {}", where(),
                                 name, value_kind(*a)));
  }

  std::optional<std::string> get_string(std::string_view name) const {
    const Attr* a = find(name);
    if (!a) return {};
    if (a->value_case() == Attr::kStringVal) return a->string_val();
    if (a->value_case() == Attr::kBytesVal) return a->bytes_val();
    throw TraceError(fmt::format("{}: attribute \"{}\" should be a string, got {}", where(), name,
                                 value_kind(*a)));
  }

  // "<file>: node <id> (<name>)": where a message says the problem is.
  std::string where() const {
    return fmt::format("{}: node {} ({})", file_, node_.id(), node_.name());
  }

 private:
  // The last attribute of that name, with or without a value.
  const Attr* named(std::string_view name) const {
    const auto& attrs = node_.attr();
    for (int i = attrs.size(); i-- > 0;) {
      if (attrs[i].name() == name) return &attrs[i];
    }
    return nullptr;
  }
  // Attributes without a value (seen in generated traces: `outputs` with nothing set) are absent.
  const Attr* find(std::string_view name) const {
    const Attr* a = named(name);
    return a && a->value_case() != Attr::VALUE_NOT_SET ? a : nullptr;
  }

  const pb::Node& node_;
  const std::string& file_;
};

// ---- node -> op ---------------------------------------------------------------------------------

constexpr const char* kWorld = "world";

struct RankContext {
  const ChakraOptions& options;
  const std::map<std::string, std::vector<int>>* pg_file;  // null without a process-group file
  std::set<std::string>* unresolved_pgs;                   // pg_names used without a pg file
  bool* uses_world;
  std::size_t* untyped_collectives;  // COMM_COLL nodes without comm_type, replayed as delays
  // ALL_GATHERs whose comm_size is a rank's input, per rank: scaled to the gathered output by
  // their group's size once the groups are known.
  std::map<int, std::set<OpId>>* input_sized_gathers;
  int* rank;  // the rank being read
  OperatorCoverage* coverage;  // recorded GPU kernels, mapped or kept
};

std::uint64_t size_of(const Attrs& at, std::string_view name, std::int64_t v,
                      const ChakraOptions& o) {
  if (v < 0) throw TraceError(fmt::format("{}: \"{}\" is negative ({})", at.where(), name, v));
  const auto u = static_cast<std::uint64_t>(v);
  return o.size_unit == ChakraOptions::SizeUnit::elements ? u * o.element_bytes : u;
}

// The element type of a matmul node: the option, the node's "dtype" attribute, the default.
DType matmul_dtype(const Attrs& at, const ChakraOptions& o) {
  if (o.matmul_dtype) return *o.matmul_dtype;
  const auto d = at.get_string("dtype");
  if (!d) return o.dtype;
  try {
    return parse_dtype(*d);
  } catch (const InputError& e) {
    throw TraceError(fmt::format("{}: attribute \"dtype\": {}", at.where(), e.what()));
  }
}

std::string resolve_group(const Attrs& at, const RankContext& ctx) {
  const auto pg = at.get_string("pg_name");
  if (!pg || pg->empty()) {
    *ctx.uses_world = true;
    return kWorld;
  }
  if (ctx.pg_file) {
    if (!ctx.pg_file->contains(*pg)) {
      throw TraceError(fmt::format("{}: pg_name \"{}\" is not in the process-group file",
                                   at.where(), *pg));
    }
    return *pg;
  }
  ctx.unresolved_pgs->insert(*pg);
  *ctx.uses_world = true;
  return kWorld;
}

Op map_node(const pb::Node& node, const Attrs& at, const RankContext& ctx) {
  const ChakraOptions& o = ctx.options;
  Op op;
  if (auto embedded = at.get_string("trnsim_op")) {
    const Json j = config::parse_json<TraceError>(*embedded, at.where() + " trnsim_op");
    op = op_from_json(j, "", at.where() + " trnsim_op");
    op.id = node.id();
    op.name = node.name();
    return op;
  }
  op.id = node.id();
  op.name = node.name();
  op.source_type = at.get_string("op_type");
  const bool cpu = at.get_int("is_cpu_op").value_or(0) != 0;
  const auto zero_delay = [&] {
    op.kind = OpKind::delay;
    op.duration = Duration(0.0);
  };
  switch (node.type()) {
    case pb::COMP_NODE: {
      if (cpu) {
        zero_delay();
        break;
      }
      if (auto num_ops = at.get_int("num_ops")) {
        if (*num_ops < 0) throw TraceError(fmt::format("{}: num_ops is negative", at.where()));
        op.kind = OpKind::elementwise;
        op.elements = static_cast<std::uint64_t>(*num_ops);
        op.inputs = 1;
        op.dtype = o.dtype;
        if (op.source_type && *op.source_type == "M") op.dtype = matmul_dtype(at, o);
        op.flops = static_cast<double>(*num_ops) *
                   (o.num_ops_unit == ChakraOptions::NumOpsUnit::macs ? 2.0 : 1.0);
        if (auto ts = at.get_int("tensor_size")) op.tensor_bytes = size_of(at, "tensor_size", *ts, o);
        // A matmul ("M") is matrix work: a cube GEMM of the same FLOPs (flops keeps the exact
        // count), not that many element operations, which would take days and gigabytes.
        if (op.source_type == "M" && *op.flops > 0) {
          const auto side = std::uint64_t(std::max(1.0, std::round(std::cbrt(*op.flops / 2))));
          op.kind = OpKind::gemm;
          op.m = op.k = op.n = side;
          op.elements = 0;
        }
      } else {
        op.kind = OpKind::delay;
        op.duration = Duration(static_cast<double>(node.duration_micros()) / 1e6);
      }
      break;
    }
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE:
      if (cpu) {
        zero_delay();
        break;
      }
      op.kind = node.type() == pb::MEM_LOAD_NODE ? OpKind::mem_load : OpKind::mem_store;
      op.bytes = size_of(at, "tensor_size", at.need_int("tensor_size"), o);
      if (op.bytes == 0) zero_delay();  // nothing to move (a trnsim trace refuses 0 B)
      break;
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE: {
      // comm_type is ignored here: ASTRA-sim's custom-collective converter stores the node type
      // (5 or 6) in it, which would read as BROADCAST / ALL_TO_ALL.
      const bool send = node.type() == pb::COMM_SEND_NODE;
      op.kind = send ? OpKind::send : OpKind::recv;
      const auto peer = at.need_int(send ? "comm_dst" : "comm_src");
      if (peer < 0 || peer > std::numeric_limits<int>::max()) {
        throw TraceError(fmt::format("{}: peer rank {} is out of range", at.where(), peer));
      }
      op.peer = static_cast<int>(peer);
      op.bytes = size_of(at, "comm_size", at.need_int("comm_size"), o);
      op.tag = at.get_int("comm_tag").value_or(0);
      break;
    }
    case pb::COMM_COLL_NODE: {
      if (cpu) {  // the host-side launch of a collective; the GPU kernel node carries the work
        zero_delay();
        break;
      }
      const auto type = at.get_int("comm_type");
      if (!type && at.get_int("comm_size")) {
        throw TraceError(fmt::format("{}: COMM_COLL node without comm_type", at.where()));
      }
      if (!type) {  // no kind, no size (Chakra's JSON form): known only by its runtime
        op.kind = OpKind::delay;
        op.duration = Duration(static_cast<double>(node.duration_micros()) / 1e6);
        ++*ctx.untyped_collectives;
        break;
      }
      op.group = resolve_group(at, ctx);
      const auto bytes = [&] { return size_of(at, "comm_size", at.need_int("comm_size"), o); };
      switch (*type) {
        case pb::ALL_REDUCE:
          op.kind = OpKind::all_reduce;
          op.bytes = bytes();
          op.dtype = o.dtype;
          break;
        case pb::ALL_GATHER:
          op.kind = OpKind::all_gather;
          op.bytes = bytes();
          if (o.all_gather_size == ChakraOptions::AllGatherSize::input) {
            (*ctx.input_sized_gathers)[*ctx.rank].insert(op.id);
          }
          break;
        case pb::REDUCE_SCATTER:
        case pb::REDUCE_SCATTER_BLOCK:
          op.kind = OpKind::reduce_scatter;
          op.bytes = bytes();
          op.dtype = o.dtype;
          break;
        case pb::ALL_TO_ALL:
          if (auto v = at.get_int_list("trnsim_send_bytes")) {
            op.kind = OpKind::all_to_all_v;
            for (auto b : *v) op.send_bytes.push_back(size_of(at, "trnsim_send_bytes", b, o));
          } else {
            op.kind = OpKind::all_to_all;
            op.bytes = bytes();
          }
          break;
        case pb::BROADCAST: {
          op.kind = OpKind::broadcast;
          op.bytes = bytes();
          // Chakra has no root field; trnsim writes one as an extension, else the group's first
          // member is the root. The group's members are known only after all files are read, so
          // -1 marks "first member" until then.
          const auto root = at.get_int("trnsim_root");
          op.root = root ? static_cast<int>(*root) : -1;
          break;
        }
        case pb::BARRIER:
          op.kind = OpKind::barrier;
          break;
        default:
          throw TraceError(fmt::format(
              "{}: collective type {} ({}) has no trnsim equivalent", at.where(), *type,
              pb::CollectiveCommType_IsValid(static_cast<int>(*type))
                  ? pb::CollectiveCommType_Name(static_cast<pb::CollectiveCommType>(*type))
                  : "unknown"));
      }
      break;
    }
    default:  // METADATA_NODE and INVALID_NODE only order the others
      if (!pb::NodeType_IsValid(int(node.type()))) {
        // A type this reader does not know might be work; dropping it would change the result.
        throw TraceError(fmt::format("{}: node type {} is not a Chakra node type (known: 0..{})",
                                     at.where(), int(node.type()), int(pb::NodeType_MAX)));
      }
      zero_delay();
      break;
  }
  return op;
}

std::string rank_file(const std::string& prefix, int rank) {
  const std::string et = fmt::format("{}.{}.et", prefix, rank);
  const std::string json = fmt::format("{}.{}.json", prefix, rank);
  return !file_exists(et) && file_exists(json) ? json : et;
}

// Chakra's JSON form: {"workload_graph": [{"Id", "Name", "NodeType", "ctrlDeps", "data_deps",
// "runtime" (us), "is_cpu_op"}, ...]}, as in Chakra's own test data. Becomes the same nodes as the
// protobuf form; keys it does not know are ignored, as the protobuf reader ignores attributes.
RankNodes json_nodes(const std::string& file) {
  const Json j = config::parse_json<TraceError>(read_bytes(file), file);
  if (!j.is_object() || !j.contains("workload_graph") || !j["workload_graph"].is_array()) {
    throw TraceError(fmt::format("{}:/workload_graph: missing: expected Chakra's JSON form, an "
                                 "array of nodes",
                                 file));
  }
  RankNodes nodes;
  const auto& graph = j["workload_graph"];
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const auto& n = graph[i];
    const std::string where = fmt::format("{}:/workload_graph/{}", file, i);
    auto integer = [&](const char* key, bool required) -> std::int64_t {
      if (!n.contains(key)) {
        if (required) throw TraceError(fmt::format("{}/{}: missing: expected an integer", where, key));
        return 0;
      }
      if (!n[key].is_number_integer()) {
        throw TraceError(fmt::format("{}/{}: expected an integer, got {}", where, key, n[key].dump()));
      }
      return n[key].get<std::int64_t>();
    };
    auto ids = [&](const char* key, auto add) {
      if (!n.contains(key)) return;
      if (!n[key].is_array()) {
        throw TraceError(fmt::format("{}/{}: expected an array of node ids", where, key));
      }
      for (std::size_t k = 0; k < n[key].size(); ++k) {
        if (!n[key][k].is_number_integer()) {
          throw TraceError(fmt::format("{}/{}/{}: expected a node id, got {}", where, key, k,
                                       n[key][k].dump()));
        }
        add(n[key][k].get<std::int64_t>());
      }
    };
    if (!n.is_object()) throw TraceError(fmt::format("{}: expected a node object", where));
    pb::Node& node = nodes.add();
    node.set_id(std::uint64_t(integer("Id", true)));
    if (n.contains("Name") && n["Name"].is_string()) node.set_name(n["Name"].get<std::string>());
    const auto type = integer("NodeType", true);
    // Compared in 64 bits first: 2^32 narrowed to an int is 0, INVALID_NODE, a valid type.
    if (type < 0 || type > std::int64_t(pb::NodeType_MAX) || !pb::NodeType_IsValid(int(type))) {
      throw TraceError(fmt::format("{}/NodeType: {} is not a Chakra node type (known: 0..{})",
                                   where, type, int(pb::NodeType_MAX)));
    }
    node.set_type(static_cast<pb::NodeType>(type));
    const auto runtime = integer("runtime", false);
    if (runtime < 0) throw TraceError(fmt::format("{}/runtime: negative ({})", where, runtime));
    node.set_duration_micros(std::uint64_t(runtime));
    ids("ctrlDeps", [&](std::int64_t d) { node.add_ctrl_deps(std::uint64_t(d)); });
    ids("ctrl_deps", [&](std::int64_t d) { node.add_ctrl_deps(std::uint64_t(d)); });
    ids("data_deps", [&](std::int64_t d) { node.add_data_deps(std::uint64_t(d)); });
    ids("dataDeps", [&](std::int64_t d) { node.add_data_deps(std::uint64_t(d)); });
    // Attributes in protobuf's JSON mapping ({"name": "comm_size", "int64Val": "4096"}), as
    // trnsim's JSON export writes them.
    if (n.contains("attr")) {
      if (!n["attr"].is_array()) throw TraceError(fmt::format("{}/attr: expected an array", where));
      for (std::size_t k = 0; k < n["attr"].size(); ++k) {
        const auto st = google::protobuf::util::JsonStringToMessage(n["attr"][k].dump(), node.add_attr());
        if (!st.ok()) {
          throw TraceError(fmt::format("{}/attr/{}: not a Chakra attribute: {}", where, k,
                                       std::string(st.message())));
        }
      }
    }
    if (n.contains("is_cpu_op")) {
      if (!n["is_cpu_op"].is_boolean()) {
        throw TraceError(fmt::format("{}/is_cpu_op: expected true or false", where));
      }
      auto* a = node.add_attr();
      a->set_name("is_cpu_op");
      a->set_bool_val(n["is_cpu_op"].get<bool>());
    }
  }
  return nodes;
}

std::map<std::string, std::vector<int>> read_process_groups(const std::string& path) {
  const Json j = config::parse_json<TraceError>(read_bytes(path, kMaxConfigFileBytes), path);
  if (!j.is_object()) {
    throw TraceError(fmt::format("{}: expected an object mapping pg_name to a list of ranks", path));
  }
  std::map<std::string, std::vector<int>> groups;
  for (const auto& [name, members] : j.items()) {
    const auto ptr = config::json_pointer_append("", name);
    if (!members.is_array()) {
      throw TraceError(fmt::format("{}:{}: expected a list of ranks, got {}", path, ptr,
                                   members.dump()));
    }
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (!members[i].is_number_integer()) {
        throw TraceError(fmt::format("{}:{}/{}: expected a rank (an integer), got {}", path, ptr, i,
                                     members[i].dump()));
      }
      groups[name].push_back(members[i].get<int>());
    }
  }
  return groups;
}

// Dropped edges are summarised (count and a few examples) instead of one warning per edge: the
// real PyTorch trace has thousands of nodes.
void summarise(std::vector<std::string>& warnings, const std::string& file, std::string_view what,
               const std::vector<std::string>& examples, std::size_t count) {
  if (count == 0) return;
  std::string list;
  for (std::size_t i = 0; i < examples.size(); ++i) list += (i ? ", " : "") + examples[i];
  warnings.push_back(fmt::format("{}: {} {}{}", file, count, what,
                                 list.empty() ? "" : fmt::format(", e.g. {}", list)));
}

// Real traces contain cycles (the PyTorch trace has a CPU op and its GPU kernel naming each
// other). A cycle cannot be replayed, so one edge per cycle is dropped: a control edge before a
// data edge (PyTorch converters put the host call tree in ctrl_deps), and an edge to a later
// node before one to an earlier node; ties go to the first edge in run order.
std::pair<std::size_t, std::vector<std::string>> drop_cycle_edges(
    RankTrace& rank, const std::set<std::pair<OpId, OpId>>& ctrl_only) {
  std::vector<std::string> examples;
  const auto dropped = break_cycles(rank, [&](const std::vector<std::size_t>& cycle) {
    int best_score = -1;
    std::pair<std::size_t, OpId> best;
    for (std::size_t i = 0; i < cycle.size(); ++i) {
      const std::size_t user = cycle[(i + 1) % cycle.size()];
      const OpId dep = rank.ops[cycle[i]].id;
      const OpId uid = rank.ops[user].id;
      const bool ctrl = ctrl_only.contains({uid, dep});
      const int score = (ctrl ? 2 : 0) + (dep > uid ? 1 : 0);
      if (score > best_score) {
        best_score = score;
        best = {user, dep};
      }
    }
    if (examples.size() < 3) {
      examples.push_back(fmt::format("node {} -> {}{}", rank.ops[best.first].id, best.second,
                                     best_score >= 2 ? " (ctrl)" : " (data)"));
    }
    return best;
  });
  return {dropped.size(), examples};
}

// A short label for a kernel without a known operator: its name up to the first template or
// argument list ("void at::native::vectorized_elementwise_kernel<...>(...)" -> the function).
std::string kernel_label(const std::string& name) {
  std::string s = name;
  if (s.starts_with("void ")) s = s.substr(5);
  const auto cut = s.find_first_of("<(");
  if (cut != std::string::npos && cut > 0) s = s.substr(0, cut);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return "kernel " + s;
}

bool is_cpu_node(const pb::Node& n) {
  for (const auto& a : n.attr()) {
    if (a.name() == "is_cpu_op") return int_value(a).value_or(0) != 0;
  }
  return false;
}

bool has_attr(const pb::Node& n, std::string_view name) {
  return std::any_of(n.attr().begin(), n.attr().end(),
                     [&](const Attr& a) { return a.name() == name; });
}

// GPU kernels recorded with only a duration (a PyTorch-derived trace's COMP nodes that are not
// CPU ops) become Trainium compute where their operator is known: the kernel's own name when it
// is an aten operator, else the CPU op that launched it (the first CPU op among its data
// dependencies, as Chakra's converter links them). An operator launching several kernels runs
// once, at its first kernel; the others take no time. Kernels of other operators keep their
// recorded duration (times options.unmapped_scale) and are counted by operator.
void map_kernels(const RankNodes& nodes,
                 const std::unordered_map<OpId, std::size_t>& index, RankTrace& rank,
                 const RankContext& ctx) {
  const ChakraOptions& o = ctx.options;
  OperatorCoverage& cov = *ctx.coverage;
  cov.unmapped_scale = o.unmapped_scale;
  // Chakra's converter splits a CPU op that launched n kernels into n nodes "op(0)" .. "op(n-1)"
  // with the same rf_id (record-function id): one operator call, run once.
  const auto call_key = [&](std::size_t i) {
    for (const auto& a : nodes[i].attr()) {
      if (a.name() != "rf_id") continue;
      if (const auto v = int_value(a)) {
        return fmt::format("{}#{}", torch_op_name(nodes[i].name()), *v);
      }
    }
    return fmt::format("node#{}", i);
  };
  std::unordered_map<std::string, std::optional<Op>> by_operator;  // call -> its op
  std::set<std::string> placed;  // calls whose op already runs at an earlier kernel
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const pb::Node& node = nodes[i];
    Op& op = rank.ops[i];
    if (node.type() != pb::COMP_NODE || op.kind != OpKind::delay || is_cpu_node(node) ||
        has_attr(node, "num_ops") || has_attr(node, "trnsim_op")) {
      continue;
    }
    const double seconds = op.duration.si;
    ++cov.kernels;
    cov.recorded_seconds += seconds;
    std::optional<std::size_t> opnode;
    if (is_known_torch_op(torch_op_name(node.name()))) {
      opnode = i;
    } else {
      for (auto d : node.data_deps()) {
        const auto it = index.find(d);
        if (it != index.end() && is_cpu_node(nodes[it->second])) {
          opnode = it->second;
          break;
        }
      }
    }
    const std::string label =
        opnode ? torch_op_name(nodes[*opnode].name()) : kernel_label(node.name());
    if (opnode && o.map_operators) {
      const std::string key = call_key(*opnode);
      auto [it, fresh] = by_operator.try_emplace(key);
      if (fresh) {
        const pb::Node& src = nodes[*opnode];
        const std::string where = fmt::format("node {} ({})", src.id(), src.name());
        try {
          TorchCall call;
          call.op = label;
          call.inputs = parse_torch_args(src.inputs().values(), src.inputs().shapes(),
                                         src.inputs().types(), where + " inputs");
          call.outputs = parse_torch_args(src.outputs().values(), src.outputs().shapes(),
                                          src.outputs().types(), where + " outputs");
          it->second = map_torch_op(call, o.matmul_dtype);
        } catch (const TraceError&) {
          it->second.reset();  // inputs that are not Python literals: kept as recorded
        }
      }
      if (it->second) {
        ++cov.mapped;
        cov.mapped_seconds += seconds;
        auto& e = cov.mapped_ops[label];
        e.seconds += seconds;
        if (placed.insert(key).second) {
          ++e.kernels;
          Op mapped = *it->second;
          mapped.id = op.id;
          mapped.name = nodes[*opnode].name();
          op = std::move(mapped);
        } else {
          op.duration = Duration(0.0);  // folded into the operator's op at its first kernel
        }
        continue;
      }
    }
    auto& e = cov.unmapped_ops[label];
    ++e.kernels;
    e.seconds += seconds;
    if (o.unmapped_scale != 1.0) op.duration = Duration(seconds * o.unmapped_scale);
  }
}

// The units of a trace from its own metadata and shapes (docs/trace-format.md, "Units"):
// - GlobalMetadata schema "symbolic_tensor_network": ASTRA-sim's symbolic tensor graph generator
//   (STAGE), which counts sizes in elements and num_ops in multiply-accumulates;
// - a node whose "outputs" attribute lists (name, element count) pairs summing to its
//   tensor_size: the same generator's shape records, so elements;
// - trnsim's own export (trnsim_metadata) and PyTorch-converted traces (a PyTorch ET schema such
//   as "1.0.1" or "1.1.0-chakra.0.0.4", or pid/start_ts): bytes and FLOPs;
// - nothing that carries a size or num_ops: nothing to tell, bytes and FLOPs.
// Otherwise the units cannot be told: `detected` is false.
ChakraUnits detect_units(const pb::GlobalMetadata& meta, const RankNodes& nodes) {
  ChakraUnits u;
  const auto elements = [&](std::string why) {
    u.size_unit = ChakraOptions::SizeUnit::elements;
    u.num_ops_unit = ChakraOptions::NumOpsUnit::macs;
    u.detected = true;
    u.reason = std::move(why);
    return u;
  };
  const auto bytes = [&](std::string why) {
    u.detected = true;
    u.reason = std::move(why);
    return u;
  };
  std::string schema;
  bool pytorch_meta = false, trnsim = false;
  for (const auto& a : meta.attr()) {
    if (a.name() == "schema" && a.value_case() == Attr::kStringVal) schema = a.string_val();
    if (a.name() == "pid" || a.name() == "start_ts" || a.name() == "finish_ts") pytorch_meta = true;
    if (a.name() == "trnsim_metadata" || a.name() == "trnsim_name") trnsim = true;
  }
  if (schema == "symbolic_tensor_network") {
    return elements("GlobalMetadata schema \"symbolic_tensor_network\": ASTRA-sim's symbolic "
                    "tensor graph generator, which counts elements and multiply-accumulates");
  }
  if (trnsim) return bytes("GlobalMetadata trnsim_metadata: trnsim's own export");
  if ((!schema.empty() && std::isdigit(static_cast<unsigned char>(schema[0]))) || pytorch_meta) {
    return bytes(fmt::format("GlobalMetadata schema \"{}\"{}: written by Chakra's converters (from "
                             "PyTorch execution traces, or ASTRA-sim's), which write bytes",
                             schema, pytorch_meta ? " and pid/start_ts" : ""));
  }
  bool sized = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const pb::Node& n = nodes[i];
    std::optional<std::int64_t> ts;
    const Attr* outputs = nullptr;
    for (const auto& a : n.attr()) {
      if (a.name() == "tensor_size" || a.name() == "comm_size" || a.name() == "num_ops") {
        sized = true;
      }
      if (a.name() == "tensor_size") ts = int_value(a);
      if (a.name() == "outputs" && a.value_case() == Attr::kStringList) outputs = &a;
    }
    if (!ts || !outputs || *ts <= 0) continue;
    // [name, count, name, count, ...] with counts written as numbers ("33554432.0")
    const auto& v = outputs->string_list().values();
    double sum = 0.0;
    bool numbers = v.size() >= 2 && v.size() % 2 == 0;
    for (int k = 1; numbers && k < v.size(); k += 2) {
      try {
        std::size_t used = 0;
        sum += std::stod(v[k], &used);
        numbers = used == v[k].size();
      } catch (const std::exception&) {
        numbers = false;
      }
    }
    if (numbers && sum == static_cast<double>(*ts)) {
      return elements(fmt::format("node {}: its outputs attribute lists {} elements, its "
                                  "tensor_size: sizes count elements (and num_ops MACs), as "
                                  "ASTRA-sim's symbolic tensor graph generator writes them",
                                  n.id(), *ts));
    }
  }
  if (!sized) return bytes("no node carries comm_size, tensor_size or num_ops");
  u.reason = fmt::format("GlobalMetadata {}has no schema or producer that fixes them",
                         meta.version().empty() ? "" : fmt::format("(version \"{}\") ", meta.version()));
  return u;
}

// The ops of one rank from its nodes: map each node, then its dependencies (dropping, with a
// warning, edges to absent nodes, self-edges and the edges that close cycles).
RankTrace build_rank(int r, const RankNodes& nodes, const std::string& file,
                     const RankContext& ctx, std::vector<std::string>& warnings) {
  RankTrace rank;
  rank.rank = r;
  rank.ops.reserve(nodes.size());
  std::unordered_map<OpId, std::size_t> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const pb::Node& node = nodes[i];
    const Attrs at(node, file);
    rank.ops.push_back(map_node(node, at, ctx));
    if (auto [it, fresh] = index.emplace(node.id(), i); !fresh) {
      throw TraceError(fmt::format("{}: node id {} is used twice", file, node.id()));
    }
  }
  map_kernels(nodes, index, rank, ctx);
  // Dependencies: data then control, each once. Edges to absent nodes and to the node itself
  // occur in real traces; they cannot constrain anything, so they are dropped with a warning.
  std::size_t absent = 0, self = 0;
  std::vector<std::string> absent_ex, self_ex;
  std::set<std::pair<OpId, OpId>> ctrl_only;  // (user, dependency) named only by ctrl_deps
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Op& op = rank.ops[i];
    op.deps.clear();
    std::set<OpId> seen;
    bool from_ctrl = false;
    auto add = [&](OpId d) {
      if (!seen.insert(d).second) return;
      if (from_ctrl) ctrl_only.emplace(op.id, d);
      if (d == op.id) {
        if (self_ex.size() < 3) self_ex.push_back(fmt::format("node {}", d));
        ++self;
      } else if (!index.contains(d)) {
        if (absent_ex.size() < 3) absent_ex.push_back(fmt::format("node {} -> {}", op.id, d));
        ++absent;
      } else {
        op.deps.push_back(d);
      }
    };
    for (auto d : nodes[i].data_deps()) add(d);
    from_ctrl = true;
    for (auto d : nodes[i].ctrl_deps()) add(d);
  }
  // A GPU runs the kernels of one stream in launch order; the converter records the stream as
  // the kernel's tid but links each kernel only to its CPU op, so without this the replay would
  // run a whole step's kernels at once.
  if (ctx.options.stream_order) {
    std::map<std::int64_t, std::size_t> last;  // stream -> its latest kernel (index)
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const pb::Node& node = nodes[i];
      if ((node.type() != pb::COMP_NODE && node.type() != pb::COMM_COLL_NODE) || is_cpu_node(node)) {
        continue;
      }
      std::optional<std::int64_t> tid;
      for (const auto& a : node.attr()) {
        if (a.name() == "tid") tid = int_value(a);
      }
      if (!tid) continue;
      if (auto it = last.find(*tid); it != last.end()) {
        Op& op = rank.ops[i];
        const OpId prev = rank.ops[it->second].id;
        if (prev != op.id && std::find(op.deps.begin(), op.deps.end(), prev) == op.deps.end()) {
          op.deps.push_back(prev);
        }
      }
      last[*tid] = i;
    }
  }
  summarise(warnings, file, "dependencies name nodes that are not in the file (dropped)",
            absent_ex, absent);
  summarise(warnings, file, "nodes depend on themselves (dropped)", self_ex, self);
  const auto [cycles, cycle_ex] = drop_cycle_edges(rank, ctrl_only);
  summarise(warnings, file,
            "dependency cycles broken by dropping one edge each (control edges and edges to "
            "later nodes first)",
            cycle_ex, cycles);
  return rank;
}

}  // namespace

bool is_chakra_json(const std::string& path) {
  try {
    const Json j = config::parse_json_checked(read_bytes(path), path);
    return j.is_object() && j.contains("workload_graph");
  } catch (const std::exception&) {
    return false;  // not JSON at all: the native reader reports it
  }
}

Workload load_chakra(const std::string& prefix, const ChakraOptions& options) {
  if (!file_exists(rank_file(prefix, 0))) {
    throw TraceError(fmt::format("{}: no Chakra trace found (expected {})", prefix,
                                 rank_file(prefix, 0)));
  }
  if (options.element_bytes == 0) throw TraceError("Chakra reader: element size must be >= 1 byte");
  Workload w;
  w.name = fs::path(prefix).filename().string();

  std::optional<std::map<std::string, std::vector<int>>> pg_file;
  std::string pg_path = options.process_groups;
  if (pg_path.empty() && file_exists(prefix + ".json")) pg_path = prefix + ".json";
  if (!pg_path.empty()) pg_file = read_process_groups(pg_path);

  std::set<std::string> unresolved_pgs;
  bool uses_world = false;
  std::size_t untyped_collectives = 0;
  std::map<int, std::set<OpId>> input_sized_gathers;
  int reading = 0;  // the rank being read
  OperatorCoverage coverage;
  ChakraOptions opts = options;  // units resolved from rank 0 when not given
  ChakraUnits units;
  const bool units_given = options.size_unit.has_value() || options.num_ops_unit.has_value();
  const auto set_units = [&](const ChakraUnits& u) {
    units = u;
    if (!opts.size_unit) opts.size_unit = u.size_unit;
    if (!opts.num_ops_unit) opts.num_ops_unit = u.num_ops_unit;
  };
  if (!(opts.unmapped_scale >= 0.0) || !std::isfinite(opts.unmapped_scale)) {
    throw TraceError(fmt::format("Chakra reader: the scale of unmapped kernels must be >= 0, got {}",
                                 opts.unmapped_scale));
  }
  RankContext ctx{opts,       pg_file ? &*pg_file : nullptr, &unresolved_pgs, &uses_world,
                  &untyped_collectives, &input_sized_gathers, &reading, &coverage};
  // node index -> node id per rank, for error messages
  std::vector<std::string> files;

  for (int r = 0; file_exists(rank_file(prefix, r)); ++r) {
    const std::string file = rank_file(prefix, r);
    files.push_back(file);
    reading = r;
    if (file.ends_with(".json")) {
      if (r == 0) {
        w.metadata = Json{{"source", "chakra-json"}};
        // Chakra's JSON form records runtimes and names, not sizes: nothing to tell.
        set_units({ChakraOptions::SizeUnit::bytes, ChakraOptions::NumOpsUnit::flops, true,
                   "Chakra's JSON form"});
      }
      w.ranks.push_back(build_rank(r, json_nodes(file), file, ctx, w.warnings));
      continue;
    }
    const std::string data = read_trace_text(file, options.max_file_bytes);
    const auto msgs = frames(data, file);
    if (msgs.empty()) throw TraceError(fmt::format("{}: empty file (no GlobalMetadata)", file));
    pb::GlobalMetadata meta;
    if (!meta.ParseFromArray(msgs[0].data(), static_cast<int>(msgs[0].size()))) {
      throw TraceError(fmt::format("{}: message #0 is not a Chakra GlobalMetadata", file));
    }
    if (r == 0) {
      // Metadata that trnsim exported comes back verbatim; otherwise say where the trace is from.
      Json m = Json::object();
      m["source"] = "chakra";
      if (!meta.version().empty()) m["chakra_version"] = meta.version();
      for (const auto& a : meta.attr()) {
        if (a.value_case() != Attr::kStringVal) continue;
        if (a.name() == "trnsim_name") {
          w.name = a.string_val();
        } else if (a.name() == "schema") {
          m["chakra_schema"] = a.string_val();
        }
      }
      for (const auto& a : meta.attr()) {
        if (a.name() != "trnsim_metadata" || a.value_case() != Attr::kStringVal) continue;
        m = config::parse_json<TraceError>(a.string_val(),
                                           file + ": GlobalMetadata attribute trnsim_metadata");
      }
      w.metadata = std::move(m);
    }

    RankNodes nodes;
    nodes.reserve(msgs.size() - 1);
    for (std::size_t i = 1; i < msgs.size(); ++i) {
      if (!nodes.add().ParseFromArray(msgs[i].data(), static_cast<int>(msgs[i].size()))) {
        throw TraceError(fmt::format("{}: message #{} is not a Chakra Node", file, i));
      }
    }
    if (r == 0) set_units(detect_units(meta, nodes));
    RankTrace rank = build_rank(r, nodes, file, ctx, w.warnings);
    w.ranks.push_back(std::move(rank));
  }

  const int n = w.num_ranks();
  if (pg_file) {
    for (const auto& [name, members] : *pg_file) {
      for (int m : members) {
        if (m < 0 || m >= n) {
          throw TraceError(fmt::format("{}: group \"{}\" names rank {}, but only {} rank files "
                                       "({}.0.et .. {}.{}.et) exist",
                                       pg_path, name, m, n, prefix, prefix, n - 1));
        }
      }
    }
    w.groups = *pg_file;
  }
  if (uses_world && !w.groups.contains(kWorld)) {
    std::vector<int> all(n);
    for (int r = 0; r < n; ++r) all[r] = r;
    w.groups[kWorld] = std::move(all);
  }
  // An all-gather's size is the gathered output (docs/trace-format.md): an input-sized
  // comm_size becomes that times the group's ranks.
  for (const auto& [r, ids] : input_sized_gathers) {
    for (auto& op : w.ranks[std::size_t(r)].ops) {
      if (op.kind != OpKind::all_gather || !ids.contains(op.id)) continue;
      const auto g = w.groups.find(op.group);
      const std::uint64_t members = g == w.groups.end() ? 1 : g->second.size();
      if (members > 0 && op.bytes > std::numeric_limits<std::uint64_t>::max() / members) {
        throw TraceError(fmt::format("{}: rank {} node {}: ALL_GATHER comm_size {} x {} ranks "
                                     "overflows",
                                     prefix, r, op.id, op.bytes, members));
      }
      op.bytes *= members;
    }
  }
  if (coverage.kernels > 0) w.coverage = coverage;
  {
    const bool el = opts.size_unit == ChakraOptions::SizeUnit::elements;
    const bool macs = opts.num_ops_unit == ChakraOptions::NumOpsUnit::macs;
    w.units = fmt::format("sizes in {}, num_ops in {} ({}{})",
                          el ? fmt::format("elements of {} bytes", opts.element_bytes) : "bytes",
                          macs ? "MACs" : "FLOPs",
                          units_given ? "given by the reader's options"
                          : units.detected ? "detected: "
                                           : "not detected: ",
                          units_given ? "" : units.reason);
  }
  if (units_given && units.detected &&
      (units.size_unit != opts.size_unit || units.num_ops_unit != opts.num_ops_unit)) {
    w.warnings.push_back(fmt::format(
        "{}: read as {} and {} as the options ask, but the trace says {} and {} ({})", prefix,
        opts.size_unit == ChakraOptions::SizeUnit::elements ? "elements" : "bytes",
        opts.num_ops_unit == ChakraOptions::NumOpsUnit::macs ? "MACs" : "FLOPs",
        units.size_unit == ChakraOptions::SizeUnit::elements ? "elements" : "bytes",
        units.num_ops_unit == ChakraOptions::NumOpsUnit::macs ? "MACs" : "FLOPs", units.reason));
  }
  if (!units_given && !units.detected) {
    // Both readings' totals, so that the user sees what the choice changes.
    double comm = 0.0, counted = 0.0;
    for (const auto& rank : w.ranks) {
      for (const auto& op : rank.ops) {
        comm += comm_bytes(op);
        if (op.flops) counted += *op.flops;
      }
    }
    w.warnings.push_back(fmt::format(
        "{}: the units of comm_size, tensor_size and num_ops cannot be told ({}): read as bytes "
        "and FLOPs ({:.0f} B moved, {:.0f} FLOP); read as {}-byte elements and MACs they would "
        "be {:.0f} B and {:.0f} FLOP. Pass --chakra-size-unit and --chakra-num-ops to choose",
        prefix, units.reason, comm, counted, opts.element_bytes, comm * opts.element_bytes,
        counted * 2));
  }
  if (untyped_collectives > 0) {
    w.warnings.push_back(fmt::format(
        "{}: {} COMM_COLL nodes without comm_type (no size or kind): replayed as delays of their "
        "recorded duration",
        prefix, untyped_collectives));
  }
  for (const auto& pg : unresolved_pgs) {
    w.warnings.push_back(fmt::format(
        "{}: pg_name \"{}\" is used but there is no process-group file; its collectives run on "
        "group \"{}\" (all {} ranks)",
        prefix, pg, kWorld, n));
  }
  for (auto& rank : w.ranks) {
    for (auto& op : rank.ops) {
      if (op.kind == OpKind::broadcast && op.root < 0) {
        auto g = w.groups.find(op.group);
        if (g != w.groups.end()) op.root = g->second.front();
      }
    }
  }

  w.where = [files](int rank, std::size_t, const Op& op) {
    if (std::size_t(rank) >= files.size()) return fmt::format("rank {} node {} ({})", rank, op.id, op.name);
    return fmt::format("{}: node {} ({})", files[std::size_t(rank)], op.id, op.name);
  };
  validate(w, [&](int rank, std::size_t i) { return locate(w, rank, i); });
  return w;
}

// ---- export -------------------------------------------------------------------------------------

namespace {

Attr* add_attr(pb::Node& node, const std::string& name) {
  Attr* a = node.add_attr();
  a->set_name(name);
  return a;
}

// `groups`: the workload's process groups (an ALL_GATHER's comm_size is a rank's input: the
// gathered bytes over the group's members, as ASTRA-sim and the reader's default read it).
pb::Node to_node(const Op& op, int rank, const ChakraExportOptions& options,
                 const std::map<std::string, std::vector<int>>& groups) {
  pb::Node node;
  node.set_id(op.id);
  node.set_name(op.name);
  for (OpId d : op.deps) node.add_data_deps(d);
  const auto collective = [&](pb::CollectiveCommType type, std::uint64_t size) {
    node.set_type(pb::COMM_COLL_NODE);
    add_attr(node, "is_cpu_op")->set_bool_val(false);
    add_attr(node, "comm_type")->set_int64_val(type);
    add_attr(node, "comm_size")->set_int64_val(static_cast<std::int64_t>(size));
    add_attr(node, "pg_name")->set_string_val(op.group);
  };
  switch (op.kind) {
    case OpKind::gemm:
    case OpKind::elementwise:
    case OpKind::activation:
    case OpKind::reduction:
    case OpKind::softmax:
    case OpKind::norm:
    case OpKind::attention:
      node.set_type(pb::COMP_NODE);
      add_attr(node, "is_cpu_op")->set_bool_val(false);
      add_attr(node, "num_ops")->set_int64_val(std::llround(op_flops(op)));
      if (op.tensor_bytes) {
        add_attr(node, "tensor_size")->set_uint64_val(*op.tensor_bytes);
      }
      // "M" marks matrix work (Chakra's matmul op_type), so that a reader without the embedded
      // op runs a GEMM or an attention as matrix work, not as that many element operations.
      add_attr(node, "op_type")->set_string_val(
          op.source_type ? *op.source_type
          : op.kind == OpKind::gemm || op.kind == OpKind::attention ? std::string("M")
                                                                      : std::string(kind_name(op.kind)));
      break;
    case OpKind::delay:
      node.set_type(pb::COMP_NODE);
      node.set_duration_micros(static_cast<std::uint64_t>(std::llround(op.duration.si * 1e6)));
      if (op.source_type) add_attr(node, "op_type")->set_string_val(*op.source_type);
      break;
    case OpKind::mem_load:
    case OpKind::mem_store:
      node.set_type(op.kind == OpKind::mem_load ? pb::MEM_LOAD_NODE : pb::MEM_STORE_NODE);
      add_attr(node, "tensor_size")->set_uint64_val(op.bytes);
      break;
    case OpKind::all_reduce:
      collective(pb::ALL_REDUCE, op.bytes);
      break;
    case OpKind::all_gather: {
      const auto g = groups.find(op.group);
      const std::uint64_t members = g == groups.end() || g->second.empty() ? 1 : g->second.size();
      collective(pb::ALL_GATHER, op.bytes / members);
      break;
    }
    case OpKind::reduce_scatter:
      collective(pb::REDUCE_SCATTER, op.bytes);
      break;
    case OpKind::all_to_all:
      collective(pb::ALL_TO_ALL, op.bytes);
      break;
    case OpKind::all_to_all_v: {
      collective(pb::ALL_TO_ALL, static_cast<std::uint64_t>(comm_bytes(op)));
      auto* list = add_attr(node, "trnsim_send_bytes")->mutable_int64_list();
      for (auto b : op.send_bytes) list->add_values(static_cast<std::int64_t>(b));
      break;
    }
    case OpKind::broadcast:
      collective(pb::BROADCAST, op.bytes);
      add_attr(node, "trnsim_root")->set_int64_val(op.root);
      break;
    case OpKind::barrier:
      collective(pb::BARRIER, 0);
      break;
    case OpKind::send:
    case OpKind::recv: {
      const bool send = op.kind == OpKind::send;
      node.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
      add_attr(node, "comm_src")->set_int32_val(send ? rank : op.peer);
      add_attr(node, "comm_dst")->set_int32_val(send ? op.peer : rank);
      add_attr(node, "comm_tag")->set_int64_val(op.tag);
      add_attr(node, "comm_size")->set_int64_val(static_cast<std::int64_t>(op.bytes));
      break;
    }
  }
  if (options.embed_native) {
    Json j = op_to_json(op);
    j.erase("name");
    j.erase("deps");
    add_attr(node, "trnsim_op")->set_string_val(j.dump());
  }
  return node;
}

// The process-group file PREFIX.json.
void write_groups(const Workload& w, const std::string& prefix) {
  Json groups = Json::object();
  for (const auto& [name, members] : w.groups) groups[name] = members;
  write_file_atomic(prefix + ".json", groups.dump(2) + "\n");
}

}  // namespace

void export_chakra(const Workload& w, const std::string& prefix,
                   const ChakraExportOptions& options) {
  validate(w);
  for (int r = 0; r < w.num_ranks(); ++r) {
    std::string out;
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    auto* name = meta.add_attr();
    name->set_name("trnsim_name");
    name->set_string_val(w.name);
    auto* md = meta.add_attr();
    md->set_name("trnsim_metadata");
    md->set_string_val(w.metadata.dump());
    const std::string m = meta.SerializeAsString();
    put_varint(out, m.size());
    out += m;
    for (const Op& op : w.ranks[r].ops) {
      const std::string s = to_node(op, r, options, w.groups).SerializeAsString();
      put_varint(out, s.size());
      out += s;
    }
    write_file_atomic(fmt::format("{}.{}.et", prefix, r), options.gzip ? gzip(out) : out);
  }
  write_groups(w, prefix);
}

void export_chakra_json(const Workload& w, const std::string& prefix,
                        const ChakraExportOptions& options) {
  validate(w);
  google::protobuf::util::JsonPrintOptions jo;
  jo.preserve_proto_field_names = false;
  for (int r = 0; r < w.num_ranks(); ++r) {
    Json graph = Json::array();
    for (const Op& op : w.ranks[r].ops) {
      const pb::Node node = to_node(op, r, options, w.groups);
      Json n = {{"Id", node.id()}, {"Name", node.name()}, {"NodeType", int(node.type())}};
      n["data_deps"] = Json(std::vector<std::uint64_t>(node.data_deps().begin(), node.data_deps().end()));
      if (node.duration_micros() > 0) n["runtime"] = node.duration_micros();
      Json attrs = Json::array();
      for (const auto& a : node.attr()) {
        std::string text;
        if (!google::protobuf::util::MessageToJsonString(a, &text, jo).ok()) {
          throw InternalError(fmt::format("Chakra JSON export: attribute {} of node {}", a.name(), op.id));
        }
        attrs.push_back(Json::parse(text));
      }
      n["attr"] = attrs;
      graph.push_back(std::move(n));
    }
    const Json doc = {{"schema", "Chakra JSON form (trnsim export)"},
                      {"trnsim_name", w.name},
                      {"workload_graph", graph}};
    write_file_atomic(fmt::format("{}.{}.json", prefix, r), doc.dump() + "\n");
  }
  write_groups(w, prefix);
}


}  // namespace trnsim::trace
