// SPDX-License-Identifier: MIT
// Native JSON traces: read with the config visitor framework (so unknown keys are rejected with a
// suggestion and errors carry file and JSON pointer), written deterministically.
#include "trnsim/trace/native.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <fstream>
#include <sstream>

#include "trnsim/config/json_stream.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/trace/gzip.hpp"

namespace trnsim::trace {

namespace {

using config::JsonReader;
using config::Provenance;

constexpr std::string_view kFormat = "trnsim-trace";
constexpr int kVersion = 1;

struct RankOpsJson {
  int rank = 0;
  std::vector<Op> ops;
  template <class V>
  void visit(V& v) {
    v.field("rank", rank, "the rank these ops run on", config::Required{});
    v.field("ops", ops, "the rank's operations", config::Required{});
  }
};

// The header fields the visitor framework can read; metadata and groups are free-form and read
// by hand.
struct HeaderJson {
  std::string format;
  int version = 0;
  std::string name;
  int ranks = 0;
  std::vector<RankOpsJson> rank_ops;
  template <class V>
  void visit(V& v) {
    v.field("format", format, "must be \"trnsim-trace\"", config::Required{});
    v.field("version", version, "format version", config::Required{});
    v.field("name", name, "workload name");
    v.field("ranks", ranks, "number of ranks", config::Required{});
    v.field("rank_ops", rank_ops, "ops per rank", config::Required{});
  }
};

[[noreturn]] void fail(const std::string& origin, const std::string& pointer,
                       std::string_view message) {
  throw TraceError(fmt::format("{}:{}: {}", origin, pointer.empty() ? "/" : pointer, message));
}

// Keys are emitted in a fixed order readers find natural: id, op, name, then alphabetical.
nlohmann::ordered_json ordered_op(const Json& j) {
  nlohmann::ordered_json o;
  for (const char* key : {"id", "op", "name"}) {
    if (j.contains(key)) o[key] = j.at(key);
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "id" && k != "op" && k != "name") o[k] = v;
  }
  return o;
}

}  // namespace

Json op_to_json(const Op& op) {
  Json j = Json::object();
  config::JsonWriter w(j);
  const_cast<Op&>(op).visit(w);
  if (op.name.empty()) j.erase("name");
  if (op.deps.empty()) j.erase("deps");
  return j;
}

Op op_from_json(const Json& j, const std::string& pointer, const std::string& origin) {
  Provenance prov;
  prov.record("", origin);
  Op op;
  try {
    JsonReader::read(j, pointer, prov, op);
  } catch (const ConfigError& e) {
    throw TraceError(e.what());
  }
  return op;
}

