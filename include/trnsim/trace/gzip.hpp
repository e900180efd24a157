// SPDX-License-Identifier: MIT
// gzip for trace files: both readers accept gzip-compressed files (found by their magic bytes),
// and the Chakra exporter can write them. Decompression is bounded, so a gzip bomb is refused early.
#pragma once

#include <cstdint>
#include <string>

namespace trnsim::trace {

bool is_gzip(const std::string& data);
// The most `compressed_bytes` of gzip may inflate to: `limit`, the default memory budget or
// 256 times the compressed size (at least 64 MiB), whichever is least, and why.
struct InflateLimit {
  std::uint64_t bytes = 0;
  std::string why;
};
InflateLimit inflate_limit(std::uint64_t compressed_bytes, std::uint64_t limit);
// Throws TraceError naming `path` when the data is corrupt or would inflate to more than
// inflate_limit(): checked as it inflates, so a gzip bomb is refused holding at most that much.
std::string gunzip(const std::string& in, const std::string& path, std::uint64_t limit);
std::string gzip(const std::string& in);

// A trace file's bytes as stored (at most `max_bytes`); an unreadable or larger file throws
// TraceError naming `path` (the io layer's InputError, in the traces' error type).
std::string read_trace_bytes(const std::string& path, std::uint64_t max_bytes);
// A trace file's text: read_trace_bytes(), inflated when it is gzip (at most `max_bytes` out).
std::string read_trace_text(const std::string& path, std::uint64_t max_bytes);

}  // namespace trnsim::trace
