// SPDX-License-Identifier: MIT
// What a parameter struct needs to describe its fields, without JSON: the constraints given to
// field(), the input limits, named enums. The parameter structs (params/*.hpp) include only this,
// so the models built from them never see JSON; config/schema.hpp adds the readers and writers
// that visit them.
#pragma once

#include <string_view>
#include <type_traits>

#include "trnsim/error.hpp"

namespace trnsim::config {

// ---- constraints, given as the optional last argument of field() --------------------------------
struct NoCheck {};
struct Required {};  // the key must be present (hardware facts that have no sensible default)
struct AtLeast {
  double min;
};
struct Positive {};  // > 0
struct InRange {
  double min, max;
};
struct AtMost {
  double max;
};
// Several constraints may be given together: field(key, x, "...", Required{}, Positive{}).

// The kernel counts time in picoseconds in 64 bits (about 213 days); no single duration of a
// config or trace may come near that, so every Duration is refused above this (docs/configuration.md,
// "Input limits").
inline constexpr double kMaxDurationSeconds = 1e6;
// Byte counts are whole numbers that a double holds exactly.
inline constexpr double kMaxBytes = 9007199254740992.0;  // 2^53
// Nesting deeper than this in a config or trace is refused before any recursion can overflow the
// stack.
inline constexpr int kMaxJsonDepth = 256;

// ---- enums: a type opts in by declaring `enum_names(E)` returning pairs of value and name -------
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) { enum_names(e); };

template <NamedEnum E>
std::string_view enum_name(E value) {
  for (const auto& [v, n] : enum_names(E{})) {
    if (v == value) return n;
  }
  throw InternalError("enum value without a name");
}

struct ProbeVisitor {
  template <class F, class... C>
  void field(std::string_view, F&, std::string_view, C...) {}
};
template <class T>
concept Visitable = requires(T& t, ProbeVisitor& v) { t.visit(v); };

}  // namespace trnsim::config
