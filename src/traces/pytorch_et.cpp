// SPDX-License-Identifier: MIT
// PyTorch execution traces read directly. The mapping is in docs/traces-from-pytorch.md.
#include "trnsim/trace/pytorch_et.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/trace/gzip.hpp"
#include "trnsim/trace/torch_ops.hpp"

namespace trnsim::trace {

namespace {

// Operators that only describe tensors (views, allocation, scalars): no device work, so not
// counted among the operators left unmapped.
bool no_device_work(const std::string& op) {
  static const std::set<std::string, std::less<>> ops = {
      "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias",
      "aten::as_strided", "aten::empty", "aten::empty_strided", "aten::empty_like",
      "aten::new_empty", "aten::new_empty_strided", "aten::t", "aten::transpose",
      "aten::permute", "aten::expand", "aten::expand_as", "aten::view_as", "aten::slice",
      "aten::select", "aten::narrow", "aten::unsqueeze", "aten::squeeze", "aten::detach",
      "aten::detach_", "detach", "detach_", "aten::alias", "aten::item",
      "aten::_local_scalar_dense", "aten::result_type", "aten::lift_fresh", "aten::lift",
      "aten::size", "aten::stride", "aten::is_same_size", "aten::resize_", "aten::set_",
      "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::flatten",
      "aten::unflatten", "aten::numpy_T", "aten::to", "aten::is_nonzero",
      "aten::is_floating_point", "aten::dim", "aten::record_stream", "aten::resolve_conj",
      "aten::resolve_neg", "aten::pin_memory", "aten::_has_compatible_shallow_copy_type",
      "aten::contiguous", "aten::_to_copy", "aten::type_as", "aten::is_contiguous"};
  return ops.contains(op);
}

bool is_collective(const std::string& name) {
  return name == "record_param_comms" || name.starts_with("nccl:") || name.starts_with("c10d::");
}

// The arguments of one side ("inputs" or "outputs") in either schema: 1.0.1 has flat arrays
// inputs/input_shapes/input_types, later schemas an object {values, shapes, types}.
std::vector<TorchArg> args(const Json& node, const char* side) {
  const std::string s = side;
  if (!node.contains(s)) return {};
  const Json& v = node[s];
  if (v.is_object()) {
    const auto get = [&](const char* k) { return v.contains(k) ? v[k] : Json::array(); };
    return torch_args_from_json(get("values"), get("shapes"), get("types"));
  }
  const std::string one = s == "inputs" ? "input" : "output";
  const auto get = [&](const std::string& k) { return node.contains(k) ? node[k] : Json::array(); };
  return torch_args_from_json(v, get(one + "_shapes"), get(one + "_types"));
}

// True when every tensor the call names lives on the host ("cpu" in the value's sixth field):
// host work, which a Trainium run does not put on the device.
bool host_only(const std::vector<TorchArg>& in, const std::vector<TorchArg>& out) {
  bool any = false;
  const auto scan = [&](const Json& v, const auto& self) -> bool {  // false: a device tensor
    if (!v.is_array()) return true;
    if (v.size() == 6 && v[5].is_string()) {
      any = true;
      return v[5].get<std::string>().starts_with("cpu");
    }
    for (const auto& x : v) {
      if (!self(x, self)) return false;
    }
    return true;
  };
  for (const auto* side : {&in, &out}) {
    for (const auto& a : *side) {
      if (!scan(a.value, scan)) return false;
    }
  }
  return any;
}

std::optional<std::int64_t> parent_of(const Json& node) {
  for (const char* k : {"parent", "ctrl_deps"}) {
    if (node.contains(k) && node[k].is_number_integer()) return node[k].get<std::int64_t>();
  }
  return {};
}


// ---- collectives (record_param_comms) ----------------------------------------------------------

// A record_param_comms call as recorded, before its process group is resolved across the ranks.
// Its inputs are [tensors, seq, process group, rank, collective name, input splits, output
// splits] and, from schema 1.0.2, the group's size (1.0.2) or its global rank start, stride and
// size (1.1.0); the process group is a pointer (1.0.1) or [pg_name, pg_desc].
struct EtComm {
  std::size_t op = 0;        // index in the rank's ops
  std::int64_t node = 0;     // ET node id
  std::string coll;          // the recorded collective name ("allreduce", "all_to_allv", ...)
  std::string pg;            // pg_name, empty when the trace records only a pointer
  std::int64_t rank = -1;    // the recorded rank: the caller's in its group; the root of a
                             // broadcast; the peer of a send or recv
  std::uint64_t in_bytes = 0, out_bytes = 0;
  std::vector<std::uint64_t> recv_bytes;       // all-to-all-v: from each group member
  std::optional<std::size_t> size;             // the group's size when recorded
  std::optional<std::vector<int>> members;     // global ranks, when recorded
};

struct EtGroupRecord {
  std::vector<int> ranks;  // empty: all ranks
  std::optional<std::size_t> size;
};

// What one ET file gives, before the ranks are put together.
struct EtRankRead {
  RankTrace rank;
  OperatorCoverage coverage;
  std::vector<std::string> warnings;
  std::vector<EtComm> comms;
  std::vector<std::int64_t> node_of_op;              // ET node id of each op (error messages)
  std::map<std::string, EtGroupRecord> group_records;  // "## process_group:init ##"
  Json metadata;
  std::string name;
};

// Bytes of the tensors in a recorded value (a tensor [id, storage, offset, numel, element size,
// device], or lists of them).
std::uint64_t et_tensor_bytes(const Json& v, int depth = 0) {
  if (!v.is_array() || depth > 8) return 0;
  if (v.size() == 6 && v[5].is_string() && v[3].is_number_integer() && v[4].is_number_integer()) {
    const auto n = v[3].get<std::int64_t>(), e = v[4].get<std::int64_t>();
    return n > 0 && e > 0 ? static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(e) : 0;
  }
  std::uint64_t sum = 0;
  for (const auto& x : v) sum += et_tensor_bytes(x, depth + 1);
  return sum;
}

// The first dimension of a tensor argument's recorded shape (the unit of c10d's split sizes).
std::optional<std::uint64_t> et_rows(const TorchArg& a) {
  if (!a.shape.is_array() || a.shape.empty() || !a.shape[0].is_number_integer()) return {};
  const auto r = a.shape[0].get<std::int64_t>();
  if (r < 0) return {};
  return static_cast<std::uint64_t>(r);
}

std::optional<std::vector<std::uint64_t>> et_int_list(const Json& v) {
  if (!v.is_array()) return {};
  std::vector<std::uint64_t> out;
  for (const auto& x : v) {
    if (!x.is_number_integer() || x.get<std::int64_t>() < 0) return {};
    out.push_back(static_cast<std::uint64_t>(x.get<std::int64_t>()));
  }
  return out;
}

// Per-peer bytes of an all-to-all-v side: splits (rows of the first dimension) times the bytes of
// a row of the tensor.
std::vector<std::uint64_t> et_split_bytes(const std::vector<std::uint64_t>& splits,
                                          const TorchArg& tensor, const std::string& where,
                                          const char* side) {
  const auto rows = et_rows(tensor);
  const std::uint64_t bytes = et_tensor_bytes(tensor.value);
  std::uint64_t sum = 0;
  for (auto s : splits) sum += s;
  if (!rows || sum != *rows) {
    throw TraceError(fmt::format(
        "{}: {} split sizes [{}] add up to {} rows, but the {} tensor has {} rows", where, side,
        fmt::join(splits, ", "), sum, side, rows ? fmt::format("{}", *rows) : "no recorded"));
  }
  const std::uint64_t row_bytes = *rows == 0 ? 0 : bytes / *rows;
  std::vector<std::uint64_t> out;
  for (auto s : splits) out.push_back(s * row_bytes);
  return out;
}

// The trnsim kind of a recorded collective name; none for the calls that are not collectives
// (wait, init) or that trnsim has no equivalent for (reduce, gather, scatter).
std::optional<OpKind> et_coll_kind(std::string_view c, bool has_splits) {
  const auto has = [&](std::string_view x) { return c.find(x) != std::string_view::npos; };
  if (has("reduce_scatter")) return OpKind::reduce_scatter;
  if (has("allreduce") || has("all_reduce")) return OpKind::all_reduce;
  if (has("allgather") || has("all_gather")) return OpKind::all_gather;
  if (has("alltoall") || has("all_to_all")) {
    return has_splits || c.ends_with("v") ? OpKind::all_to_all_v : OpKind::all_to_all;
  }
  if (c == "broadcast") return OpKind::broadcast;
  if (c == "barrier") return OpKind::barrier;
  if (c == "send") return OpKind::send;
  if (c == "recv") return OpKind::recv;
  return {};
}

// Reads one record_param_comms call; none when it is not a collective (wait) or has no tensors.
// `where` names the file and node.
std::optional<EtComm> et_read_comm(const std::vector<TorchArg>& in,
                                   const std::vector<TorchArg>& out, const std::string& where) {
  // The collective's name is the first string argument after the tensors and the sequence.
  std::size_t c = 0;
  while (c < in.size() && !(in[c].value.is_string() && in[c].type == "String")) ++c;
  if (c >= in.size() || c < 2) return {};
  EtComm comm;
  comm.coll = in[c].value.get<std::string>();
  if (comm.coll == "wait" || comm.coll.starts_with("init") || c < 3) return {};
  if (in[c - 1].value.is_number_integer()) comm.rank = in[c - 1].value.get<std::int64_t>();
  const Json& pg = in[c - 2].value;
  if (pg.is_string()) comm.pg = pg.get<std::string>();
  if (pg.is_array() && !pg.empty() && pg[0].is_string()) comm.pg = pg[0].get<std::string>();
  comm.in_bytes = et_tensor_bytes(in[0].value);
  if (!out.empty()) comm.out_bytes = et_tensor_bytes(out[0].value);
  // Trailing ints: the group's size (1.0.2), or global rank start, stride and size (1.1.0).
  std::vector<std::int64_t> tail;
  for (std::size_t i = c + 3; i < in.size(); ++i) {
    if (in[i].value.is_number_integer()) tail.push_back(in[i].value.get<std::int64_t>());
  }
  if (!tail.empty() && tail.back() > 0) comm.size = static_cast<std::size_t>(tail.back());
  // (bounded, so that start + i x stride stays a rank number)
  if (tail.size() >= 3 && tail.back() > 0 && tail[tail.size() - 3] >= 0 &&
      tail[tail.size() - 3] <= 1 << 20 && tail[tail.size() - 2] > 0 &&
      tail[tail.size() - 2] <= 1 << 20 && tail.back() <= 1 << 20) {
    std::vector<int> m;
    for (std::int64_t i = 0; i < tail.back(); ++i) {
      m.push_back(static_cast<int>(tail[tail.size() - 3] + i * tail[tail.size() - 2]));
    }
    comm.members = std::move(m);
  }
  const auto in_splits = c + 1 < in.size() ? et_int_list(in[c + 1].value) : std::nullopt;
  const auto out_splits = c + 2 < in.size() ? et_int_list(in[c + 2].value) : std::nullopt;
  const bool has_splits = in_splits && !in_splits->empty();
  const auto kind = et_coll_kind(comm.coll, has_splits);
  if (kind == OpKind::all_to_all_v) {
    if (!has_splits || !out_splits || out_splits->size() != in_splits->size()) {
      throw TraceError(fmt::format("{}: {}: expected input and output split sizes of one length "
                                   "per group member",
                                   where, comm.coll));
    }
    if (!comm.size) comm.size = in_splits->size();
  }
  return comm;
}

// The op of a read collective, its group still unresolved (the caller sets group and root).
std::optional<Op> et_comm_op(const EtComm& comm, const std::vector<TorchArg>& in,
                             const std::vector<TorchArg>& out, const std::string& where,
                             std::vector<std::uint64_t>& recv) {
  const auto in_splits = [&]() -> std::vector<std::uint64_t> {
    for (std::size_t c = 0; c < in.size(); ++c) {
      if (in[c].value.is_string() && in[c].type == "String" && c + 2 < in.size()) {
        return et_int_list(in[c + 1].value).value_or(std::vector<std::uint64_t>{});
      }
    }
    return {};
  };
  const auto splits = in_splits();
  const auto kind = et_coll_kind(comm.coll, !splits.empty());
  if (!kind) return {};
  Op op;
  op.kind = *kind;
  op.dtype = in.empty() ? DType::fp32 : torch_dtype(in[0].type);
  op.bytes = comm.in_bytes;
  if (op.kind == OpKind::all_gather && comm.out_bytes > 0) op.bytes = comm.out_bytes;
  if (op.kind == OpKind::all_to_all_v) {
    std::vector<std::uint64_t> outs;
    for (std::size_t c = 0; c < in.size(); ++c) {
      if (in[c].value.is_string() && in[c].type == "String") {
        outs = et_int_list(in[c + 2].value).value_or(std::vector<std::uint64_t>{});
        break;
      }
    }
    op.send_bytes = et_split_bytes(splits, in[0], where, "input");
    if (out.empty()) throw TraceError(fmt::format("{}: {}: no output tensor", where, comm.coll));
    recv = et_split_bytes(outs, out[0], where, "output");
    op.bytes = 0;
  }
  if (op.kind == OpKind::send || op.kind == OpKind::recv) {
    if (comm.rank < 0) throw TraceError(fmt::format("{}: {}: no peer rank", where, comm.coll));
    op.peer = static_cast<int>(comm.rank);
  }
  if (op.kind == OpKind::barrier) op.bytes = 0;
  return op;
}

// "## process_group:init ##": a JSON string listing the job's groups (pg_name, ranks, group_size).
void et_read_group_records(const std::vector<TorchArg>& in, const std::string& where,
                           std::map<std::string, EtGroupRecord>& out) {
  if (in.empty() || !in[0].value.is_string()) return;
  Json j;
  try {
    j = Json::parse(in[0].value.get<std::string>());
  } catch (const std::exception&) {
    throw TraceError(fmt::format("{}: the process-group record is not JSON", where));
  }
  if (!j.is_array()) return;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Json& g = j[i];
    if (!g.is_object() || !g.contains("pg_name") || !g["pg_name"].is_string()) continue;
    EtGroupRecord rec;
    if (g.contains("ranks") && g["ranks"].is_array()) {
      for (const auto& r : g["ranks"]) {
        if (!r.is_number_integer() || r.get<std::int64_t>() < 0 || r.get<std::int64_t>() > 1 << 20) {
          throw TraceError(fmt::format("{}: process group #{}: ranks: expected rank numbers",
                                       where, i));
        }
        rec.ranks.push_back(r.get<int>());
      }
    }
    if (g.contains("group_size") && g["group_size"].is_number_integer() &&
        g["group_size"].get<std::int64_t>() > 0) {
      rec.size = static_cast<std::size_t>(g["group_size"].get<std::int64_t>());
    }
    out[g["pg_name"].get<std::string>()] = std::move(rec);
  }
}


// ---- the Kineto profile ------------------------------------------------------------------------

// An integer the node records at its top level (schema 1.0.1) or in its attrs (later schemas).
std::optional<std::int64_t> et_attr(const Json& node, const char* key) {
  if (node.contains(key) && node[key].is_number_integer()) return node[key].get<std::int64_t>();
  if (node.contains("attrs") && node["attrs"].is_array()) {
    for (const auto& a : node["attrs"]) {
      if (a.is_object() && a.contains("name") && a["name"] == key && a.contains("value") &&
          a["value"].is_number_integer()) {
        return a["value"].get<std::int64_t>();
      }
    }
  }
  return {};
}

// What the Kineto profile gives the ET: the recorded GPU time of the kernels each ET node launched
// (seconds, by node id), and the kernels that could not be linked.
struct EtKinetoLink {
  std::unordered_map<std::int64_t, double> seconds;
  std::size_t orphans = 0;
  double orphan_seconds = 0.0;
  std::string file;
};

std::int64_t kineto_int(const Json& e, const char* key) {
  if (!e.contains("args") || !e["args"].is_object()) return -1;
  const Json& a = e["args"];
  return a.contains(key) && a[key].is_number_integer() ? a[key].get<std::int64_t>() : -1;
}

Json kineto_load(const std::string& path, std::uint64_t max_bytes) {
  Json j = config::parse_json<TraceError>(read_trace_text(path, max_bytes), path);
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array()) {
    throw TraceError(fmt::format("{}:/traceEvents: missing: expected a Kineto profile (the JSON "
                                 "torch.profiler exports, with a traceEvents array)",
                                 path));
  }
  return j;
}

