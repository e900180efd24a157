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

Json parse_json_checked(const std::string& text, const std::string& origin) {
  // The parser reports each key and the start and end of each container; a stack of open
  // containers gives the pointer of a duplicate key and the depth.
  struct Open {
    bool object;
    std::size_t index = 0;  // next element of an array
    std::string key;        // last key of an object
    std::map<std::string, std::size_t> keys;  // key -> its position in the object
  };
  std::vector<Open> open;
  auto pointer = [&](std::size_t levels) {
    std::string p;
    for (std::size_t i = 0; i < levels; ++i) {
      p = open[i].object ? json_pointer_append(p, open[i].key)
                         : fmt::format("{}/{}", p, open[i].index - 1);
    }
    return p.empty() ? std::string("/") : p;
  };
  // Before a value in an array, count it.
  auto element = [&] {
    if (!open.empty() && !open.back().object) ++open.back().index;
  };
  auto cb = [&](int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        element();
        if (depth >= kMaxJsonDepth) {
          std::string where = pointer(open.size());
          if (where.size() > 60) where = where.substr(0, 60) + "...";
          throw InputError(fmt::format("{}:{}: nesting deeper than {} levels is not accepted",
                                       origin, where, kMaxJsonDepth));
        }
        open.push_back({event == E::object_start});
        break;
      case E::object_end:
      case E::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case E::key: {
        Open& o = open.back();
        o.key = parsed.get<std::string>();
        const std::size_t position = o.keys.size() + 1;
        const auto [it, fresh] = o.keys.emplace(o.key, position);
        if (!fresh) {
          throw InputError(fmt::format(
              "{}:{}: duplicate key \"{}\" (keys {} and {} of the object at {}); a key may "
              "appear once",
              origin, pointer(open.size()), o.key, it->second, position,
              pointer(open.size() - 1)));
        }
        break;
      }
      case E::value:
        element();
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, cb);
  } catch (const Json::parse_error& e) {
    throw InputError(json_syntax_message(text, origin, e));
  } catch (const Json::out_of_range& e) {
    // nlohmann reports a number a double cannot hold (1e400) as out_of_range.
    std::string what = e.what();
    if (auto p = what.find("number overflow"); p != std::string::npos) what = what.substr(p);
    throw InputError(fmt::format("{}:{}: invalid JSON: {} (beyond the range of a double)", origin,
                                 open.empty() ? "/" : pointer(open.size()), what));
  }
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
