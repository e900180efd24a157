// SPDX-License-Identifier: MIT
// The binary form of native JSON traces, kept in the cache folder (docs/performance.md#trace-cache):
// `trnsim run` reads a large gzipped JSON trace (the default step's: 7 MB, 2.5 s of CPU) once,
// stores its binary form (trnsim trace convert --to binary) under the SHA-256 of the file's bytes,
// and reads that form on every later run of the same bytes (0.5 s). The report still names the
// JSON file and its hash: the binary form reads back the same workload (Native/BundledBinaryRoundTrip).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trnsim/run/run.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::cli {

struct TraceCacheKey {
  std::string canonical;  // what the entry is of: the trace's SHA-256 and size, the build, the form
  std::string hex;        // its hash: the entry's file name
};
TraceCacheKey trace_cache_key(const std::string& sha256, std::uint64_t bytes);

// The workload of a valid entry for `key` (its use time refreshed), or none. A corrupt, truncated
// or foreign file is ignored with a warning naming it.
std::optional<trace::Workload> cached_trace(const run::CacheSettings& s, const TraceCacheKey& key);
// Whether `w`, read from the JSON file `origin`, lists its ranks in order (/rank_ops/R is rank
// R): only then does a workload read back from the binary form name its ops as the JSON reader
// does, once given name_ops_as_json(); store_trace() stores nothing otherwise.
bool ranks_in_file_order(const trace::Workload& w, const std::string& origin);
// Names the ops of a workload read from the cache by the JSON file's pointers
// ("FILE:/rank_ops/R/ops/I (name)"), as messages after reading expect.
void name_ops_as_json(trace::Workload& w, const std::string& origin);
// Stores `w` in the binary form (a temporary file renamed), then evicts the least recently used
// entries beyond the size cap. Failures are warnings.
void store_trace(const run::CacheSettings& s, const TraceCacheKey& key, const trace::Workload& w,
                 const std::string& origin);

}  // namespace trnsim::cli