// The rank a Kineto profile says it is (/distributedInfo/rank), or -1.
std::int64_t kineto_rank(const Json& j) {
  if (!j.contains("distributedInfo") || !j["distributedInfo"].is_object()) return -1;
  const Json& d = j["distributedInfo"];
  return d.contains("rank") && d["rank"].is_number_integer() ? d["rank"].get<std::int64_t>() : -1;
}

// Links the profile's kernels to the ET's nodes, as Chakra's trace_link does: a kernel to the CUDA
// runtime call that launched it (the same "correlation"), that call to the innermost CPU operator
// around it on its thread, and that operator to the ET node with its record-function id
// ("Record function id" = the node's rf_id). Profiles that do not record it (PyTorch 2.0) link the
// CPU operators of each thread in order to the ET nodes of one ET thread, by name: each ET thread
// pairs with the profile thread whose operators, in start order, have the same names.
EtKinetoLink kineto_link(const std::string& path, const Json& j, const Json& nodes,
                         const std::string& et_path) {
  EtKinetoLink link;
  link.file = path;
  const Json& ev = j["traceEvents"];
  struct CpuOp {
    std::size_t index;  // in traceEvents
    double ts, dur;
    std::int64_t tid;
  };
  std::map<std::int64_t, std::vector<CpuOp>> cpu_by_tid;
  std::unordered_map<std::int64_t, std::size_t> runtime_by_corr;
  std::vector<std::size_t> kernels;
  bool has_rf = false;
  const auto num = [](const Json& e, const char* k) {
    return e.contains(k) && e[k].is_number() ? e[k].get<double>() : -1.0;
  };
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const Json& e = ev[i];
    if (!e.is_object() || !e.contains("cat") || !e["cat"].is_string()) continue;
    const std::string cat = e["cat"].get<std::string>();
    if (cat == "cpu_op" || cat == "user_annotation") {
      if (!e.contains("name") || !e["name"].is_string() || !e.contains("tid") ||
          !e["tid"].is_number_integer() || num(e, "ts") < 0) {
        continue;
      }
      if (e["name"].get<std::string>().starts_with("ProfilerStep#")) continue;  // not in the ET
      if (kineto_int(e, "Record function id") >= 0) has_rf = true;
      cpu_by_tid[e["tid"].get<std::int64_t>()].push_back(
          {i, num(e, "ts"), std::max(0.0, num(e, "dur")), e["tid"].get<std::int64_t>()});
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (const auto c = kineto_int(e, "correlation"); c >= 0) runtime_by_corr[c] = i;
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      if (num(e, "dur") >= 0) kernels.push_back(i);
    }
  }
  for (auto& [tid, ops] : cpu_by_tid) {
    std::stable_sort(ops.begin(), ops.end(), [](const CpuOp& a, const CpuOp& b) {
      return a.ts < b.ts || (a.ts == b.ts && a.dur > b.dur);
    });
  }
  // Kineto CPU operator (event index) -> ET node id.
  std::unordered_map<std::size_t, std::int64_t> node_of_event;
  if (has_rf) {
    std::unordered_map<std::int64_t, std::int64_t> by_rf;
    for (const auto& n : nodes) {
      if (const auto rf = et_attr(n, "rf_id")) by_rf[*rf] = n["id"].get<std::int64_t>();
    }
    for (const auto& [tid, ops] : cpu_by_tid) {
      for (const auto& op : ops) {
        const auto it = by_rf.find(kineto_int(ev[op.index], "Record function id"));
        if (it != by_rf.end()) node_of_event[op.index] = it->second;
      }
    }
  } else {
    std::map<std::int64_t, std::vector<const Json*>> et_by_tid;
    std::vector<const Json*> sorted;
    for (const auto& n : nodes) sorted.push_back(&n);
    std::sort(sorted.begin(), sorted.end(), [](const Json* a, const Json* b) {
      return (*a)["id"].get<std::int64_t>() < (*b)["id"].get<std::int64_t>();
    });
    for (const Json* n : sorted) {
      const auto tid = et_attr(*n, "tid");
      if (!tid || !et_attr(*n, "rf_id") || (*n)["name"].get<std::string>().starts_with("[pytorch|")) {
        continue;
      }
      et_by_tid[*tid].push_back(n);
    }
    std::set<std::int64_t> used;
    for (const auto& [et_tid, seq] : et_by_tid) {
      std::int64_t best_tid = -1;
      std::size_t best = 0;
      for (const auto& [k_tid, ops] : cpu_by_tid) {
        if (used.contains(k_tid)) continue;
        std::size_t same = 0;
        for (std::size_t i = 0; i < seq.size() && i < ops.size(); ++i) {
          if ((*seq[i])["name"] == ev[ops[i].index]["name"]) ++same;
        }
        if (same > best) {
          best = same;
          best_tid = k_tid;
        }
      }
      // Nine in ten names in order: the same thread of the same run (ties in start time reorder a
      // few).
      if (best_tid < 0 || best * 10 < seq.size() * 9) {
        throw TraceError(fmt::format(
            "{}: does not belong to {}: the {} calls of its thread {} (nodes {} .. {}) match no "
            "thread of the profile in order (best: {} of {} names agree); give the profile "
            "recorded with this execution trace",
            path, et_path, seq.size(), et_tid, (*seq.front())["id"].get<std::int64_t>(),
            (*seq.back())["id"].get<std::int64_t>(), best, seq.size()));
      }
      used.insert(best_tid);
      const auto& ops = cpu_by_tid.at(best_tid);
      for (std::size_t i = 0; i < seq.size() && i < ops.size(); ++i) {
        if ((*seq[i])["name"] == ev[ops[i].index]["name"]) {
          node_of_event[ops[i].index] = (*seq[i])["id"].get<std::int64_t>();
        }
      }
    }
  }
  for (const std::size_t k : kernels) {
    const Json& e = ev[k];
    const double seconds = num(e, "dur") / 1e6;
    std::optional<std::int64_t> node;
    const auto rt = runtime_by_corr.find(kineto_int(e, "correlation"));
    if (rt != runtime_by_corr.end()) {
      const Json& r = ev[rt->second];
      const double t = num(r, "ts");
      const auto ops = r.contains("tid") && r["tid"].is_number_integer()
                           ? cpu_by_tid.find(r["tid"].get<std::int64_t>())
                           : cpu_by_tid.end();
      if (ops != cpu_by_tid.end()) {
        const auto& v = ops->second;
        auto it = std::upper_bound(v.begin(), v.end(), t,
                                   [](double x, const CpuOp& o) { return x < o.ts; });
        // the latest-starting operator around the launch is the innermost
        for (int steps = 0; it != v.begin() && steps < 4096; ++steps) {
          --it;
          if (it->ts + it->dur >= t) {
            if (const auto n = node_of_event.find(it->index); n != node_of_event.end()) {
              node = n->second;
              break;
            }
          }
        }
      }
    }
    if (node) {
      link.seconds[*node] += seconds;
    } else {
      ++link.orphans;
      link.orphan_seconds += seconds;
    }
  }
  return link;
}

