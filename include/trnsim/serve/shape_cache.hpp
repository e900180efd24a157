// SPDX-License-Identifier: MIT
// Per-shape claims in the serving shape cache (docs/serving.md#shape-cache): before a run
// simulates a shape it claims it, so that a concurrent run of the same rack, model and layout (two
// points of a sweep at -j 2) waits for its line in the costs file instead of simulating the shape
// again. A claim is an exclusive flock(2) on a lock file beside the costs file,
// "<prefix>.<decode>-<context>-<prefill>-<prefill_context>.lock", holding "<pid> <host>" for
// messages. The kernel drops the lock when its holder dies, however it dies, so a lock file left by
// a dead process is taken over by the next claim (a stale claim never blocks); the file names no
// result, so nothing half-written is ever trusted: the result is only ever the costs file's whole
// line.
#pragma once

#include <map>
#include <string>

#include "trnsim/serve/engine.hpp"

namespace trnsim::serve {

class ShapeClaims {
 public:
  // `prefix`: the costs file's path without ".costs"; empty: claims are off (every claim is ours).
  explicit ShapeClaims(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  ShapeClaims(const ShapeClaims&) = delete;
  ShapeClaims& operator=(const ShapeClaims&) = delete;
  ~ShapeClaims();  // releases the claims still held
  // Before any claim: where the lock files go (as the constructor's `prefix`).
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }

  enum class Claim {
    ours,   // held by this object until release()
    other,  // another live process holds it: its line is awaited in the costs file
    self,   // this process holds it through another object (or the lock file cannot be used):
            // simulate without a claim
  };
  Claim claim(const Shape& s);
  // Removes the lock file and drops the lock (no-op for a shape not held).
  void release(const Shape& s);
  bool holds(const Shape& s) const { return held_.count(s) > 0; }
  // The lock file of `s` (tests, messages).
  std::string lock_path(const Shape& s) const;
  // "pid host" of the claim's holder as its lock file says (empty: not written yet).
  std::string holder(const Shape& s) const;

 private:
  std::string prefix_;
  std::map<Shape, int> held_;  // the lock file's descriptor, by shape
};

}  // namespace trnsim::serve
