// SPDX-License-Identifier: MIT
// `trnsim trace info|convert|export`: what a trace holds, and native <-> Chakra conversion, so
// that other tools replay what trnsim's generator makes and trnsim reads back what it wrote.
#include <fmt/format.h>

#include <memory>

#include "commands.hpp"
#include "trace_input.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/trace/chakra.hpp"
#include "trnsim/trace/native.hpp"

namespace trnsim::cli {

namespace {

struct TraceOpts {
  TraceInput in;
  std::string to = "chakra", out;
  bool no_embed = false, gzip = false;
  bool json = false;  // export --json
};

// Writes `w` in form `to` at `out` (a file for native, a prefix for Chakra); returns what it
// wrote, for the message.
std::string write_trace(const trace::Workload& w, const TraceOpts& o) {
  if (o.out.empty()) throw InputError("--out: an empty name");
  create_parent_directories(o.out);
  trace::ChakraExportOptions c;
  c.embed_native = !o.no_embed;
  c.gzip = o.gzip;
  if (o.to == "native") {
    write_file_atomic(o.out, trace::write_native(w));
    return o.out;
  }
  if (o.to == "binary") {
    write_file_atomic(o.out, trace::write_native_binary(w));
    return o.out;
  }
  if (o.to == "chakra-json") {
    trace::export_chakra_json(w, o.out, c);
    return fmt::format("{}.0.json .. {}.{}.json and {}.json", o.out, o.out, w.num_ranks() - 1, o.out);
  }
  trace::export_chakra(w, o.out, c);
  return fmt::format("{}.0.et .. {}.{}.et and {}.json", o.out, o.out, w.num_ranks() - 1, o.out);
}

void add_input(CLI::App* sub, TraceOpts& o) {
  sub->add_option("trace", o.in.path,
                  "native trace (.json), Chakra prefix, a Chakra rank-0 file PREFIX.0.et, a PyTorch "
                  "execution trace (.json[.gz]), or the directory or prefix of one per rank")
      ->required();
  add_chakra_options(sub, o.in);
}

void add_output(CLI::App* sub, TraceOpts& o, bool choose_form) {
  sub->add_option("--out", o.out, "output: a file (native, binary) or a prefix (Chakra)")->required();
  if (choose_form) {
    sub->add_option("--to", o.to,
                    "native (JSON), binary (the native format in compact binary, read back by "
                    "every command that takes a native trace), chakra (protobuf .et) or chakra-json")
        ->check(CLI::IsMember({"native", "binary", "chakra", "chakra-json"}))
        ->capture_default_str();
  }
  sub->add_flag("--no-embed", o.no_embed,
                "Chakra: plain nodes only, without each op as native JSON in attribute trnsim_op "
                "(other tools then see only Chakra's own fields)");
  sub->add_flag("--gzip", o.gzip, "Chakra protobuf: gzip each rank file");
}

}  // namespace

void register_trace_command(CLI::App& app, Registry& reg) {
  auto* trace = app.add_subcommand("trace", "inspect and convert traces (native and Chakra)");
  trace->require_subcommand(1);

  auto oi = std::make_shared<TraceOpts>();
  oi->in.log_notes = false;  // printed below, with the rest
  auto* info = trace->add_subcommand("info", "ranks, ops by kind, groups, flops and bytes, units and operator coverage of a trace");
  add_input(info, *oi);
  info->add_flag("--json", oi->json, "print it as one JSON object (trace::describe_json, with "
                                     "format, files, bytes and sha256)");
  reg.add(info, Footprint::light, [oi] {
    const LoadedTrace t = load_trace(oi->in, "");
    const char* format = t.chakra                                                   ? "Chakra"
                         : t.workload.metadata.value("source", "") == "pytorch-et" ? "PyTorch ET"
                         : t.native_binary                                         ? "native binary"
                                                                                   : "native";
    if (oi->json) {
      trace::Json j = trace::describe_json(t.workload);
      j["format"] = format;
      j["files"] = t.files;
      j["bytes"] = t.bytes;
      j["sha256"] = t.sha256;
      j["grouped_warnings"] = grouped_warnings(t.workload);
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("{}", trace::describe(t.workload));
    fmt::print("format {}; {} file{}, {} bytes, sha256 {}\n", format, t.files.size(),
               t.files.size() == 1 ? "" : "s", t.bytes, t.sha256);
    for (const auto& w : grouped_warnings(t.workload)) fmt::print("warning: {}\n", w);
    return 0;
  });

  auto oc = std::make_shared<TraceOpts>();
  auto* convert = trace->add_subcommand("convert", "convert a trace between native and Chakra forms");
  add_input(convert, *oc);
  add_output(convert, *oc, true);
  reg.add(convert, Footprint::light, [oc] {
    const LoadedTrace t = load_trace(oc->in, "");
    fmt::print("wrote {}\n", write_trace(t.workload, *oc));
    return 0;
  });

  auto oe = std::make_shared<TraceOpts>();
  auto* exp = trace->add_subcommand("export", "write a trace as Chakra execution traces (PREFIX.<rank>.et)");
  add_input(exp, *oe);
  add_output(exp, *oe, false);
  exp->add_flag("--json", oe->json, "Chakra's JSON form (PREFIX.<rank>.json) instead of protobuf");
  reg.add(exp, Footprint::light, [oe] {
    TraceOpts o = *oe;
    o.to = o.json ? "chakra-json" : "chakra";
    const LoadedTrace t = load_trace(o.in, "");
    fmt::print("wrote {}\n", write_trace(t.workload, o));
    return 0;
  });
}

}  // namespace trnsim::cli
