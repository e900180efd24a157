// SPDX-License-Identifier: MIT
#include "trnsim/config/schema.hpp"

#include <algorithm>

namespace trnsim::config {

void Provenance::record(const std::string& pointer, const std::string& source) {
  by_pointer_[pointer] = source;
}

void Provenance::record_tree(const Json& j, const std::string& pointer, const std::string& source) {
  record(pointer, source);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) record_tree(v, json_pointer_append(pointer, k), source);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      record_tree(j[i], fmt::format("{}/{}", pointer, i), source);
    }
  }
}

std::string Provenance::source_of(std::string pointer) const {
  for (;;) {
    if (auto it = by_pointer_.find(pointer); it != by_pointer_.end()) return it->second;
    if (pointer.empty()) return "<config>";
    pointer.resize(pointer.rfind('/'));
  }
}

std::string located(const Provenance& prov, const std::string& pointer, std::string_view message) {
  return fmt::format("{}:{}: {}", prov.source_of(pointer), pointer.empty() ? "/" : pointer,
                     message);
}

namespace {
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string nearest_key(std::string_view key, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(key, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string json_pointer_append(const std::string& base, std::string_view key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return base + "/" + escaped;
}

std::string json_syntax_message(const std::string& text, const std::string& origin,
                                const Json::parse_error& e) {
  // e.byte counts the characters read, the offending one included.
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  std::string what = e.what();
  if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
  return fmt::format("{}:{}:{}: invalid JSON: {}", origin, line, col, what);
}

JsonReader::JsonReader(const Json& object, std::string pointer, const Provenance& prov)
    : object_(object), pointer_(std::move(pointer)), prov_(prov) {}

void JsonReader::fail(const std::string& pointer, std::string_view message) const {
  throw ConfigError(located(prov_, pointer, message));
}

void JsonReader::finish() const {
  for (const auto& [key, value] : object_.items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    const auto near = nearest_key(key, known_);
    fail(json_pointer_append(pointer_, key),
         fmt::format("unknown key \"{}\"{}", key,
                     near.empty() ? "" : fmt::format("; did you mean \"{}\"?", near)));
  }
}

}  // namespace trnsim::config
