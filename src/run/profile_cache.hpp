// SPDX-License-Identifier: MIT
// The calibration cache: the profiles an op-level calibration measured, on disk, so that a rerun
// or a sweep's later points skip the tile-model children (docs/performance.md#calibration-cache).
//
// An entry is one calibration: the chip plan, the build of trnsim and the set of distinct ops,
// serialised canonically (sorted JSON) and hashed into its file name. Not one entry per op: a
// profile is measured as a difference of the tile chip's running counters, so at the last bit it
// depends on the ops calibrated before it on the same chip (calibrate_ops() fixes that company),
// and only the whole set reproduces a fresh calibration byte for byte. The entry holds its
// canonical key too; a file whose key, format or profiles do not match is ignored with a warning.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chip/op_profile.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/run/run.hpp"

namespace trnsim::run {

// A profile as JSON and back, exactly (doubles round-trip): how the calibration's children hand
// their profiles to the parent, and how the cache stores them. from_json throws
// nlohmann::json::exception or InternalError on what it does not understand.
nlohmann::json profile_to_json(const model::OpProfile& p);
model::OpProfile profile_from_json(const nlohmann::json& j);

// What one calibration is keyed by: canonical text and its 128-bit hash in hex.
struct CacheKey {
  std::string canonical;
  std::string hex;
};
// The key of calibrating `op_keys` (distinct, any order) on the tile model of `plan`, with op
// heads (`op_heads`), by this build of trnsim (build_identity()).
CacheKey calibration_key(const resolve::ChipPlan& plan, const std::vector<std::string>& op_keys,
                         bool op_heads);
// Any other cache's key (serve's iteration costs, serve/timer.cpp): `k` dumped canonically (object
// keys sorted) and its hash, as calibration_key hashes its own.
CacheKey cache_key(const nlohmann::json& k);
// The 128-bit hash (hex) the keys use, of any bytes: a checksum, not a security boundary.
std::string content_hash(std::string_view bytes);

// Removes the least recently used entries of the cache folder `dir` (its files ending in
// `extension`) while they hold more than `max_bytes` in all, never `keep`; other files there older
// than an hour (a crashed writer's temporaries, stale locks) are removed too. Every error is
// another writer's doing and is skipped. `what` names the cache in the log.
void evict_least_recently_used(const std::string& dir, std::string_view extension,
                               const std::string& keep, std::uint64_t max_bytes,
                               std::string_view what);

// This executable's GNU build id (hex), which changes with any change of its code; when the
// linker wrote none, a hash of the executable's bytes.
const std::string& build_identity();

struct CachedCalibration {
  std::map<std::string, model::OpProfile> profiles;  // by op key
  double static_power_w = 0;
};

class ProfileCache {
 public:
  explicit ProfileCache(CacheSettings settings);

  // The entry for `key`, if the cache holds a valid one (its use time is refreshed). A corrupt
  // or foreign file is ignored with a warning naming it.
  std::optional<CachedCalibration> get(const CacheKey& key) const;
  // Stores an entry through a temporary file and a rename (concurrent writers of the same entry
  // leave one whole file), then evicts the least recently used entries beyond the size cap.
  // Failures (a read-only folder, a full disk) are warnings: the run goes on without the cache.
  void put(const CacheKey& key, const CachedCalibration& c) const;
  // Holds an exclusive lock on `key` (flock on <entry>.lock, released by the destructor or the
  // process's end) while one process calibrates, so that concurrent sweep points with the same
  // key wait for the first one's entry instead of calibrating it again. Null when the lock file
  // cannot be opened (the run calibrates unlocked).
  struct Lock {
    int fd = -1;
    bool waited = false;  // another process held it: its entry may be there now
    ~Lock();
  };
  std::unique_ptr<Lock> lock(const CacheKey& key) const;
  // The file an entry lives in.
  std::string path_of(const CacheKey& key) const;

 private:
  void evict(const std::string& keep) const;
  CacheSettings s_;
};

}  // namespace trnsim::run
