// SPDX-License-Identifier: MIT
// gzip for trace files: both readers accept gzip-compressed files (found by their magic bytes),
// and the Chakra exporter can write them. Decompression is bounded, so a gzip bomb is refused.
#pragma once

#include <cstdint>
#include <string>

namespace trnsim::trace {

bool is_gzip(const std::string& data);
// Throws TraceError naming `path` when the data is corrupt or inflates to more than `limit`.
std::string gunzip(const std::string& in, const std::string& path, std::uint64_t limit);
std::string gzip(const std::string& in);

}  // namespace trnsim::trace