Workload parse_native(const std::string& text, const std::string& origin) {
  // Each op is read as soon as the parser has it and leaves the document at once: the reader
  // holds the trace's text, its ops, and one op's JSON, never the document of all of them (the
  // default step's 432,240 ops took 760 MB as a DOM). Op errors wait until the header is
  // checked: a file of another format or version says so first, as it did when the ops were
  // read with the header.
  std::vector<std::vector<Op>> streamed;  // by /rank_ops index
  std::optional<TraceError> op_error;
  config::ElementSink sink{{"rank_ops", "*", "ops", "*"}, [&](Json&& j, const std::string& ptr) {
    if (op_error) return;
    // ptr = "/rank_ops/<i>/ops/<k>"
    const std::size_t i = std::stoul(ptr.substr(10, ptr.find('/', 10) - 10));
    if (streamed.size() <= i) streamed.resize(i + 1);
    try {
      streamed[i].push_back(op_from_json(j, ptr, origin));
    } catch (const TraceError& e) {
      op_error = e;
    }
  }};
  Json root;
  try {
    root = config::parse_json_checked(text, origin, sink);
  } catch (const TraceError&) {
    throw;
  } catch (const InputError& e) {
    throw TraceError(e.what());
  }
  if (!root.is_object()) fail(origin, "", fmt::format("expected an object, got {}", root.type_name()));

  static const std::vector<std::string> keys = {"format", "version", "name",    "metadata",
                                                "ranks",  "groups",  "rank_ops"};
  for (const auto& [k, v] : root.items()) {
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
    const auto near = config::nearest_key(k, keys);
    fail(origin, config::json_pointer_append("", k),
         fmt::format("unknown key \"{}\"{}", k,
                     near.empty() ? "" : fmt::format("; did you mean \"{}\"?", near)));
  }
  // Check format and version before anything else: a file of another format or version should
  // say so rather than complain about its fields.
  if (!root.contains("format")) fail(origin, "/format", "missing required key \"format\"");
  if (root["format"] != kFormat) {
    fail(origin, "/format",
         fmt::format("expected \"{}\", got {}", kFormat, root["format"].dump()));
  }
  if (!root.contains("version")) fail(origin, "/version", "missing required key \"version\"");
  if (root["version"] != kVersion) {
    fail(origin, "/version",
         fmt::format("unsupported trace version {} (this reader supports {})",
                     root["version"].dump(), kVersion));
  }

  // The header is the root without metadata and groups: taken apart, not copied (a copy of the
  // ops of a 58 MB trace costs a second of time and its memory twice).
  std::optional<Json> metadata, groups;
  if (auto it = root.find("metadata"); it != root.end()) {
    metadata = std::move(*it);
    root.erase(it);
  }
  if (auto it = root.find("groups"); it != root.end()) {
    groups = std::move(*it);
    root.erase(it);
  }
  HeaderJson h;
  Provenance prov;
  prov.record("", origin);
  try {
    JsonReader::read(root, "", prov, h);
  } catch (const ConfigError& e) {
    throw TraceError(e.what());
  }
  if (op_error) throw *op_error;
  for (std::size_t i = 0; i < h.rank_ops.size() && i < streamed.size(); ++i) {
    h.rank_ops[i].ops = std::move(streamed[i]);
  }

  Workload w;
  w.version = h.version;
  w.name = h.name;
  if (metadata) {
    if (!metadata->is_object()) {
      fail(origin, "/metadata", fmt::format("expected an object, got {}", metadata->dump()));
    }
    w.metadata = std::move(*metadata);
  }
  if (h.ranks < 1) fail(origin, "/ranks", fmt::format("expected an integer >= 1, got {}", h.ranks));
  // Every rank needs an entry of rank_ops; checking that first keeps "ranks": 2147483647 from
  // allocating tables for ranks that are not there.
  if (std::size_t(h.ranks) > h.rank_ops.size()) {
    std::set<int> given;
    for (const auto& r : h.rank_ops) given.insert(r.rank);
    int missing = 0;
    while (given.contains(missing)) ++missing;
    fail(origin, "/rank_ops", fmt::format("no entry for rank {}", missing));
  }
  if (groups) {
    const Json& g = *groups;
    if (!g.is_object()) {
      fail(origin, "/groups", fmt::format("expected an object of rank lists, got {}", g.dump()));
    }
    for (const auto& [name, members] : g.items()) {
      const auto ptr = config::json_pointer_append("/groups", name);
      if (!members.is_array()) {
        fail(origin, ptr, fmt::format("expected an array of ranks, got {}", members.dump()));
      }
      std::vector<int> list;
      for (std::size_t i = 0; i < members.size(); ++i) {
        if (!members[i].is_number_integer()) {
          fail(origin, fmt::format("{}/{}", ptr, i),
               fmt::format("expected a rank (an integer), got {}", members[i].dump()));
        }
        const auto m = members[i].get<std::int64_t>();
        if (m < 0 || m >= h.ranks) {
          fail(origin, fmt::format("{}/{}", ptr, i),
               fmt::format("rank {} is out of range (ranks are 0..{})", m, h.ranks - 1));
        }
        if (std::find(list.begin(), list.end(), m) != list.end()) {
          fail(origin, fmt::format("{}/{}", ptr, i), fmt::format("rank {} is listed twice", m));
        }
        list.push_back(static_cast<int>(m));
      }
      if (list.empty()) fail(origin, ptr, "a group needs at least one member");
      w.groups[name] = std::move(list);
    }
  }

  // rank_ops entries may come in any order; remember where each rank was for error messages.
  std::vector<int> position(h.ranks, -1);
  for (std::size_t i = 0; i < h.rank_ops.size(); ++i) {
    const int r = h.rank_ops[i].rank;
    const auto ptr = fmt::format("/rank_ops/{}/rank", i);
    if (r < 0 || r >= h.ranks) {
      fail(origin, ptr, fmt::format("rank {} is out of range (ranks are 0..{})", r, h.ranks - 1));
    }
    if (position[r] >= 0) {
      fail(origin, ptr, fmt::format("rank {} already appears at /rank_ops/{}", r, position[r]));
    }
    position[r] = static_cast<int>(i);
  }
  for (int r = 0; r < h.ranks; ++r) {
    if (position[r] < 0) fail(origin, "/rank_ops", fmt::format("no entry for rank {}", r));
  }
  w.ranks.resize(h.ranks);
  for (int r = 0; r < h.ranks; ++r) {
    w.ranks[r].rank = r;
    w.ranks[r].ops = std::move(h.rank_ops[position[r]].ops);
  }

  // The op's JSON pointer: the checks below name it so; later messages add the op's name.
  auto pointer = [origin, position](int rank, std::size_t index) {
    return fmt::format("{}:/rank_ops/{}/ops/{}", origin, position[std::size_t(rank)], index);
  };
  w.where = [origin, position, pointer](int rank, std::size_t index, const Op& op) {
    if (std::size_t(rank) >= position.size()) return fmt::format("{}: rank {} op {}", origin, rank, op.id);
    return pointer(rank, index) + (op.name.empty() ? "" : fmt::format(" ({})", op.name));
  };
  validate(w, pointer);
  return w;
}

