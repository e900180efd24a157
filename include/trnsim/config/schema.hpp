// SPDX-License-Identifier: MIT
// One description per parameter struct serves reading, writing and documenting it.
//
// A parameter struct lists its fields once, in a member template:
//
//   struct HbmParams {
//     int stacks = 4;
//     Bandwidth bandwidth{};
//     template <class V> void visit(V& v) {
//       v.field("stacks", stacks, "HBM stacks per chip", AtLeast{1});
//       v.field("bandwidth", bandwidth, "peak HBM bandwidth per chip", Required{});
//     }
//   };
//
// JsonReader fills it from JSON (rejecting unknown keys, bad types and bad units with the file and
// the JSON pointer), JsonWriter turns it back into JSON with units, SchemaCollector lists the
// fields for the docs. Defaults live in the member initialisers and nowhere else.
#pragma once
// Marks that the config layer (JSON readers and writers) is included: models/ checks that none of
// its headers include it (models/CMakeLists.txt, trnsim_model_headers).
#define TRNSIM_CONFIG_LAYER_INCLUDED 1

#include <fmt/format.h>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "trnsim/error.hpp"
#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

using Json = nlohmann::json;

// ---- where each value came from ----------------------------------------------------------------
// Maps a JSON pointer to the file (or "--set") that last set it; lookups walk up to the nearest
// ancestor so that errors always name a file.
class Provenance {
 public:
  void record(const std::string& pointer, const std::string& source);
  void record_tree(const Json& j, const std::string& pointer, const std::string& source);
  std::string source_of(std::string pointer) const;

 private:
  std::map<std::string, std::string> by_pointer_;
};

// "file:/json/pointer: message"
std::string located(const Provenance& prov, const std::string& pointer, std::string_view message);

// The key among `candidates` nearest to `key` (edit distance), or "" when none is close.
std::string nearest_key(std::string_view key, const std::vector<std::string>& candidates);

std::string json_pointer_append(const std::string& base, std::string_view key);

// Parses JSON text, refusing what nlohmann would accept silently: a key given twice in one object
// (the last would win), nesting deeper than kMaxJsonDepth, numbers out of the range of a double.
// Throws InputError "origin:line:column: invalid JSON: ..." or "origin:/pointer: ...".
std::string json_syntax_message(const std::string& text, const std::string& origin,
                                const Json::parse_error& e);
Json parse_json_checked(const std::string& text, const std::string& origin);
template <class E>
Json parse_json(const std::string& text, const std::string& origin) {
  try {
    return parse_json_checked(text, origin);
  } catch (const E&) {
    throw;
  } catch (const InputError& e) {
    throw E(e.what());
  }
}

// ---- reading ------------------------------------------------------------------------------------
class JsonReader {
 public:
  JsonReader(const Json& object, std::string pointer, const Provenance& prov);

  // Reads key into out if present; checks the constraints; records the key as known.
  template <class T, class... C>
  void field(std::string_view key, T& out, std::string_view /*description*/, C... checks) {
    known_.emplace_back(key);
    // One lookup by view: the traces read millions of fields.
    const auto it = object_.find(key);
    if (it == object_.end()) {
      if constexpr ((std::is_same_v<C, Required> || ...)) {
        fail(json_pointer_append(pointer_, key),
             fmt::format("missing required key \"{}\" ({})", key, expected<T>(checks...)));
      }
      return;
    }
    read_value(*it, json_pointer_append(pointer_, key), out, checks...);
  }

  // Rejects keys that no field() asked for, suggesting the nearest known one.
  void finish() const;

  // Reads a whole visitable struct at the root of `j`.
  template <Visitable T>
  static void read(const Json& j, const std::string& pointer, const Provenance& prov, T& out) {
    if (!j.is_object()) {
      throw ConfigError(located(prov, pointer, fmt::format("expected an object, got {}", j.dump())));
    }
    JsonReader r(j, pointer, prov);
    out.visit(r);
    r.finish();
  }

  [[noreturn]] void fail(const std::string& pointer, std::string_view message) const;

 private:
  template <class T, class... C>
  static std::string expected(C... checks);

  template <class T, class... C>
  void read_value(const Json& j, const std::string& ptr, T& out, C... checks) const;

  template <class T, class... C>
  void read_integer(const Json& j, const std::string& ptr, T& out, C... checks) const;

  template <class T, class... C>
  void check_number(const Json& j, const std::string& ptr, double v, std::string_view what,
                    C... checks) const;

  const Json& object_;
  std::string pointer_;
  const Provenance& prov_;
  std::vector<std::string> known_;
};

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// A bound as the user writes it: "1e+06" for a count, "1MHz" for a frequency.
template <class T>
std::string bound_text(double v) {
  if constexpr (is_vector<T>::value) {
    return bound_text<typename T::value_type>(v);
  } else if constexpr (std::is_class_v<T> && requires { trnsim::format(T(v)); }) {
    return trnsim::format(T(v));
  } else {
    return fmt::format("{}", v);
  }
}

