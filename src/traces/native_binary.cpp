// SPDX-License-Identifier: MIT
// The native trace format in a compact binary form (docs/trace-format.md, "Binary form"): what
// `trnsim trace convert --to binary` writes and every reader of native traces reads back. The same
// Workload as the JSON form, so a run from either gives the same simulation; reading it skips the
// JSON tokenizer and the per-op JSON objects.
//
//   magic "\x89TRNSIM\n" (8 bytes), version (varint, 1)
//   strings: count, then each as length + bytes (every string below is an index into them)
//   name, metadata (its JSON text), ranks, groups: count, then name, member count, members
//   per rank 0..ranks-1: op count, then each op's fields in the order of Op::visit for its kind
//   CRC-32 (zlib) of every byte before it, 4 bytes little-endian
//
// Fields: unsigned integers as LEB128 varints, signed ones zigzag-encoded, a bool as one byte,
// doubles (flops, a delay's duration) as their 8 IEEE bytes little-endian (exact), enums as the
// index of their name, optional fields as a presence byte then the value, lists as a count then
// the elements. An op's id is stored as the difference from the previous op's id + 1, each
// dependency as the difference from the op's id (both zigzag): mostly one byte each.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <unordered_map>

#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/trace/native.hpp"

namespace trnsim::trace {

namespace {

constexpr std::size_t kBinCrcBytes = 4;

std::uint64_t zigzag(std::int64_t v) {
  return (std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63);
}
std::int64_t unzigzag(std::uint64_t u) { return std::int64_t(u >> 1) ^ -std::int64_t(u & 1); }

std::uint32_t bin_crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed it in pieces below 4 GiB.
  for (std::size_t p = 0; p < data.size();) {
    const std::size_t n = std::min<std::size_t>(data.size() - p, std::size_t(1) << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + p), static_cast<uInt>(n));
    p += n;
  }
  return static_cast<std::uint32_t>(crc);
}

// ---- writing ------------------------------------------------------------------------------------

class BinSink {
 public:
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void byte(unsigned char b) { out_.push_back(static_cast<char>(b)); }
  void f64(double d) {
    std::uint64_t u = std::bit_cast<std::uint64_t>(d);
    for (int i = 0; i < 8; ++i, u >>= 8) out_.push_back(static_cast<char>(u & 0xff));
  }
  void u32le(std::uint32_t u) {
    for (int i = 0; i < 4; ++i, u >>= 8) out_.push_back(static_cast<char>(u & 0xff));
  }
  void raw(std::string_view s) { out_.append(s); }
  std::string& text() { return out_; }

 private:
  std::string out_;
};

// Strings in order of first use, each written once.
class BinInterner {
 public:
  std::uint64_t id(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    table_.emplace_back(s);
    ids_.emplace(table_.back(), table_.size() - 1);
    return table_.size() - 1;
  }
  const std::deque<std::string>& table() const { return table_; }

 private:
  std::deque<std::string> table_;  // stable addresses for the map's views
  std::unordered_map<std::string_view, std::uint64_t> ids_;
};

class BinOpWriter {
 public:
  BinOpWriter(BinSink& out, BinInterner& strings, OpId prev) : out_(out), strings_(strings), prev_(prev) {}

  template <class T, class... C>
  void field(std::string_view key, const T& value, std::string_view, C...) {
    if constexpr (std::is_same_v<T, OpId>) {
      if (key == "id") {
        out_.varint(zigzag(std::int64_t(value - (prev_ + 1))));  // wraps: exact for any id
        id_ = value;
        return;
      }
    }
    if constexpr (std::is_same_v<T, std::vector<OpId>>) {
      if (key == "deps") {
        out_.varint(value.size());
        for (const OpId d : value) out_.varint(zigzag(std::int64_t(id_ - d)));
        return;
      }
    }
    put(value);
  }

 private:
  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      out_.byte(v ? 1 : 0);
    } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
      out_.varint(v);
    } else if constexpr (std::is_integral_v<T>) {
      out_.varint(zigzag(std::int64_t(v)));
    } else if constexpr (std::is_floating_point_v<T>) {
      out_.f64(double(v));
    } else if constexpr (std::is_same_v<T, std::string>) {
      out_.varint(strings_.id(v));
    } else if constexpr (config::NamedEnum<T>) {
      out_.varint(strings_.id(config::enum_name(v)));
    } else if constexpr (config::is_optional<T>::value) {
      out_.byte(v ? 1 : 0);
      if (v) put(*v);
    } else if constexpr (config::is_vector<T>::value) {
      out_.varint(v.size());
      for (const auto& e : v) put(e);
    } else {
      out_.f64(v.si);  // a quantity (Duration): its SI value, exactly
    }
  }

  BinSink& out_;
  BinInterner& strings_;
  OpId prev_, id_ = 0;
};

