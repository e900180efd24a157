// SPDX-License-Identifier: MIT
// The traffic pattern of a collective's transfers (model::TransferRequest::pattern), by which the
// flow network's calibration from the packet fabric tells them apart (run/flow_calibration.hpp,
// docs/models/fidelity.md#flow-calibration): the collective and the algorithm that `auto` picks
// for it (mesh, recursive halving-doubling, the rings, hierarchical), 1 to 14; 0 for everything
// else (sends, and the bidirectional ring and torus algorithms, which only a config that names
// them runs), whose links keep their nominal bandwidth.
#pragma once

#include <cstdint>

#include "trnsim/params/replay.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::replay {

inline constexpr int kTrafficPatterns = 15;  // 0 to 14

constexpr std::uint8_t traffic_pattern(trace::OpKind op, config::CollectiveAlgorithm a) {
  using Alg = config::CollectiveAlgorithm;
  using K = trace::OpKind;
  // all_to_all_v runs the same staggered direct steps as all_to_all (replay/collectives.cpp),
  // with per-peer sizes: the same pattern (a MoE step's dispatch and combine are all_to_all_v).
  if (op == K::all_to_all || op == K::all_to_all_v) return a == Alg::mesh ? 1 : 0;
  // A reduction-free and two reducing collectives: each combination its own pattern.
  const int base = op == K::all_gather ? 2 : op == K::reduce_scatter ? 6 : op == K::all_reduce ? 10 : -1;
  if (base < 0) return 0;
  switch (a) {
    case Alg::ring: return std::uint8_t(base);
    case Alg::multi_ring: return std::uint8_t(base + 1);
    case Alg::rdh: return std::uint8_t(base + 2);
    case Alg::hierarchical: return std::uint8_t(base + 3);
    case Alg::mesh: return 14;  // any collective below mesh_max_bytes: one pattern
    default: return 0;
  }
}

}  // namespace trnsim::replay