// Reads one ET file; none when it is not a PyTorch ET. `kineto`: its Kineto profile, or empty.
std::optional<EtRankRead> et_read_rank(const std::string& path, const PytorchEtOptions& options,
                                       const std::string& kineto = {},
                                       std::int64_t expect_rank = -1,
                                       const std::string* text = nullptr) {
  std::string read;
  if (!text) read = read_trace_text(path, options.max_file_bytes);
  const std::string& data = text ? *text : read;
  const auto first = data.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || data[first] != '{') return {};
  // PyTorch writes "schema" first; a native trace starts with "format".
  if (data.substr(first, 256).find("\"schema\"") == std::string::npos) return {};
  Json j;
  try {
    j = config::parse_json_checked(data, path);
  } catch (const std::exception&) {
    return {};  // not JSON: not an ET (the native reader reports what it is)
  }
  if (!j.is_object() || !j.contains("schema") || !j.contains("nodes")) return {};
  if (!j["nodes"].is_array()) {
    throw TraceError(fmt::format("{}:/nodes: expected an array of nodes", path));
  }
  const Json& nodes = j["nodes"];

  EtRankRead w;
  w.name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".gz", ".json"}) {
    if (w.name.ends_with(ext)) w.name.resize(w.name.size() - std::string_view(ext).size());
  }
  w.metadata = Json{{"source", "pytorch-et"}};
  if (j["schema"].is_string()) w.metadata["pytorch_et_schema"] = j["schema"];

  // Nodes in id order (the order PyTorch recorded them; a call's id is below its sub-calls').
  std::vector<std::size_t> order(nodes.size());
  std::unordered_map<std::int64_t, std::size_t> by_id;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Json& n = nodes[i];
    const std::string where = fmt::format("{}:/nodes/{}", path, i);
    if (!n.is_object() || !n.contains("id") || !n["id"].is_number_integer()) {
      throw TraceError(fmt::format("{}/id: missing: expected an integer node id", where));
    }
    if (!n.contains("name") || !n["name"].is_string()) {
      throw TraceError(fmt::format("{}/name: missing: expected the operator's name", where));
    }
    if (!by_id.emplace(n["id"].get<std::int64_t>(), i).second) {
      throw TraceError(fmt::format("{}/id: node id {} is used twice", where, n["id"].dump()));
    }
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return nodes[a]["id"].get<std::int64_t>() < nodes[b]["id"].get<std::int64_t>();
  });
  std::set<std::int64_t> has_children;
  for (const auto& n : nodes) {
    if (const auto p = parent_of(n)) has_children.insert(*p);
  }

  RankTrace& rank = w.rank;
  OperatorCoverage& cov = w.coverage;
  std::set<std::int64_t> inside;    // nodes under a mapped call: its own work
  std::set<std::int64_t> above;     // nodes with a mapped call under them
  struct Candidate {
    std::int64_t id;
    std::string op_name;
    std::size_t pos;  // ops before it
  };
  std::vector<Candidate> candidates;  // unmapped calls, in order
  std::size_t host = 0, host_comms = 0;
  std::map<std::string, std::size_t> other_comms;  // recorded collectives trnsim has no kind for
  const auto parent_id = [&](std::int64_t id) -> std::optional<std::int64_t> {
    const auto it = by_id.find(id);
    return it == by_id.end() ? std::nullopt : parent_of(nodes[it->second]);
  };
  for (const std::size_t i : order) {
    const Json& n = nodes[i];
    const std::int64_t id = n["id"].get<std::int64_t>();
    const std::string name = n["name"].get<std::string>();
    const auto parent = parent_of(n);
    if (parent && inside.contains(*parent)) {
      inside.insert(id);
      continue;
    }
    if (name == "record_param_comms" || name == "## process_group:init ##") {
      inside.insert(id);  // its nccl:* kernel is the same collective
      const std::string where = fmt::format("{}: node {}", path, id);
      const auto in = args(n, "inputs");
      if (name != "record_param_comms") {
        et_read_group_records(in, where, w.group_records);
        continue;
      }
      const auto out = args(n, "outputs");
      auto comm = et_read_comm(in, out, where);
      if (!comm) continue;
      if (host_only(in, out)) {  // a gloo collective on host tensors
        ++host_comms;
        continue;
      }
      std::vector<std::uint64_t> recv;
      auto op = et_comm_op(*comm, in, out, where, recv);
      if (!op) {
        ++other_comms[comm->coll];
        continue;
      }
      comm->recv_bytes = std::move(recv);
      comm->op = rank.ops.size();
      comm->node = id;
      op->id = static_cast<OpId>(rank.ops.size());
      op->name = fmt::format("{} {}", name, comm->coll);
      op->source_type = comm->coll;
      if (!rank.ops.empty()) op->deps = {rank.ops.back().id};
      rank.ops.push_back(std::move(*op));
      w.node_of_op.push_back(id);
      w.comms.push_back(std::move(*comm));
      continue;
    }
    const std::string op_name = torch_op_name(name);
    // (autograd nodes wrap the aten calls that do a backward's work)
    if (name.find("::") == std::string::npos || no_device_work(op_name) || is_collective(name) ||
        name.starts_with("autograd::") || name.starts_with("torch::autograd::")) {
      continue;
    }
    TorchCall call;
    call.op = op_name;
    call.inputs = args(n, "inputs");
    call.outputs = args(n, "outputs");
    if (host_only(call.inputs, call.outputs)) {
      ++host;
      inside.insert(id);  // host work and its sub-calls
      continue;
    }
    if (!options.keep_durations && is_known_torch_op(op_name)) {
      if (auto op = map_torch_op(call, options.matmul_dtype)) {
        op->id = static_cast<OpId>(rank.ops.size());
        op->name = name;
        if (!rank.ops.empty()) op->deps = {rank.ops.back().id};
        rank.ops.push_back(std::move(*op));
        w.node_of_op.push_back(id);
        inside.insert(id);
        for (auto p = parent; p && above.insert(*p).second; p = parent_id(*p)) {
        }
        ++cov.kernels;
        ++cov.mapped;
        ++cov.mapped_ops[op_name].kernels;
        continue;
      }
    }
    candidates.push_back({id, op_name, rank.ops.size()});
  }
  // A call that did not map counts once, at its outermost unmapped call, unless calls under it
  // mapped (then those are its work): a fbgemm embedding lookup counts, its aten internals not.
  std::set<std::int64_t> counted;
  std::vector<const Candidate*> kept;  // counted candidates, in order
  for (const auto& cand : candidates) {
    const std::int64_t id = cand.id;
    const std::string& op_name = cand.op_name;
    if (above.contains(id)) continue;
    bool under = false;
    // (bounded: a root may name itself as its parent)
    int depth = 0;
    for (auto p = parent_id(id); p && !under && depth < 256; p = parent_id(*p), ++depth) {
      under = counted.contains(*p);
    }
    if (under) continue;
    counted.insert(id);
    kept.push_back(&cand);
    ++cov.kernels;
    ++cov.unmapped_ops[op_name].kernels;
  }
  if (!kineto.empty()) {
    const Json kj = kineto_load(kineto, options.max_file_bytes);
    if (const auto kr = kineto_rank(kj); expect_rank >= 0 && kr >= 0 && kr != expect_rank) {
      throw TraceError(fmt::format("{}:/distributedInfo/rank: the profile is rank {}, but {} is "
                                   "rank {} of the set",
                                   kineto, kr, path, expect_rank));
    }
    const EtKinetoLink link = kineto_link(kineto, kj, nodes, path);
    // Each linked node's time goes to the unit it belongs to: the mapped call, the collective or
    // the counted unmapped call at or above it.
    enum class Unit { mapped, comm, kept_call };
    std::unordered_map<std::int64_t, std::pair<Unit, std::string>> unit;
    for (std::size_t k = 0; k < rank.ops.size(); ++k) {
      const Op& op = rank.ops[k];
      const bool comm = is_collective(op.kind) || is_p2p(op.kind);
      unit[w.node_of_op[k]] = {comm ? Unit::comm : Unit::mapped,
                               comm ? std::string() : torch_op_name(op.name)};
    }
    for (const Candidate* c : kept) unit[c->id] = {Unit::kept_call, c->op_name};
    std::unordered_map<std::int64_t, double> kept_seconds;
    double unattributed = 0.0;  // under calls that are not simulated (host work, views)
    std::map<std::string, std::size_t> unattributed_calls;
    for (const auto& [node, seconds] : link.seconds) {
      std::optional<std::int64_t> at = node;
      int depth = 0;
      while (at && !unit.contains(*at) && depth++ < 256) at = parent_id(*at);
      if (!at || !unit.contains(*at)) {
        unattributed += seconds;
        if (const auto it = by_id.find(node); it != by_id.end()) {
          ++unattributed_calls[nodes[it->second]["name"].get<std::string>()];
        }
        continue;
      }
      const auto& [u, op_name] = unit.at(*at);
      if (u == Unit::comm) continue;  // communication kernels: the collective is simulated
      cov.recorded_seconds += seconds;
      if (u == Unit::mapped) {
        cov.mapped_seconds += seconds;
        cov.mapped_ops[op_name].seconds += seconds;
      } else {
        cov.unmapped_ops[op_name].seconds += seconds;
        kept_seconds[*at] += seconds;
      }
    }
    cov.unmapped_scale = options.unmapped_scale;
    if (link.orphans > 0) {
      w.warnings.push_back(fmt::format(
          "{}: {} kernels ({:.6g} s of recorded GPU time) not linked to an operator of {}, not "
          "simulated",
          kineto, link.orphans, link.orphan_seconds, path));
    }
    if (!unattributed_calls.empty()) {
      std::size_t calls = 0;
      std::vector<std::string> names;
      for (const auto& [name, k] : unattributed_calls) {
        calls += k;
        if (names.size() < 3) names.push_back(fmt::format("{} {}", name, k));
      }
      w.warnings.push_back(fmt::format(
          "{}: {} calls launched kernels ({:.6g} s of recorded GPU time) but are not simulated "
          "(host work or no device work), e.g. {}",
          kineto, calls, unattributed, fmt::join(names, ", ")));
    }
    // The unmapped calls with recorded GPU time run as that time (x the scale), in their place.
    std::vector<Op> ops;
    std::vector<std::int64_t> node_of;
    std::vector<std::size_t> new_index(rank.ops.size());
    std::size_t next = 0;
    const auto take_until = [&](std::size_t pos) {
      for (; next < pos && next < rank.ops.size(); ++next) {
        new_index[next] = ops.size();
        ops.push_back(std::move(rank.ops[next]));
        node_of.push_back(w.node_of_op[next]);
      }
    };
    for (const Candidate* c : kept) {
      const auto t = kept_seconds.find(c->id);
      if (t == kept_seconds.end() || t->second <= 0.0) continue;
      take_until(c->pos);
      Op d;
      d.kind = OpKind::delay;
      d.name = c->op_name;
      d.source_type = "recorded GPU time";
      d.duration = Duration(t->second * options.unmapped_scale);
      ops.push_back(std::move(d));
      node_of.push_back(c->id);
    }
    take_until(rank.ops.size());
    for (std::size_t k = 0; k < ops.size(); ++k) {
      ops[k].id = static_cast<OpId>(k);
      ops[k].deps.clear();
      if (k > 0) ops[k].deps = {static_cast<OpId>(k - 1)};
    }
    for (auto& c : w.comms) c.op = new_index[c.op];
    rank.ops = std::move(ops);
    w.node_of_op = std::move(node_of);
    w.metadata["kineto"] = std::filesystem::path(kineto).filename().string();
  }
  if (host > 0) {
    w.warnings.push_back(fmt::format(
        "{}: {} calls on host (cpu) tensors only: host work, not simulated", path, host));
  }
  if (host_comms > 0) {
    w.warnings.push_back(fmt::format(
        "{}: {} collectives on host (cpu) tensors only (gloo): host work, not simulated", path,
        host_comms));
  }
  if (!other_comms.empty()) {
    std::size_t count = 0;
    std::vector<std::string> names;
    for (const auto& [c, k] : other_comms) {
      count += k;
      names.push_back(fmt::format("{} {}", c, k));
    }
    w.warnings.push_back(fmt::format("{}: {} collectives trnsim has no equivalent for, not "
                                     "replayed, e.g. {}",
                                     path, count, fmt::join(names, ", ")));
  }
  return w;
}

}  // namespace