// ---- reading ------------------------------------------------------------------------------------

class BinSource {
 public:
  // `file_bytes`: the whole file's size, for messages (data may stop short of its checksum).
  BinSource(std::string_view data, const std::string& origin, std::size_t file_bytes)
      : data_(data), origin_(origin), file_bytes_(file_bytes) {}

  // What is being read, for messages: a JSON pointer of the equivalent native trace.
  void at(int rank, std::size_t op, std::string_view key) {
    rank_ = rank;
    op_ = op;
    key_ = key;
  }
  void at(std::string_view what) {
    rank_ = -1;
    key_ = what;
  }
  std::string where() const {
    if (rank_ < 0) return std::string(key_);
    return fmt::format("/rank_ops/{}/ops/{}{}{}", rank_, op_, key_.empty() ? "" : "/", key_);
  }

  [[noreturn]] void fail(std::size_t offset, std::string_view message) const {
    throw TraceError(fmt::format("{}: offset {} ({}): {}", origin_, offset, where(), message));
  }
  [[noreturn]] void truncated() const {
    fail(pos_, fmt::format("the binary trace ends early (it has {} bytes): truncated", file_bytes_));
  }

  std::uint64_t varint() {
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos_ >= data_.size()) truncated();
      const auto b = static_cast<unsigned char>(data_[pos_++]);
      if (shift == 63 && b > 1) fail(start, "a varint of more than 64 bits: corrupt");
      v |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      if (shift == 63) fail(start, "a varint of more than 64 bits: corrupt");
    }
  }
  unsigned char byte() {
    if (pos_ >= data_.size()) truncated();
    return static_cast<unsigned char>(data_[pos_++]);
  }
  bool flag() {
    const std::size_t at = pos_;
    const unsigned char b = byte();
    if (b > 1) fail(at, fmt::format("expected 0 or 1 (a flag), got {}: corrupt", b));
    return b == 1;
  }
  double f64() {
    if (data_.size() - pos_ < 8) truncated();
    std::uint64_t u = 0;
    for (int i = 7; i >= 0; --i) u = (u << 8) | static_cast<unsigned char>(data_[pos_ + std::size_t(i)]);
    pos_ += 8;
    return std::bit_cast<double>(u);
  }
  std::string_view bytes(std::size_t n) {
    if (data_.size() - pos_ < n) truncated();
    const auto s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A count of things each at least `min_bytes` long: more than the bytes left is corrupt (and
  // never allocated for).
  std::size_t count(std::size_t min_bytes, std::string_view what) {
    const std::size_t at = pos_;
    const std::uint64_t n = varint();
    if (n > (data_.size() - pos_) / min_bytes) {
      fail(at, fmt::format("{} {} do not fit in the {} bytes left: corrupt or truncated", n, what,
                           data_.size() - pos_));
    }
    return static_cast<std::size_t>(n);
  }
  std::size_t pos() const { return pos_; }
  std::size_t size() const { return data_.size(); }
  const std::string& origin() const { return origin_; }

 private:
  std::string_view data_;
  const std::string& origin_;
  std::size_t file_bytes_;
  std::size_t pos_ = 0;
  int rank_ = -1;
  std::size_t op_ = 0;
  std::string_view key_;
};

class BinOpReader {
 public:
  BinOpReader(BinSource& in, const std::vector<std::string>& strings, int rank, std::size_t index,
              OpId prev)
      : in_(in), strings_(strings), rank_(rank), index_(index), prev_(prev) {}

  template <class T, class... C>
  void field(std::string_view key, T& out, std::string_view, C... checks) {
    in_.at(rank_, index_, key);
    if constexpr (std::is_same_v<T, OpId>) {
      if (key == "id") {
        out = prev_ + 1 + OpId(unzigzag(in_.varint()));
        id_ = out;
        return;
      }
    }
    if constexpr (std::is_same_v<T, std::vector<OpId>>) {
      if (key == "deps") {
        const std::size_t n = in_.count(1, "dependencies");
        out.resize(n);
        for (auto& d : out) d = id_ - OpId(unzigzag(in_.varint()));
        return;
      }
    }
    get(out, checks...);
  }

 private:
  template <class T, class... C>
  void check([[maybe_unused]] std::size_t at, [[maybe_unused]] double v, C... checks) {
    if (!(config::satisfies(v, checks) && ...)) {
      in_.fail(at, fmt::format("expected {}{}, got {}", config::type_text<T>(),
                               config::constraint_text<T>(checks...), v));
    }
  }

  std::string_view string_at(std::size_t at) {
    const std::uint64_t i = in_.varint();
    if (i >= strings_.size()) {
      in_.fail(at, fmt::format("string {} of a table of {}: corrupt", i, strings_.size()));
    }
    return strings_[std::size_t(i)];
  }

  template <class T, class... C>
  void get(T& out, C... checks) {
    const std::size_t at = in_.pos();
    if constexpr (std::is_same_v<T, bool>) {
      out = in_.flag();
    } else if constexpr (std::is_integral_v<T>) {
      using Lim = std::numeric_limits<T>;
      if constexpr (std::is_unsigned_v<T>) {
        const std::uint64_t u = in_.varint();
        if (u > std::uint64_t(Lim::max())) in_.fail(at, fmt::format("{} is out of range", u));
        out = static_cast<T>(u);
      } else {
        const std::int64_t s = unzigzag(in_.varint());
        if (s < std::int64_t(Lim::min()) || s > std::int64_t(Lim::max())) {
          in_.fail(at, fmt::format("{} is out of range (this field holds {} to {})", s, Lim::min(), Lim::max()));
        }
        out = static_cast<T>(s);
      }
      check<T>(at, double(out), checks...);
    } else if constexpr (std::is_floating_point_v<T>) {
      const double d = in_.f64();
      if (!std::isfinite(d)) in_.fail(at, fmt::format("expected a finite number, got {}", d));
      check<T>(at, d, checks...);
      out = static_cast<T>(d);
    } else if constexpr (std::is_same_v<T, std::string>) {
      out = string_at(at);
    } else if constexpr (config::NamedEnum<T>) {
      const std::string_view s = string_at(at);
      for (const auto& [v, n] : enum_names(T{})) {
        if (n == s) {
          out = v;
          return;
        }
      }
      in_.fail(at, fmt::format("{}, got \"{}\"", "expected " + config::type_text<T>(), s));
    } else if constexpr (config::is_optional<T>::value) {
      if (in_.flag()) {
        typename T::value_type v{};
        get(v, checks...);
        out = std::move(v);
      } else {
        out.reset();
      }
    } else if constexpr (config::is_vector<T>::value) {
      const std::size_t n = in_.count(1, "elements");
      out.resize(n);
      for (auto& e : out) get(e, checks...);
    } else {
      const double d = in_.f64();
      if (!std::isfinite(d)) in_.fail(at, fmt::format("expected a finite {}, got {}", quantity_example<T>(), d));
      if constexpr (std::is_same_v<T, Duration>) {
        if (std::abs(d) > config::kMaxDurationSeconds) {
          in_.fail(at, fmt::format("expected a duration of at most {}s, got {}s", config::kMaxDurationSeconds, d));
        }
      }
      check<T>(at, d, checks...);
      out = T(d);
    }
  }

  BinSource& in_;
  const std::vector<std::string>& strings_;
  int rank_;
  std::size_t index_;
  OpId prev_, id_ = 0;
};

}  // namespace

