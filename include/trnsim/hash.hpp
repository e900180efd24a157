// SPDX-License-Identifier: MIT
// A fixed integer hash (the splitmix64 finaliser), identical on every platform and run, for the
// arbitrary choices that must be reproducible (route spreading, flow ids).
#pragma once

#include <cstdint>

namespace trnsim {

constexpr std::uint64_t splitmix64_finalise(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One splitmix64 step from state `x`.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  return splitmix64_finalise(x + 0x9e3779b97f4a7c15ULL);
}

}  // namespace trnsim