template <class T, class C>
std::string one_constraint_text([[maybe_unused]] C check) {
  if constexpr (std::is_same_v<C, AtLeast>) {
    return " >= " + bound_text<T>(check.min);
  } else if constexpr (std::is_same_v<C, Positive>) {
    return " > 0";
  } else if constexpr (std::is_same_v<C, InRange>) {
    return fmt::format(" in [{}, {}]", bound_text<T>(check.min), bound_text<T>(check.max));
  } else if constexpr (std::is_same_v<C, AtMost>) {
    return " <= " + bound_text<T>(check.max);
  } else {
    return "";
  }
}

template <class T = double, class... C>
std::string constraint_text(C... checks) {
  std::string out;
  ((out += (out.empty() || one_constraint_text<T>(checks).empty() ? "" : " and") +
           one_constraint_text<T>(checks)),
   ...);
  return out;
}

template <class C>
bool satisfies([[maybe_unused]] double v, [[maybe_unused]] C check) {
  if constexpr (std::is_same_v<C, AtLeast>) return v >= check.min;
  if constexpr (std::is_same_v<C, Positive>) return v > 0;
  if constexpr (std::is_same_v<C, InRange>) return v >= check.min && v <= check.max;
  if constexpr (std::is_same_v<C, AtMost>) return v <= check.max;
  return true;
}

template <class T>
std::string type_text() {
  if constexpr (std::is_same_v<T, bool>) {
    return "a boolean";
  } else if constexpr (std::is_integral_v<T>) {
    return "an integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return "a number";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "a string";
  } else if constexpr (NamedEnum<T>) {
    std::string names;
    for (const auto& [v, n] : enum_names(T{})) {
      names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", n);
    }
    return "one of " + names;
  } else if constexpr (is_vector<T>::value) {
    return "an array of " + type_text<typename T::value_type>() + "s";
  } else if constexpr (is_optional<T>::value) {
    return type_text<typename T::value_type>();
  } else if constexpr (Visitable<T>) {
    return "an object";
  } else {
    return quantity_example<T>();
  }
}

template <class T, class... C>
std::string JsonReader::expected(C... checks) {
  return "expected " + type_text<T>() + constraint_text<T>(checks...);
}

template <class T, class... C>
void JsonReader::check_number(const Json& j, const std::string& ptr, double v,
                              std::string_view what, C... checks) const {
  const bool ok = std::isfinite(v) && (satisfies(v, checks) && ...);
  if (!ok) {
    fail(ptr, fmt::format("expected {}{}, got {}", what, constraint_text<T>(checks...), j.dump()));
  }
}

// Integers are compared in 64 bits before they are narrowed, so 4294967304 is not read as 8 into
// an int, and -9223372036854775808 is not 0 in an unsigned field.
template <class T, class... C>
void JsonReader::read_integer(const Json& j, const std::string& ptr, T& out, C... checks) const {
  using Lim = std::numeric_limits<T>;
  auto refuse = [&](bool beyond_type) {
    fail(ptr, fmt::format("expected {}{}, got {}{}", type_text<T>(), constraint_text<T>(checks...),
                          j.dump(),
                          beyond_type ? fmt::format(" (this field holds {} to {})", Lim::min(),
                                                    Lim::max())
                                      : ""));
  };
  if (!j.is_number_integer()) refuse(false);
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(Lim::max())) refuse(true);
    out = static_cast<T>(u);
  } else {
    const auto s = j.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (s < 0) refuse((satisfies(double(s), checks) && ...));
    } else {
      if (s < std::int64_t(Lim::min()) || s > std::int64_t(Lim::max())) refuse(true);
    }
    out = static_cast<T>(s);
  }
  if (!(satisfies(double(out), checks) && ...)) refuse(false);
}