namespace {

// "dlrm_eg_0" .. "dlrm_eg_7" -> "dlrm_eg": the name the rank files share.
std::string et_common_name(const std::vector<EtRankRead>& reads) {
  std::string name = reads.front().name;
  for (const auto& r : reads) {
    std::size_t k = 0;
    while (k < name.size() && k < r.name.size() && name[k] == r.name[k]) ++k;
    name.resize(k);
  }
  while (!name.empty() && (std::isdigit(static_cast<unsigned char>(name.back())) ||
                           name.back() == '_' || name.back() == '.' || name.back() == '-')) {
    name.pop_back();
  }
  return name.empty() ? reads.front().name : name;
}

// The ranks' reads as one workload: process groups resolved, collectives checked across ranks.
Workload et_assemble(const std::vector<std::string>& files, std::vector<EtRankRead> reads) {
  const int n = static_cast<int>(reads.size());
  Workload w;
  w.name = n == 1 ? reads[0].name : et_common_name(reads);
  w.metadata = reads[0].metadata;
  if (n > 1) w.metadata["pytorch_et_ranks"] = n;
  w.units = "tensor shapes and dtypes as recorded (PyTorch execution trace)";
  std::map<std::string, EtGroupRecord> records;
  for (const auto& rd : reads) {
    for (const auto& [pg, rec] : rd.group_records) records.emplace(pg, rec);
  }
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
  // One rank read of a larger job: the job's size is the largest group any record gives.
  std::size_t job = 1;
  if (n == 1) {
    for (const auto& c : reads[0].comms) {
      job = std::max({job, c.size.value_or(1), c.members ? c.members->size() : std::size_t(1)});
    }
    for (const auto& [pg, rec] : records) {
      job = std::max({job, rec.size.value_or(1), rec.ranks.size()});
    }
  }
  std::size_t lone = 0, lone_p2p = 0;
  for (int r = 0; r < n; ++r) {
    EtRankRead& rd = reads[static_cast<std::size_t>(r)];
    for (EtComm& c : rd.comms) {
      Op& op = rd.rank.ops[c.op];
      const std::string where = fmt::format("{}: node {}", files[static_cast<std::size_t>(r)], c.node);
      std::string name = c.pg.empty() ? "world" : "pg" + c.pg;
      std::optional<std::vector<int>> members = c.members;
      std::optional<std::size_t> size = c.size;
      if (const auto it = records.find(c.pg); !c.pg.empty() && it != records.end()) {
        if (!it->second.ranks.empty()) members = it->second.ranks;
        if (!size) size = it->second.size;
      }
      if (members) size = members->size();
      const bool p2p = op.kind == OpKind::send || op.kind == OpKind::recv;
      std::vector<int> group;
      if (n == 1 && job > 1) {
        // One rank of a larger job: the collective runs on this rank alone.
        ++lone;
        if (p2p) {
          ++lone_p2p;
          op = Op{op.id, op.name, OpKind::delay, op.deps};
          continue;
        }
        if (op.kind == OpKind::all_to_all_v) {
          const std::size_t own =
              c.rank >= 0 && std::size_t(c.rank) < op.send_bytes.size() ? std::size_t(c.rank) : 0;
          op.send_bytes = {op.send_bytes[own]};
          c.recv_bytes = {c.recv_bytes[own]};
        }
        group = {0};
      } else if (members) {
        for (int m : *members) {
          if (m < 0 || m >= n) {
            throw TraceError(fmt::format(
                "{}: {} runs on process group \"{}\" of ranks [{}], but {} rank files were given "
                "(ranks 0 .. {})",
                where, c.coll, c.pg, fmt::join(*members, ", "), n, n - 1));
          }
        }
        group = *members;
      } else {
        if (size && *size != std::size_t(n)) {
          throw TraceError(fmt::format(
              "{}: {} runs on a group of {} ranks, but {} rank files were given and the trace "
              "does not record which ranks are in the group",
              where, c.coll, *size, n));
        }
        group = all;
      }
      const auto pos_it = std::find(group.begin(), group.end(), r);
      if (pos_it == group.end()) {
        throw TraceError(fmt::format("{}: this file is rank {} of the set, but its {} runs on "
                                     "process group \"{}\" of ranks [{}]",
                                     where, r, c.coll, c.pg, fmt::join(group, ", ")));
      }
      const auto pos = static_cast<std::int64_t>(pos_it - group.begin());
      const auto global = [&](const char* what) {
        if (c.rank < 0 || std::size_t(c.rank) >= group.size()) {
          throw TraceError(fmt::format("{}: {}: the recorded {} {} is not a rank of its group of {}",
                                       where, c.coll, what, c.rank, group.size()));
        }
        return group[std::size_t(c.rank)];
      };
      if (p2p) {
        op.peer = n == 1 ? 0 : global("peer");
        continue;
      }
      if (n > 1 && op.kind != OpKind::broadcast && c.rank >= 0 && c.rank != pos) {
        throw TraceError(fmt::format(
            "{}: {} records rank {} in its group, but this file is rank {} of the set (position "
            "{} in group \"{}\"): the files are not in rank order, or not of one job",
            where, c.coll, c.rank, r, pos, name));
      }
      if (op.kind == OpKind::broadcast) op.root = n == 1 ? 0 : global("root");
      if (op.kind == OpKind::all_to_all_v && op.send_bytes.size() != group.size()) {
        throw TraceError(fmt::format("{}: {} has {} split sizes for a group of {} ranks", where,
                                     c.coll, op.send_bytes.size(), group.size()));
      }
      if (op.kind == OpKind::all_gather && c.out_bytes == 0) {
        op.bytes = c.in_bytes * group.size();  // the gathered result (docs/trace-format.md)
      }
      const auto [it, fresh] = w.groups.emplace(name, group);
      if (!fresh && it->second != group) {
        throw TraceError(fmt::format("{}: process group \"{}\" is ranks [{}] here but [{}] in an "
                                     "earlier collective",
                                     where, name, fmt::join(group, ", "),
                                     fmt::join(it->second, ", ")));
      }
      op.group = name;
    }
  }
  // An all-to-all-v's receive splits are what its peers send it: the k-th collective of a group on
  // each member (kinds and counts that differ are reported by validate()).
  if (n > 1) {
    std::map<std::string, std::map<int, std::vector<const EtComm*>>> issued;
    for (int r = 0; r < n; ++r) {
      for (const auto& c : reads[std::size_t(r)].comms) {
        const Op& op = reads[std::size_t(r)].rank.ops[c.op];
        if (is_collective(op.kind)) issued[op.group][r].push_back(&c);
      }
    }
    for (const auto& [name, per_rank] : issued) {
      const auto& group = w.groups.at(name);
      for (std::size_t i = 0; i < group.size(); ++i) {
        const int r = group[i];
        const auto& mine = per_rank.count(r) ? per_rank.at(r) : std::vector<const EtComm*>{};
        for (std::size_t k = 0; k < mine.size(); ++k) {
          const Op& a = reads[std::size_t(r)].rank.ops[mine[k]->op];
          if (a.kind != OpKind::all_to_all_v) continue;
          for (std::size_t j = 0; j < group.size(); ++j) {
            const int p = group[j];
            if (!per_rank.count(p) || per_rank.at(p).size() <= k) continue;
            const EtComm* theirs = per_rank.at(p)[k];
            const Op& b = reads[std::size_t(p)].rank.ops[theirs->op];
            if (b.kind != OpKind::all_to_all_v || b.send_bytes.size() != group.size() ||
                mine[k]->recv_bytes.size() != group.size()) {
              continue;
            }
            if (mine[k]->recv_bytes[j] != b.send_bytes[i]) {
              throw TraceError(fmt::format(
                  "{}: node {}: {} receives {} bytes from rank {}, but {}: node {} sends it {} "
                  "bytes (group \"{}\", collective #{})",
                  files[std::size_t(r)], mine[k]->node, mine[k]->coll, mine[k]->recv_bytes[j], p,
                  files[std::size_t(p)], theirs->node, b.send_bytes[i], name, k));
            }
          }
        }
      }
    }
  }
  OperatorCoverage cov;
  for (int r = 0; r < n; ++r) {
    EtRankRead& rd = reads[std::size_t(r)];
    rd.rank.rank = r;
    if (rd.rank.ops.empty()) {
      // Keep a rank even when nothing maps (a trace of host work only).
      Op idle;
      idle.kind = OpKind::delay;
      idle.name = "no mapped operator";
      rd.rank.ops.push_back(idle);
      rd.node_of_op.push_back(-1);
    }
    w.ranks.push_back(std::move(rd.rank));
    cov.add(rd.coverage);
    for (auto& text : rd.warnings) w.warnings.push_back(std::move(text));
  }
  w.coverage = cov;
  if (lone > 0) {
    w.warnings.push_back(fmt::format(
        "{}: {} collectives of a {}-rank job run on the 1 rank read, moving no data between "
        "ranks{}; give every rank's file (their directory or file prefix) to replay them across "
        "ranks",
        files[0], lone, job,
        lone_p2p > 0 ? fmt::format(" ({} sends and receives are left out)", lone_p2p) : ""));
  }
  validate(w, [&](int r, std::size_t k) {
    const auto& rd = reads[std::size_t(r)];
    return fmt::format("{}: node {} ({})", files[std::size_t(r)],
                       k < rd.node_of_op.size() ? rd.node_of_op[k] : -1,
                       w.ranks[std::size_t(r)].ops[k].name);
  });
  return w;
}

// The Kineto profile of rank r of n: the file, or the profile in the directory whose
// /distributedInfo/rank is r (the only one, for a single ET). Empty without a profile.
std::vector<std::string> kineto_files(const std::string& kineto, int n) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (kineto.empty()) return std::vector<std::string>(std::size_t(n));
  if (fs::is_regular_file(kineto, ec)) {
    if (n != 1) {
      throw TraceError(fmt::format("--kineto {}: one profile for {} rank files: give the directory "
                                   "of the ranks' profiles",
                                   kineto, n));
    }
    return {kineto};
  }
  if (!fs::is_directory(kineto, ec)) {
    throw TraceError(fmt::format("--kineto {}: no such file or directory", kineto));
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kineto, ec)) {
    const std::string f = e.path().filename().string();
    if (e.is_regular_file(ec) && (f.ends_with(".json") || f.ends_with(".json.gz"))) {
      names.push_back(e.path().string());
    }
  }
  std::sort(names.begin(), names.end());
  if (n == 1) {
    if (names.size() != 1) {
      throw TraceError(fmt::format("--kineto {}: {} profiles for one execution trace: give the "
                                   "profile's file",
                                   kineto, names.size()));
    }
    return names;
  }
  std::vector<std::string> out(static_cast<std::size_t>(n));
  for (const auto& f : names) {
    const std::int64_t r = kineto_rank(kineto_load(f, std::uint64_t(4) << 30));
    if (r < 0 || r >= n) {
      throw TraceError(fmt::format("{}:/distributedInfo/rank: {}: expected the rank (0 .. {}) of "
                                   "one of the {} execution traces",
                                   f, r < 0 ? std::string("missing") : std::to_string(r), n - 1,
                                   n));
    }
    if (!out[std::size_t(r)].empty()) {
      throw TraceError(fmt::format("--kineto {}: two profiles of rank {}: {} and {}", kineto, r,
                                   out[std::size_t(r)], f));
    }
    out[std::size_t(r)] = f;
  }
  for (int r = 0; r < n; ++r) {
    if (out[std::size_t(r)].empty()) {
      throw TraceError(fmt::format("--kineto {}: no profile of rank {}", kineto, r));
    }
  }
  return out;
}

}  // namespace