Workload parse_native_any(const std::string& text, const std::string& origin) {
  // 0x89 starts no JSON text and no UTF-8 character: a binary trace, or a damaged one, which
  // parse_native_binary() names as such.
  if (!text.empty() && text[0] == kNativeBinaryMagic[0]) return parse_native_binary(text, origin);
  return parse_native(text, origin);
}

Workload load_native(const std::string& path) {
  return parse_native_any(read_trace_text(path, kMaxTraceFileBytes), path);
}

std::string write_native(const Workload& w) {
  std::string out = "{\n";
  out += fmt::format("  \"format\": \"{}\",\n", kFormat);
  out += fmt::format("  \"version\": {},\n", w.version);
  out += fmt::format("  \"name\": {},\n", Json(w.name).dump());
  out += fmt::format("  \"metadata\": {},\n", w.metadata.is_null() ? "{}" : w.metadata.dump());
  out += fmt::format("  \"ranks\": {},\n", w.num_ranks());
  out += "  \"groups\": {";
  bool first = true;
  for (const auto& [name, members] : w.groups) {
    out += fmt::format("{}\n    {}: {}", first ? "" : ",", Json(name).dump(), Json(members).dump());
    first = false;
  }
  out += first ? "},\n" : "\n  },\n";
  out += "  \"rank_ops\": [";
  for (int r = 0; r < w.num_ranks(); ++r) {
    out += fmt::format("{}\n    {{\"rank\": {}, \"ops\": [", r == 0 ? "" : ",", r);
    const auto& ops = w.ranks[r].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      out += fmt::format("{}\n      {}", i == 0 ? "" : ",", ordered_op(op_to_json(ops[i])).dump());
    }
    out += ops.empty() ? "]}" : "\n    ]}";
  }
  out += w.ranks.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace trnsim::trace