template <class T, class... C>
void JsonReader::read_value(const Json& j, const std::string& ptr, T& out, C... checks) const {
  auto mismatch = [&]() { fail(ptr, fmt::format("{}, got {}", expected<T>(checks...), j.dump())); };
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) mismatch();
    out = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    read_integer(j, ptr, out, checks...);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) mismatch();
    const auto v = j.get<double>();
    check_number<T>(j, ptr, v, type_text<T>(), checks...);
    out = static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) mismatch();
    out = j.get<std::string>();
    if constexpr ((std::is_same_v<C, Positive> || ...)) {
      if (out.empty()) fail(ptr, "expected a non-empty string, got \"\"");
    }
  } else if constexpr (NamedEnum<T>) {
    if (!j.is_string()) mismatch();
    const auto s = j.get<std::string>();
    for (const auto& [v, n] : enum_names(T{})) {
      if (n == s) {
        out = v;
        return;
      }
    }
    std::vector<std::string> names;
    for (const auto& [v, n] : enum_names(T{})) names.emplace_back(n);
    const auto near = nearest_key(s, names);
    fail(ptr, fmt::format("{}, got {}{}", expected<T>(checks...), j.dump(),
                          near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near)));
  } else if constexpr (is_optional<T>::value) {
    typename T::value_type v{};
    if constexpr (Visitable<typename T::value_type>) {
      read(j, ptr, prov_, v);
    } else {
      read_value(j, ptr, v, checks...);
    }
    out = std::move(v);
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) mismatch();
    T result;
    for (std::size_t i = 0; i < j.size(); ++i) {
      typename T::value_type v{};
      const auto eptr = fmt::format("{}/{}", ptr, i);
      if constexpr (Visitable<typename T::value_type>) {
        read(j[i], eptr, prov_, v);
      } else {
        read_value(j[i], eptr, v, checks...);
      }
      result.push_back(std::move(v));
    }
    out = std::move(result);
  } else if constexpr (Visitable<T>) {
    read(j, ptr, prov_, out);
  } else {
    // A quantity with units: only strings such as "4.9TB/s" are accepted.
    if (!j.is_string()) {
      fail(ptr, fmt::format("expected {} (a string with a unit), got {}", quantity_example<T>(),
                            j.dump()));
    }
    try {
      out = parse_quantity<T>(j.get<std::string>());
    } catch (const UnitError& e) {
      fail(ptr, e.what());
    }
    check_number<T>(j, ptr, out.si, quantity_example<T>(), checks...);
    if constexpr (std::is_same_v<T, Duration>) {
      if (std::abs(out.si) > kMaxDurationSeconds) {
        fail(ptr, fmt::format("expected {} of at most {}s (simulated time is bounded), got {}",
                              quantity_example<T>(), kMaxDurationSeconds, j.dump()));
      }
    }
    if constexpr (std::is_same_v<T, Bytes>) {
      if (out.si != std::floor(out.si) || std::abs(out.si) > kMaxBytes) {
        fail(ptr, fmt::format("expected a whole number of bytes up to 2^53, got {}", j.dump()));
      }
    }
  }
}

// ---- writing ------------------------------------------------------------------------------------
class JsonWriter {
 public:
  explicit JsonWriter(Json& out) : out_(out) {}

  template <class T, class... C>
  void field(std::string_view key, const T& value, std::string_view, C...) {
    if constexpr (is_optional<T>::value) {
      if (value) out_[std::string(key)] = to_json(*value);
    } else {
      out_[std::string(key)] = to_json(value);
    }
  }

  template <class T>
  static Json to_json(const T& value) {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
      return Json(value);
    } else if constexpr (NamedEnum<T>) {
      return Json(std::string(enum_name(value)));
    } else if constexpr (is_vector<T>::value) {
      Json a = Json::array();
      for (const auto& v : value) a.push_back(to_json(v));
      return a;
    } else if constexpr (Visitable<T>) {
      Json o = Json::object();
      JsonWriter w(o);
      const_cast<T&>(value).visit(w);
      return o;
    } else {
      return Json(format(value));
    }
  }

 private:
  Json& out_;
};

// ---- documenting ----------------------------------------------------------------------------------
struct FieldDoc {
  std::string pointer;
  std::string type;
  std::string default_value;  // JSON text; empty when required
  std::string description;
};

template <class T>
constexpr bool vector_of_visitable() {
  if constexpr (is_vector<T>::value) {
    return Visitable<typename T::value_type>;
  } else {
    return false;
  }
}

class SchemaCollector {
 public:
  SchemaCollector(std::string pointer, std::vector<FieldDoc>& out)
      : pointer_(std::move(pointer)), out_(out) {}

  template <class T, class... C>
  void field(std::string_view key, T& value, std::string_view description, C... checks) {
    const std::string ptr = json_pointer_append(pointer_, key);
    using Inner = std::conditional_t<is_optional<T>::value, typename is_optional_inner<T>::type, T>;
    if constexpr (Visitable<Inner>) {
      out_.push_back({ptr, "object", "", std::string(description)});
      Inner inner{};
      if constexpr (is_optional<T>::value) {
        if (value) inner = *value;
      } else {
        inner = value;
      }
      SchemaCollector sub(ptr, out_);
      inner.visit(sub);
    } else if constexpr (vector_of_visitable<Inner>()) {
      out_.push_back({ptr, "array of objects", "", std::string(description)});
      typename Inner::value_type element{};
      SchemaCollector sub(ptr + "/N", out_);
      element.visit(sub);
    } else {
      std::string def;
      if constexpr (!(std::is_same_v<C, Required> || ...)) {
        if constexpr (is_optional<T>::value) {
          def = value ? JsonWriter::to_json(*value).dump() : "(absent)";
        } else {
          def = JsonWriter::to_json(value).dump();
        }
      }
      out_.push_back({ptr, type_text<Inner>() + constraint_text<Inner>(checks...), def,
                      std::string(description)});
    }
  }

 private:
  template <class T>
  struct is_optional_inner {
    using type = T;
  };
  template <class T>
  struct is_optional_inner<std::optional<T>> {
    using type = T;
  };
  std::string pointer_;
  std::vector<FieldDoc>& out_;
};

}  // namespace trnsim::config