std::optional<Workload> load_pytorch_et(const std::string& path, const PytorchEtOptions& options) {
  auto rd = et_read_rank(path, options, kineto_files(options.kineto, 1)[0]);
  if (!rd) return {};
  std::vector<EtRankRead> reads;
  reads.push_back(std::move(*rd));
  return et_assemble({path}, std::move(reads));
}

std::optional<Workload> load_pytorch_et_text(const std::string& text, const std::string& path,
                                             const PytorchEtOptions& options) {
  auto rd = et_read_rank(path, options, kineto_files(options.kineto, 1)[0], -1, &text);
  if (!rd) return {};
  std::vector<EtRankRead> reads;
  reads.push_back(std::move(*rd));
  return et_assemble({path}, std::move(reads));
}

Workload load_pytorch_et_ranks(const std::vector<std::string>& files,
                               const PytorchEtOptions& options) {
  if (files.empty()) throw TraceError("PyTorch execution traces: no rank files");
  std::vector<EtRankRead> reads;
  const auto profiles = kineto_files(options.kineto, static_cast<int>(files.size()));
  for (const auto& f : files) {
    const std::size_t r = reads.size();
    auto rd = et_read_rank(f, options, profiles[r],
                           files.size() > 1 ? static_cast<std::int64_t>(r) : -1);
    if (!rd) {
      throw TraceError(fmt::format("{}: not a PyTorch execution trace (expected a JSON object "
                                   "with \"schema\" and a \"nodes\" array), as rank {} of the set",
                                   f, reads.size()));
    }
    reads.push_back(std::move(*rd));
  }
  return et_assemble(files, std::move(reads));
}