bool is_native_binary(std::string_view data) { return data.starts_with(kNativeBinaryMagic); }

std::string write_native_binary(const Workload& w) {
  BinInterner strings;
  BinSink body;
  body.varint(strings.id(w.name));
  body.varint(strings.id(w.metadata.is_null() ? std::string("{}") : w.metadata.dump()));
  body.varint(std::uint64_t(w.num_ranks()));
  body.varint(w.groups.size());
  for (const auto& [name, members] : w.groups) {
    body.varint(strings.id(name));
    body.varint(members.size());
    for (const int m : members) body.varint(std::uint64_t(m));
  }
  for (const auto& rank : w.ranks) {
    body.varint(rank.ops.size());
    OpId prev = OpId(-1);
    for (const auto& op : rank.ops) {
      BinOpWriter v(body, strings, prev);
      const_cast<Op&>(op).visit(v);
      prev = op.id;
    }
  }
  BinSink out;
  out.raw(kNativeBinaryMagic);
  out.varint(kNativeBinaryVersion);
  out.varint(strings.table().size());
  for (const auto& s : strings.table()) {
    out.varint(s.size());
    out.raw(s);
  }
  out.raw(body.text());
  out.u32le(bin_crc32(out.text()));
  return std::move(out.text());
}

Workload parse_native_binary(std::string_view data, const std::string& origin) {
  BinSource in(data, origin, data.size());
  in.at("magic");
  if (!is_native_binary(data)) {
    in.fail(0, fmt::format("not a binary trnsim trace (expected the magic bytes \\x89TRNSIM\\n)"));
  }
  in.bytes(kNativeBinaryMagic.size());
  in.at("version");
  const std::size_t vat = in.pos();
  const std::uint64_t version = in.varint();
  if (version != kNativeBinaryVersion) {
    in.fail(vat, fmt::format("unsupported binary trace version {} (this reader supports {})", version,
                             kNativeBinaryVersion));
  }
  // The checksum is checked after the structure, so a truncated file says where it ends; a
  // file shorter than one cannot hold it at all.
  if (data.size() < in.pos() + kBinCrcBytes) in.truncated();
  const std::string_view body = data.substr(0, data.size() - kBinCrcBytes);
  BinSource b(body, origin, data.size());
  b.bytes(in.pos());

  b.at("strings");
  const std::size_t nstrings = b.count(1, "strings");
  std::vector<std::string> strings(nstrings);
  for (auto& s : strings) s = b.bytes(b.count(1, "bytes of a string"));

  auto string_at = [&](std::string_view what) -> const std::string& {
    b.at(what);
    const std::size_t at = b.pos();
    const std::uint64_t i = b.varint();
    if (i >= strings.size()) b.fail(at, fmt::format("string {} of a table of {}: corrupt", i, strings.size()));
    return strings[std::size_t(i)];
  };

  Workload w;
  w.name = string_at("/name");
  {
    const std::size_t at = b.pos();
    const std::string& meta = string_at("/metadata");
    Json j;
    try {
      j = config::parse_json_checked(meta, origin + " (metadata)");
    } catch (const InputError& e) {
      b.fail(at, fmt::format("metadata is not JSON: {}", e.what()));
    }
    if (!j.is_object()) b.fail(at, fmt::format("expected an object, got {}", j.dump()));
    w.metadata = std::move(j);
  }
  b.at("/ranks");
  std::size_t at = b.pos();
  const std::size_t ranks = b.count(1, "ranks");
  if (ranks < 1) b.fail(at, "expected an integer >= 1, got 0");
  if (ranks > std::size_t(std::numeric_limits<int>::max())) b.fail(at, "too many ranks");
  b.at("/groups");
  const std::size_t ngroups = b.count(2, "groups");
  for (std::size_t g = 0; g < ngroups; ++g) {
    const std::string& name = string_at("/groups");
    const std::string ptr = config::json_pointer_append("/groups", name);
    b.at(ptr);
    at = b.pos();
    const std::size_t n = b.count(1, "members");
    if (n == 0) b.fail(at, "a group needs at least one member");
    std::vector<int> list;
    list.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      at = b.pos();
      const std::uint64_t m = b.varint();
      if (m >= ranks) b.fail(at, fmt::format("rank {} is out of range (ranks are 0..{})", m, ranks - 1));
      if (std::find(list.begin(), list.end(), int(m)) != list.end()) {
        b.fail(at, fmt::format("rank {} is listed twice", m));
      }
      list.push_back(int(m));
    }
    if (!w.groups.emplace(name, std::move(list)).second) b.fail(at, fmt::format("group \"{}\" is given twice", name));
  }
  w.ranks.resize(ranks);
  // The smallest op: id, kind, name, deps, source_type, phase, layer, micro_batch (a byte each)
  // and one more field of a byte at least (a barrier's group, a mem_load's bytes).
  constexpr std::size_t kMinOpBytes = 9;
  for (std::size_t r = 0; r < ranks; ++r) {
    b.at(fmt::format("/rank_ops/{}/ops", r));
    const std::size_t n = b.count(kMinOpBytes, "ops");
    auto& ops = w.ranks[r].ops;
    w.ranks[r].rank = int(r);
    ops.resize(n);
    OpId prev = OpId(-1);
    for (std::size_t i = 0; i < n; ++i) {
      BinOpReader v(b, strings, int(r), i, prev);
      ops[i].visit(v);
      prev = ops[i].id;
    }
  }
  b.at("end");
  if (b.pos() != body.size()) {
    b.fail(b.pos(), fmt::format("{} bytes after the last op: corrupt", body.size() - b.pos()));
  }
  std::uint32_t stored = 0;
  for (std::size_t i = 0; i < kBinCrcBytes; ++i) {
    stored |= std::uint32_t(static_cast<unsigned char>(data[body.size() + i])) << (8 * i);
  }
  if (const std::uint32_t crc = bin_crc32(body); crc != stored) {
    b.fail(body.size(), fmt::format("checksum mismatch (stored {:08x}, computed {:08x}): the file is corrupt",
                                    stored, crc));
  }

  auto pointer = [origin](int rank, std::size_t index) {
    return fmt::format("{}:/rank_ops/{}/ops/{}", origin, rank, index);
  };
  w.where = [origin, pointer](int rank, std::size_t index, const Op& op) {
    return pointer(rank, index) + (op.name.empty() ? "" : fmt::format(" ({})", op.name));
  };
  validate(w, pointer);
  return w;
}

}  // namespace trnsim::trace
