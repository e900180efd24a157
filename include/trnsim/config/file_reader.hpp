// SPDX-License-Identifier: MIT
// Reading the plain JSON files that are not configs (sweep files, claims files): every problem
// names the file and the JSON pointer, and unknown keys are errors with the nearest key
// suggested. `E` is the error thrown (an InputError: exit code 2).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/config/schema.hpp"

namespace trnsim::config {

template <class E>
class FileReader {
 public:
  explicit FileReader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& ptr, const std::string& what) const {
    throw E(fmt::format("{}:{}: {}", origin_, ptr.empty() ? "/" : ptr, what));
  }

  // Rejects keys not in `known`, suggesting the nearest.
  void check_keys(const Json& obj, const std::string& ptr,
                  const std::vector<std::string>& known) const {
    if (!obj.is_object()) fail(ptr, fmt::format("expected an object, got {}", obj.dump()));
    for (const auto& [k, v] : obj.items()) {
      if (std::find(known.begin(), known.end(), k) != known.end()) continue;
      const std::string near = nearest_key(k, known);
      fail(json_pointer_append(ptr, k),
           fmt::format("unknown key \"{}\"{}; expected one of \"{}\"", k,
                       near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near),
                       fmt::join(known, "\", \"")));
    }
  }
  std::string string(const Json& obj, const std::string& ptr, const std::string& key,
                     bool required) const {
    const std::string p = json_pointer_append(ptr, key);
    if (!obj.contains(key)) {
      if (required) fail(p, "missing: expected a string");
      return "";
    }
    if (!obj[key].is_string() || obj[key].template get<std::string>().empty()) {
      fail(p, fmt::format("expected a non-empty string, got {}", obj[key].dump()));
    }
    return obj[key].template get<std::string>();
  }
  double number(const Json& obj, const std::string& ptr, const std::string& key) const {
    const std::string p = json_pointer_append(ptr, key);
    if (!obj.contains(key)) fail(p, "missing: expected a number");
    if (!obj[key].is_number()) fail(p, fmt::format("expected a number, got {}", obj[key].dump()));
    const double v = obj[key].template get<double>();
    if (!std::isfinite(v)) fail(p, "expected a finite number");
    return v;
  }
  // An integer from 1 to `max`.
  std::size_t count(const Json& obj, const std::string& ptr, const std::string& key,
                    std::size_t max) const {
    const std::string p = json_pointer_append(ptr, key);
    if (!obj.contains(key)) fail(p, "missing: expected an integer >= 1");
    if (!obj[key].is_number_integer() || obj[key].template get<std::int64_t>() < 1 ||
        obj[key].template get<std::int64_t>() > std::int64_t(max)) {
      fail(p, fmt::format("expected an integer from 1 to {}, got {}", max, obj[key].dump()));
    }
    return obj[key].template get<std::size_t>();
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

}  // namespace trnsim::config