std::vector<std::string> pytorch_et_rank_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    // name -> rank -> files
    std::map<std::string, std::map<long, std::vector<std::string>>> by_name;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (!e.is_regular_file(ec)) continue;
      std::string stem = e.path().filename().string();
      if (stem.ends_with(".gz")) stem.resize(stem.size() - 3);
      if (!stem.ends_with(".json")) continue;
      stem.resize(stem.size() - 5);
      std::size_t d = stem.size();
      while (d > 0 && std::isdigit(static_cast<unsigned char>(stem[d - 1]))) --d;
      if (d == stem.size() || stem.size() - d > 6) continue;
      by_name[stem.substr(0, d)][std::stol(stem.substr(d))].push_back(e.path().string());
    }
    if (by_name.empty()) return {};
    if (by_name.size() > 1) {
      std::vector<std::string> names;
      for (const auto& [name, ranks] : by_name) names.push_back(name + "<rank>");
      throw TraceError(fmt::format("{}: numbered JSON files of several names ({}): give the "
                                   "prefix of one set ({}/NAME)",
                                   path, fmt::join(names, ", "), path));
    }
    std::vector<std::string> out;
    long expect = 0;
    for (auto& [r, list] : by_name.begin()->second) {
      if (r != expect) {
        throw TraceError(fmt::format("{}: rank files {}<rank>.json: rank {} is missing (the next "
                                     "is rank {})",
                                     path, by_name.begin()->first, expect, r));
      }
      std::sort(list.begin(), list.end());
      if (list.size() > 1) {
        throw TraceError(fmt::format("{}: rank {} has several files: {}", path, r,
                                     fmt::join(list, ", ")));
      }
      out.push_back(list[0]);
      ++expect;
    }
    return out;
  }
  if (fs::exists(path, ec)) return {};
  std::vector<std::string> out;
  for (int r = 0;; ++r) {
    std::vector<std::string> hits;
    for (const char* sep : {"", "."}) {
      for (const char* ext : {".json", ".json.gz"}) {
        const std::string f = fmt::format("{}{}{}{}", path, sep, r, ext);
        if (fs::is_regular_file(f, ec)) hits.push_back(f);
      }
    }
    if (hits.size() > 1) {
      throw TraceError(fmt::format("{}: rank {} has several files: {}", path, r,
                                   fmt::join(hits, ", ")));
    }
    if (hits.empty()) break;
    out.push_back(hits[0]);
  }
  return out;
}

}  // namespace trnsim::trace
