// SPDX-License-Identifier: MIT
#include "trace_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

#include "presets.hpp"
#include "trace_cache.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"
#include "trnsim/report/report.hpp"
#include "trnsim/dtype.hpp"
#include "trnsim/trace/chakra.hpp"
#include "trnsim/trace/gzip.hpp"
#include "trnsim/trace/native.hpp"
#include "trnsim/trace/pytorch_et.hpp"

namespace trnsim::cli {

namespace fs = std::filesystem;

bool TraceInput::chakra_options_given() const {
  return std::any_of(chakra_options.begin(), chakra_options.end(),
                     [](const CLI::Option* c) { return c->count() > 0; });
}

void add_chakra_options(CLI::App* sub, TraceInput& in) {
  in.chakra_options.push_back(
      sub->add_option("--chakra-size-unit", in.size_unit,
                      "Chakra comm_size/tensor_size unit: bytes or elements (default: detected "
                      "from the trace)")
          ->check(CLI::IsMember({"bytes", "elements"})));
  in.chakra_options.push_back(sub->add_option("--chakra-element-bytes", in.element_bytes,
                                              "bytes per element when sizes count elements")
                                  ->check(CLI::Range(1, 64)));
  in.chakra_options.push_back(
      sub->add_option("--chakra-num-ops", in.num_ops_unit,
                      "what Chakra num_ops counts: flops or macs (default: detected with the "
                      "size unit)")
          ->check(CLI::IsMember({"flops", "macs"})));
  in.chakra_options.push_back(sub->add_flag(
      "--chakra-keep-durations", in.keep_durations,
      "replay every recorded GPU kernel as its recorded duration (default: kernels of known aten "
      "operators with shapes run as Trainium compute)"));
  in.chakra_options.push_back(
      sub->add_option("--chakra-unmapped-scale", in.unmapped_scale,
                      "factor on the recorded durations of kernels that are not mapped")
          ->check(CLI::Range(0.0, 1e6)));
  in.chakra_options.push_back(
      sub->add_option("--chakra-all-gather-size", in.all_gather_size,
                      "what an ALL_GATHER's comm_size is: input (each rank's, as ASTRA-sim) or "
                      "output (the gathered result)")
          ->check(CLI::IsMember({"input", "output"})));
  in.chakra_options.push_back(sub->add_option("--chakra-matmul-dtype", in.matmul_dtype,
                                              "dtype of Chakra matmuls (default: the node's dtype "
                                              "attribute, else bf16)"));
  in.chakra_options.push_back(sub->add_option(
      "--kineto", in.kineto,
      "PyTorch execution traces: the Kineto profile recorded with them (a file for one rank, or "
      "the directory of the ranks' profiles): unmapped operators keep their recorded GPU time"));
  in.chakra_options.push_back(sub->add_option(
      "--process-groups", in.groups, "Chakra process-group file (default PREFIX.json when it exists)"));
}

namespace {

// Collectives of 16-bit or wider data whose byte count is odd cannot be whole elements: the
// sizes are probably element counts.
void warn_if_element_counts(const trace::Workload& w, const std::string& prefix) {
  std::size_t odd = 0, sized = 0;
  for (const auto& r : w.ranks) {
    for (const auto& op : r.ops) {
      if (!trace::is_collective(op.kind) || op.bytes == 0 || trace::dtype_bytes(op.dtype) < 2) continue;
      ++sized;
      if (op.bytes % 2 != 0) ++odd;
    }
  }
  if (odd > 0) {
    logger("trace")->warn(
        "{}: {} of {} collective sizes are an odd number of bytes for {}-byte or wider data: they "
        "look like element counts; if so, pass --chakra-size-unit elements (and "
        "--chakra-element-bytes)",
        prefix, odd, sized, 2);
  }
}

}  // namespace

std::vector<std::string> grouped_warnings(const trace::Workload& w) {
  struct Group {
    std::vector<std::string> where;
    std::uint64_t count = 0;
    bool counted = false;
    std::string example, example_where;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const auto& text : w.warnings) {
    // "<file>: <count> <what>, e.g. <examples>" (the Chakra reader's summaries), or
    // "<file>: <message>"
    std::string where, msg = text;
    if (const auto p = text.find(": "); p != std::string::npos && text.find(' ') > p) {
      where = text.substr(0, p);
      msg = text.substr(p + 2);
    }
    std::uint64_t count = 0;
    bool counted = false;
    std::string example;
    std::size_t digits = 0;
    while (digits < msg.size() && std::isdigit(static_cast<unsigned char>(msg[digits]))) ++digits;
    if (digits > 0 && digits < msg.size() && msg[digits] == ' ') {
      count = std::stoull(msg.substr(0, digits));
      counted = true;
      msg = msg.substr(digits + 1);
      if (const auto e = msg.find(", e.g. "); e != std::string::npos) {
        example = msg.substr(e + 7);
        msg = msg.substr(0, e);
      }
    }
    const std::string key = (counted ? "#" : "") + msg;
    auto [it, fresh] = groups.try_emplace(key);
    if (fresh) order.push_back(key);
    Group& g = it->second;
    if (!where.empty()) g.where.push_back(where);
    g.count += count;
    g.counted = counted;
    if (g.example.empty() && !example.empty()) {
      g.example = example;
      g.example_where = where;
    }
  }
  std::vector<std::string> out;
  for (const auto& key : order) {
    const Group& g = groups.at(key);
    const std::string msg = g.counted ? key.substr(1) : key;
    std::string files;
    if (g.where.size() == 1) {
      files = g.where[0];
    } else if (g.where.size() > 1) {
      files = fmt::format("{} files ({} .. {})", g.where.size(), g.where.front(), g.where.back());
    }
    std::string line = g.counted ? fmt::format("{} {}", g.count, msg) : msg;
    if (!files.empty()) line = fmt::format("{}: {}", files, line);
    if (!g.example.empty()) {
      line += fmt::format(", e.g. {}{}", g.example,
                          g.where.size() > 1 ? fmt::format(" in {}", g.example_where) : "");
    }
    out.push_back(std::move(line));
  }
  return out;
}

LoadedTrace load_trace(const TraceInput& in, const std::string& fallback) {
  // A bundled trace by name (`--trace mixtral-moe-16`), as --config takes presets.
  const std::string path = resolve_trace(in.path.empty() ? fallback : in.path);
  if (path.empty()) throw TraceError("--trace: an empty file name");
  LoadedTrace out;
  std::string raw;  // a single trace file's bytes as stored, when read here
  std::string sha256;  // of raw, when the trace cache needed it first
  std::error_code ec;
  // A rank file of a Chakra set stands for its prefix: PREFIX.0.et, or PREFIX.0.json in
  // Chakra's JSON form.
  std::string prefix;
  if (path.ends_with(".0.et")) {
    prefix = path.substr(0, path.size() - 5);
  } else if (path.ends_with(".0.json") && fs::is_regular_file(path, ec) && trace::is_chakra_json(path)) {
    prefix = path.substr(0, path.size() - 7);
  } else if (!fs::is_regular_file(path, ec) &&
             (fs::exists(path + ".0.et", ec) || fs::exists(path + ".0.json", ec))) {
    prefix = path;
  }
  // A set of PyTorch execution traces, one per rank: their directory, or the prefix of their
  // files (PREFIX<rank>.json[.gz] or PREFIX.<rank>.json[.gz]).
  std::vector<std::string> et_files;
  if (prefix.empty() && !fs::is_regular_file(path, ec)) et_files = trace::pytorch_et_rank_files(path);
  if (!prefix.empty()) {
    trace::ChakraOptions c;
    if (!in.size_unit.empty()) {
      c.size_unit = in.size_unit == "elements" ? trace::ChakraOptions::SizeUnit::elements
                                               : trace::ChakraOptions::SizeUnit::bytes;
    }
    c.element_bytes = in.element_bytes;
    if (!in.num_ops_unit.empty()) {
      c.num_ops_unit = in.num_ops_unit == "macs" ? trace::ChakraOptions::NumOpsUnit::macs
                                                 : trace::ChakraOptions::NumOpsUnit::flops;
    }
    c.map_operators = !in.keep_durations;
    c.unmapped_scale = in.unmapped_scale;
    c.all_gather_size = in.all_gather_size == "output" ? trace::ChakraOptions::AllGatherSize::output
                                                       : trace::ChakraOptions::AllGatherSize::input;
    if (!in.matmul_dtype.empty()) {
      try {
        c.matmul_dtype = parse_dtype(in.matmul_dtype);
      } catch (const InputError& e) {
        throw InputError(fmt::format("--chakra-matmul-dtype: {}", e.what()));
      }
    }
    c.process_groups = in.groups;
    out.workload = trace::load_chakra(prefix, c);
    out.chakra = true;
    out.prefix = prefix;
    for (int r = 0; r < out.workload.num_ranks(); ++r) {
      for (const char* ext : {".et", ".json"}) {
        const std::string f = fmt::format("{}.{}{}", prefix, r, ext);
        if (fs::is_regular_file(f, ec)) {
          out.files.push_back(f);
          break;
        }
      }
    }
    const std::string groups = in.groups.empty() ? prefix + ".json" : in.groups;
    if (fs::is_regular_file(groups, ec)) out.files.push_back(groups);
    if (in.size_unit == "bytes") warn_if_element_counts(out.workload, prefix);
    if (in.log_notes) {
      if (in.log_warnings) {
        for (const auto& w : grouped_warnings(out.workload)) logger("trace")->warn("{}", w);
      }
      if (out.workload.coverage) {
        std::string line = out.workload.coverage->describe();
        while (!line.empty() && line.back() == '\n') line.pop_back();
        for (std::size_t p; (p = line.find('\n')) != std::string::npos;) line[p] = ';';
        fmt::print(stderr, "[trace] {}: {}\n", prefix, line);  // always: what the run simulates
      }
    }
  } else if (!et_files.empty() || fs::is_regular_file(path, ec)) {
    trace::PytorchEtOptions et;
    if (!in.matmul_dtype.empty()) {
      try {
        et.matmul_dtype = parse_dtype(in.matmul_dtype);
      } catch (const InputError& e) {
        throw InputError(fmt::format("--chakra-matmul-dtype: {}", e.what()));
      }
    }
    et.kineto = in.kineto;
    et.keep_durations = in.keep_durations;
    et.unmapped_scale = in.unmapped_scale;
    std::optional<trace::Workload> loaded, cached;
    std::string text;  // one file: read (and inflated) once for both readers and the hash
    std::optional<TraceCacheKey> cache_key;
    if (!et_files.empty()) {
      loaded = trace::load_pytorch_et_ranks(et_files, et);
    } else {
      raw = trace::read_trace_bytes(path, kMaxTraceFileBytes);
      if (in.cache.enabled) {
        sha256 = report::Sha256().update(raw).hex();
        cache_key = trace_cache_key(sha256, raw.size());
        cached = cached_trace(in.cache, *cache_key);  // only native JSON traces are stored
      }
      if (!cached) {
        text = trace::is_gzip(raw) ? trace::gunzip(raw, path, kMaxTraceFileBytes) : raw;
        loaded = trace::load_pytorch_et_text(text, path, et);
      }
    }
    if (loaded) {
      out.workload = std::move(*loaded);
      if (in.log_notes) {
        if (in.log_warnings) {
          for (const auto& line : grouped_warnings(out.workload)) logger("trace")->warn("{}", line);
        }
        std::string line = out.workload.coverage->describe();
        while (!line.empty() && line.back() == '\n') line.pop_back();
        for (std::size_t p; (p = line.find('\n')) != std::string::npos;) line[p] = ';';
        fmt::print(stderr, "[trace] {}: {}\n", path, line);
      }
    } else {
      if (in.chakra_options_given()) {
        logger("trace")->warn("--trace {} is a native trace: the --chakra-* and --process-groups "
                              "options apply only to Chakra traces and are ignored",
                              path);
      }
      if (cached) {
        out.workload = std::move(*cached);
        name_ops_as_json(out.workload, path);
      } else {
        out.workload = trace::parse_native_any(text, path);
        out.native_binary = trace::is_native_binary(text);
        if (cache_key && !out.native_binary) store_trace(in.cache, *cache_key, out.workload, path);
      }
    }
    std::string().swap(text);
    if (et_files.empty()) {
      out.files.push_back(path);
    } else {
      out.files.insert(out.files.end(), et_files.begin(), et_files.end());
    }
  } else if (fs::exists(fs::symlink_status(path, ec))) {
    // There is something of that name that cannot be read as a trace: a directory, a device
    // (/dev/zero), a FIFO, a socket or a broken or looping symlink. Name what it is.
    throw TraceError(fmt::format(
        "--trace {}: cannot read: {}: expected a native trace file (.json), a Chakra prefix whose "
        "files are {}.<rank>.et (or .json in Chakra's JSON form), its rank-0 file {}.0.et, a "
        "PyTorch execution trace (.json or .json.gz), or a directory or prefix of one per rank "
        "(NAME<rank>.json)",
        path, input_file_problem(path, kMaxTraceFileBytes), path, path));
  } else {
    const std::string near = nearest_trace(path);
    throw TraceError(fmt::format(
        "--trace {}: no such trace: expected a native trace file (.json), a Chakra prefix whose "
        "files are {}.<rank>.et (or .json in Chakra's JSON form), its rank-0 file {}.0.et, a PyTorch "
        "execution trace, a directory or prefix of one per rank (NAME<rank>.json[.gz]), or the "
        "name of a bundled trace (`trnsim presets` lists them){}",
        path, path, path, near.empty() ? "" : fmt::format("; did you mean {}?", near)));
  }
  report::Sha256 h;
  for (const auto& f : out.files) {
    if (out.files.size() == 1 && !raw.empty()) {  // the one file, read above
      out.bytes += raw.size();
      if (!sha256.empty()) {  // and hashed for the trace cache
        out.sha256 = sha256;
        return out;
      }
      h.update(raw);
      continue;
    }
    const std::string bytes = read_input_file(f, kMaxTraceFileBytes);
    out.bytes += bytes.size();
    h.update(bytes);
  }
  out.sha256 = h.hex();
  return out;
}

}  // namespace trnsim::cli
