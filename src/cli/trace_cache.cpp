// SPDX-License-Identifier: MIT
#include "trace_cache.hpp"

#include <fmt/format.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "../run/profile_cache.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"
#include "trnsim/trace/native.hpp"

namespace trnsim::cli {

namespace fs = std::filesystem;

namespace {

// An entry: this header line, the key's canonical text on one line, the payload's content_hash
// and length on one line, then the payload (write_native_binary()).
constexpr std::string_view kTraceCacheFormat = "trnsim-trace-cache-1";
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t(4) << 30;

std::string entry_path(const run::CacheSettings& s, const TraceCacheKey& key) {
  return (fs::path(s.dir) / "traces" / (key.hex + ".trnb")).string();
}

}  // namespace

TraceCacheKey trace_cache_key(const std::string& sha256, std::uint64_t bytes) {
  nlohmann::json k = nlohmann::json::object();
  k["format"] = kTraceCacheFormat;
  k["build"] = run::build_identity();
  k["trace_sha256"] = sha256;
  k["trace_bytes"] = bytes;
  const run::CacheKey c = run::cache_key(k);
  return {c.canonical, c.hex};
}

std::optional<trace::Workload> cached_trace(const run::CacheSettings& s, const TraceCacheKey& key) {
  if (!s.enabled) return std::nullopt;
  const std::string path = entry_path(s, key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    const std::string data = read_input_file(path, kMaxEntryBytes);
    std::string_view rest = data;
    const auto line = [&]() {
      const std::size_t nl = rest.find('\n');
      if (nl == std::string_view::npos) throw InputError("truncated header");
      const std::string_view l = rest.substr(0, nl);
      rest.remove_prefix(nl + 1);
      return l;
    };
    if (line() != kTraceCacheFormat) throw InputError(fmt::format("not a {} entry", kTraceCacheFormat));
    if (line() != key.canonical) {
      logger("trace")->warn("trace cache: ignoring {}: an entry for another trace or build (hash "
                            "collision or a foreign file)",
                            path);
      return std::nullopt;
    }
    const std::string_view sum = line();
    if (sum != fmt::format("{} {}", run::content_hash(rest), rest.size())) {
      throw InputError("its payload does not match its checksum");
    }
    trace::Workload w = trace::parse_native_binary(rest, path);
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
    logger("trace")->info("trace read from its binary form in the trace cache ({})", path);
    return w;
  } catch (const std::exception& e) {
    logger("trace")->warn("trace cache: ignoring corrupt entry {}: {}", path, e.what());
    return std::nullopt;
  }
}

namespace {

std::string json_pointer_of(const std::string& origin, int rank, std::size_t index) {
  return fmt::format("{}:/rank_ops/{}/ops/{}", origin, rank, index);
}

}  // namespace

bool ranks_in_file_order(const trace::Workload& w, const std::string& origin) {
  if (!w.where) return false;
  const trace::Op unnamed{};
  for (int r = 0; r < w.num_ranks(); ++r) {
    if (w.where(r, 0, unnamed) != json_pointer_of(origin, r, 0)) return false;
  }
  return true;
}

void name_ops_as_json(trace::Workload& w, const std::string& origin) {
  w.where = [origin](int rank, std::size_t index, const trace::Op& op) {
    return json_pointer_of(origin, rank, index) + (op.name.empty() ? "" : fmt::format(" ({})", op.name));
  };
}

void store_trace(const run::CacheSettings& s, const TraceCacheKey& key, const trace::Workload& w,
                 const std::string& origin) {
  if (!s.enabled || !ranks_in_file_order(w, origin)) return;
  const std::string path = entry_path(s, key);
  try {
    const std::string payload = trace::write_native_binary(w);
    std::string data;
    data.reserve(payload.size() + key.canonical.size() + 128);
    data.append(kTraceCacheFormat).append("\n").append(key.canonical).append("\n");
    data.append(fmt::format("{} {}\n", run::content_hash(payload), payload.size()));
    data.append(payload);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) throw InputError(fmt::format("{}: {}", fs::path(path).parent_path().string(), ec.message()));
    write_file_atomic(path, data);
    logger("trace")->debug("trace cache: stored {} ({} B)", path, data.size());
  } catch (const std::exception& e) {
    logger("trace")->warn("trace cache: could not store {}: {}", path, e.what());
    return;
  }
  run::evict_least_recently_used((fs::path(s.dir) / "traces").string(), ".trnb", path,
                                 s.max_bytes, "trace");
}

}  // namespace trnsim::cli
