// SPDX-License-Identifier: MIT
// The native trace format (docs/trace-format.md): one JSON file per workload.
#pragma once

#include <string>
#include <string_view>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

// Reads and validates a native trace, in JSON or in the binary form below (told apart by the
// binary form's magic bytes; either may be gzipped). Every error is a TraceError naming the file
// and the JSON pointer of the bad value ("w.json:/rank_ops/0/ops/3/deps: ..."), or for the binary
// form the byte offset ("w.trnb: offset 1234 (/rank_ops/0/ops/3/deps): ...").
Workload load_native(const std::string& path);

// The same from a file's text (inflated if it was gzip): binary or JSON by the magic bytes.
Workload parse_native_any(const std::string& text, const std::string& origin);

// The same from text; `origin` names the text in error messages.
Workload parse_native(const std::string& text, const std::string& origin = "<trace>");

// Deterministic JSON text (one op per line) that parse_native() reads back to the same workload.
// Warnings are not part of the format and are not written.
std::string write_native(const Workload& w);

// The native format in a compact binary form (docs/trace-format.md, "Binary form"): the same
// workload, fields in the order of Op::visit, integers as LEB128 varints, strings once in a
// table. `trnsim trace convert --to binary` writes it; every reader of native traces reads it.
// The bytes start with kNativeBinaryMagic, then the format version.
inline constexpr std::string_view kNativeBinaryMagic{"\x89TRNSIM\n", 8};
inline constexpr unsigned kNativeBinaryVersion = 1;
bool is_native_binary(std::string_view data);
// Deterministic: the same workload gives the same bytes. Warnings are not written.
std::string write_native_binary(const Workload& w);
// Reads and validates it as parse_native() does; a truncated or corrupt file is a TraceError
// naming `origin` and the byte offset where reading stopped.
Workload parse_native_binary(std::string_view data, const std::string& origin = "<trace>");

// One op as a JSON object and back; shared with the Chakra reader, which embeds native ops.
Json op_to_json(const Op& op);
Op op_from_json(const Json& j, const std::string& pointer, const std::string& origin);

}  // namespace trnsim::trace
