// SPDX-License-Identifier: MIT
#include "trnsim/config/schema.hpp"
#include "trnsim/config/json_stream.hpp"

#include <algorithm>
#include <unordered_map>

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

namespace {

// Builds the document as nlohmann's own parser does, refusing on the way what it would accept
// silently. A stack of open containers gives the pointer of a duplicate key and the depth; its
// levels are reused, their key lists keeping their storage, so the many small objects of a
// large trace cost no allocation per key (a std::map per object cost a third of the parse).
class CheckedDomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  CheckedDomParser(Json& document, const std::string& origin, const ElementSink* sink = nullptr)
      : Base(document), origin_(origin), document_(document), sink_(sink) {}

  bool null() { return element(), Base::null() && drain(); }
  bool boolean(bool v) { return element(), Base::boolean(v) && drain(); }
  bool number_integer(Json::number_integer_t v) {
    return element(), Base::number_integer(v) && drain();
  }
  bool number_unsigned(Json::number_unsigned_t v) {
    return element(), Base::number_unsigned(v) && drain();
  }
  bool number_float(Json::number_float_t v, const std::string& s) {
    return element(), Base::number_float(v, s) && drain();
  }
  bool string(std::string& v) { return element(), Base::string(v) && drain(); }
  bool binary(Json::binary_t& v) { return element(), Base::binary(v) && drain(); }
  bool start_object(std::size_t n) { return open(true), Base::start_object(n); }
  bool start_array(std::size_t n) { return open(false), Base::start_array(n); }
  bool end_object() { return --depth_, Base::end_object() && drain(); }
  bool end_array() { return --depth_, Base::end_array() && drain(); }

  bool key(std::string& k) {
    Level& o = levels_[depth_ - 1];
    const std::size_t position = o.keys.size() + 1;
    std::size_t first = 0;
    if (o.keys.size() < kLinearKeys) {
      const auto it = std::find(o.keys.begin(), o.keys.end(), k);
      if (it != o.keys.end()) first = std::size_t(it - o.keys.begin()) + 1;
    } else {
      if (o.many.empty()) {
        for (std::size_t i = 0; i < o.keys.size(); ++i) o.many.emplace(o.keys[i], i + 1);
      }
      const auto [it, fresh] = o.many.emplace(k, position);
      if (!fresh) first = it->second;
    }
    o.keys.push_back(k);  // the current key, the last of the level, names it in a pointer
    if (first != 0) {
      throw InputError(fmt::format(
          "{}:{}: duplicate key \"{}\" (keys {} and {} of the object at {}); a key may appear once",
          origin_, pointer(depth_), k, first, position, pointer(depth_ - 1)));
    }
    return Base::key(k);
  }

  std::size_t depth() const { return depth_; }

  std::string pointer(std::size_t levels) const {
    std::string p;
    for (std::size_t i = 0; i < levels; ++i) {
      const Level& l = levels_[i];
      p = l.object ? json_pointer_append(p, l.keys.empty() ? std::string() : l.keys.back())
                   : fmt::format("{}/{}", p, l.index - 1);
    }
    return p.empty() ? std::string("/") : p;
  }

 private:
  // Objects up to this many keys are searched in order; larger ones through a hash map.
  static constexpr std::size_t kLinearKeys = 16;
  struct Level {
    bool object = false;
    std::size_t index = 0;           // next element of an array
    std::vector<std::string> keys;   // of an object, in order
    std::unordered_map<std::string, std::size_t> many;  // key -> position, for large objects
  };

  // Before a value in an array, count it.
  void element() {
    if (depth_ > 0 && !levels_[depth_ - 1].object) ++levels_[depth_ - 1].index;
  }

  void open(bool object) {
    element();
    if (depth_ >= std::size_t(kMaxJsonDepth)) {
      std::string where = pointer(depth_);
      if (where.size() > 60) where = where.substr(0, 60) + "...";
      throw InputError(fmt::format("{}:{}: nesting deeper than {} levels is not accepted", origin_,
                                   where, kMaxJsonDepth));
    }
    if (depth_ == levels_.size()) levels_.emplace_back();
    Level& l = levels_[depth_++];
    l.object = object;
    l.index = 0;
    l.keys.clear();
    l.many.clear();
  }

  // After a value is complete: when it is an element of the sink's arrays, it leaves the
  // document for the sink. The open levels are the path to it (the base parser's own stack is
  // private), so the document is walked down the last key or element of each.
  bool drain() {
    if (!sink_ || depth_ != sink_->path.size() || levels_[depth_ - 1].object) return true;
    for (std::size_t i = 0; i < depth_; ++i) {
      const Level& l = levels_[i];
      const std::string& want = sink_->path[i];
      if (l.object ? (l.keys.empty() || l.keys.back() != want) : want != "*") return true;
    }
    Json* parent = &document_;
    for (std::size_t i = 0; i + 1 < depth_; ++i) {
      parent = levels_[i].object ? &(*parent)[levels_[i].keys.back()] : &parent->back();
    }
    auto& elements = parent->get_ref<Json::array_t&>();
    Json value = std::move(elements.back());
    elements.pop_back();
    sink_->take(std::move(value), pointer(depth_));
    return true;
  }

  const std::string& origin_;
  Json& document_;
  const ElementSink* sink_;
  std::vector<Level> levels_;
  std::size_t depth_ = 0;
};

}  // namespace

Json parse_json_checked(const std::string& text, const std::string& origin) {
  return parse_json_checked(text, origin, ElementSink{});
}

Json parse_json_checked(const std::string& text, const std::string& origin, const ElementSink& sink) {
  Json root;
  CheckedDomParser parser(root, origin, sink.path.empty() ? nullptr : &sink);
  try {
    Json::sax_parse(text, &parser);
    return root;
  } catch (const Json::parse_error& e) {
    throw InputError(json_syntax_message(text, origin, e));
  } catch (const Json::out_of_range& e) {
    // nlohmann reports a number a double cannot hold (1e400) as out_of_range.
    std::string what = e.what();
    if (auto p = what.find("number overflow"); p != std::string::npos) what = what.substr(p);
    throw InputError(fmt::format("{}:{}: invalid JSON: {} (beyond the range of a double)", origin,
                                 parser.depth() == 0 ? "/" : parser.pointer(parser.depth()), what));
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
