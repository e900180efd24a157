// SPDX-License-Identifier: MIT
// The op profile store: the profiles op-level calibrations measured, on disk, one per op, so
// that a rerun, a sweep's later points and serve's other shapes simulate only the ops no run has
// calibrated yet (docs/performance.md#calibration-cache).
//
// A profile is counted from zero for its op alone (src/run/calibrate.cpp), so it is the same to
// the bit whichever ops were calibrated beside it, by whichever process: a store of single ops
// gives the same tables, and the same reports, as a fresh calibration. The store keeps one file
// per chip plan (the plan, the build of trnsim and whether op heads are timed, hashed into its
// name), an append-only list of lines, one per op: concurrent calibrations append whole lines
// (O_APPEND, one write each), readers take the complete lines. Each line carries a checksum of
// its text and of the plan's hash; a line whose checksum, format or profile does not match is
// ignored with a warning.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
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
// heads (`op_heads`), by this build of trnsim (build_identity()): the calibration's identity in
// report.json, and its lock.
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

// Profiles by op key, and the tile chip's static power (a figure of the plan alone), when known.
struct CachedCalibration {
  std::map<std::string, model::OpProfile> profiles;
  std::optional<double> static_power_w;
};

// The key of the store file of `plan` (its tile model, with op heads or not) and this build.
CacheKey plan_key(const resolve::ChipPlan& plan, bool op_heads);

class ProfileCache {
 public:
  explicit ProfileCache(CacheSettings settings);

  // The profiles of `ops` the store of `plan` holds, and its static power (the file's use time
  // is refreshed). Corrupt or foreign lines are ignored with one warning naming the file; an
  // incomplete last line (a writer's append under way) silently.
  CachedCalibration get(const CacheKey& plan, const std::set<std::string>& ops) const;
  // Appends the profiles (and the static power, when given) to the store of `plan` in one write,
  // then evicts the least recently used stores beyond the size cap. Failures (a read-only
  // folder, a full disk) are warnings: the run goes on without the store.
  void put(const CacheKey& plan, const CachedCalibration& c) const;
  // Holds an exclusive lock on a calibration of one op set (`set`: calibration_key(); flock on
  // op-profiles/<hash>.lock, released by the destructor or the process's end) while one process
  // calibrates, so that concurrent sweep points with the same ops wait for the first one's
  // profiles instead of calibrating them again. Null when the lock file cannot be opened (the
  // run calibrates unlocked).
  struct Lock {
    int fd = -1;
    bool waited = false;  // another process held it: its profiles may be there now
    ~Lock();
  };
  std::unique_ptr<Lock> lock(const CacheKey& set) const;
  // The store file of a plan.
  std::string path_of(const CacheKey& plan) const;

 private:
  void evict(const std::string& keep) const;
  CacheSettings s_;
};

}  // namespace trnsim::run
