// SPDX-License-Identifier: MIT
// The native trace format (docs/trace-format.md): one JSON file per workload.
#pragma once

#include <string>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

// Reads and validates a native trace. Every error is a TraceError naming the file and the JSON
// pointer of the bad value ("w.json:/rank_ops/0/ops/3/deps: ...").
Workload load_native(const std::string& path);

// The same from text; `origin` names the text in error messages.
Workload parse_native(const std::string& text, const std::string& origin = "<trace>");

// Deterministic JSON text (one op per line) that parse_native() reads back to the same workload.
// Warnings are not part of the format and are not written.
std::string write_native(const Workload& w);

// One op as a JSON object and back; shared with the Chakra reader, which embeds native ops.
Json op_to_json(const Op& op);
Op op_from_json(const Json& j, const std::string& pointer, const std::string& origin);

}  // namespace trnsim::trace
