// SPDX-License-Identifier: MIT
// The salts of a network's arbitrary choices, all from sim.seed: one for route hashing (shared
// by every chip interface, and by both network tiers, so that they take the same paths), one per
// node (arbiters, timers) and one per link (event order). Distinct tags keep the streams apart.
#pragma once

#include <cstdint>

#include "trnsim/hash.hpp"

namespace trnsim::model {

inline constexpr std::uint64_t kRouteTag = 0x726f757465ULL, kNodeTag = 0x6e6f6465ULL,
                               kLinkTag = 0x6c696e6bULL;

inline std::uint64_t seed_salt(std::uint64_t seed, std::uint64_t tag, std::uint64_t index) {
  return splitmix64(splitmix64(seed ^ tag) ^ index);
}

// The key a flow's equal-cost next hops are chosen by (RouteTable::next_hop).
inline std::uint64_t route_key(std::uint64_t flow, std::uint64_t route_salt) {
  return route_salt == 0 ? flow : splitmix64(flow ^ route_salt);
}

}  // namespace trnsim::model
