// SPDX-License-Identifier: MIT
// PyTorch execution traces read directly. The mapping is in docs/traces-from-pytorch.md.
#include "trnsim/trace/pytorch_et.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
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

}  // namespace

std::optional<Workload> load_pytorch_et(const std::string& path, const PytorchEtOptions& options) {
  std::string data;
  try {
    data = read_input_file(path, options.max_file_bytes);
  } catch (const InputError& e) {
    throw TraceError(e.what());
  }
  if (is_gzip(data)) data = gunzip(data, path, options.max_file_bytes);
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

  Workload w;
  w.name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".gz", ".json"}) {
    if (w.name.ends_with(ext)) w.name.resize(w.name.size() - std::string_view(ext).size());
  }
  w.metadata = Json{{"source", "pytorch-et"}};
  if (j["schema"].is_string()) w.metadata["pytorch_et_schema"] = j["schema"];
  w.units = "tensor shapes and dtypes as recorded (PyTorch execution trace)";

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

  RankTrace rank;
  OperatorCoverage cov;
  std::set<std::int64_t> inside;    // nodes under a mapped call: its own work
  std::set<std::int64_t> above;     // nodes with a mapped call under them
  std::vector<std::pair<std::int64_t, std::string>> candidates;  // unmapped calls, in order
  std::size_t collectives = 0, host = 0;
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
    if (name == "record_param_comms") ++collectives;
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
    if (is_known_torch_op(op_name)) {
      if (auto op = map_torch_op(call, options.matmul_dtype)) {
        op->id = static_cast<OpId>(rank.ops.size());
        op->name = name;
        if (!rank.ops.empty()) op->deps = {rank.ops.back().id};
        rank.ops.push_back(std::move(*op));
        inside.insert(id);
        for (auto p = parent; p && above.insert(*p).second; p = parent_id(*p)) {
        }
        ++cov.kernels;
        ++cov.mapped;
        ++cov.mapped_ops[op_name].kernels;
        continue;
      }
    }
    candidates.emplace_back(id, op_name);
  }
  // A call that did not map counts once, at its outermost unmapped call, unless calls under it
  // mapped (then those are its work): a fbgemm embedding lookup counts, its aten internals not.
  std::set<std::int64_t> counted;
  for (const auto& [id, op_name] : candidates) {
    if (above.contains(id)) continue;
    bool under = false;
    // (bounded: a root may name itself as its parent)
    int depth = 0;
    for (auto p = parent_id(id); p && !under && depth < 256; p = parent_id(*p), ++depth) {
      under = counted.contains(*p);
    }
    if (under) continue;
    counted.insert(id);
    ++cov.kernels;
    ++cov.unmapped_ops[op_name].kernels;
  }
  if (host > 0) {
    w.warnings.push_back(fmt::format(
        "{}: {} calls on host (cpu) tensors only: host work, not simulated", path, host));
  }
  if (rank.ops.empty()) {
    // Keep a workload of one rank even when nothing maps (a trace of host work only).
    Op idle;
    idle.kind = OpKind::delay;
    idle.name = "no mapped operator";
    rank.ops.push_back(idle);
  }
  w.ranks.push_back(std::move(rank));
  w.coverage = cov;
  if (collectives > 0) {
    w.warnings.push_back(fmt::format(
        "{}: {} record_param_comms collectives not replayed (the PyTorch ET reader reads compute "
        "only; convert with Chakra's tools for communication)",
        path, collectives));
  }
  validate(w, [&](int, std::size_t k) {
    return fmt::format("{}: op {} ({})", path, k, w.ranks[0].ops[k].name);
  });
  return w;
}

}  // namespace trnsim::trace
