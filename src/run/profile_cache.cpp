// SPDX-License-Identifier: MIT
#include "profile_cache.hpp"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"

namespace trnsim::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bumped whenever an entry's layout or the meaning of a profile field changes.
constexpr const char* kFormat = "trnsim-calibration-cache-1";
// Temporary files older than this are a crashed writer's: removed by eviction.
constexpr auto kStaleTemporary = std::chrono::hours(1);

json actions_json(const std::map<model::Action, model::ActionMeter>& actions) {
  json out = json::object();
  for (const auto& [a, m] : actions) out[std::string(model::action_name(a))] = {m.quantity, m.rated_j};
  return out;
}

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

// Two independent 64-bit lanes of splitmix64 over the bytes: a file name, not a security
// boundary (the entry's canonical key is compared in full before it is trusted).
std::string hash128(std::string_view text) {
  std::uint64_t a = 0x243f6a8885a308d3ULL ^ text.size(), b = 0x13198a2e03707344ULL ^ text.size();
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, text.data() + i, 8);
    a = splitmix64(a ^ w);
    b = splitmix64(b + (w * 0x9e3779b97f4a7c15ULL));
  }
  std::uint64_t w = 0;
  std::memcpy(&w, text.data() + i, text.size() - i);
  a = splitmix64(a ^ w ^ 0xff);
  b = splitmix64(b + w + 0xff);
  return hex64(a) + hex64(b);
}

int find_build_id(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p, sizeof n);
      const char* name = p + sizeof n;
      const char* desc = name + ((n.n_namesz + 3) & ~3u);
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          desc + n.n_descsz <= end) {
        for (std::size_t k = 0; k < n.n_descsz; ++k) {
          *out += fmt::format("{:02x}", static_cast<unsigned char>(desc[k]));
        }
        return 1;
      }
      p = desc + ((n.n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the first object is the executable: look no further
}

}  // namespace

json profile_to_json(const model::OpProfile& p) {
  return {{"time_ps", p.time_ps},         {"cores_used", p.cores_used},
          {"sbuf", p.sbuf_bytes_per_partition}, {"psum", p.psum_banks},
          {"flops", p.flops},             {"hbm_bytes", p.hbm_bytes},
          {"instructions", p.instructions}, {"read_bytes", p.read_bytes},
          {"write_bytes", p.write_bytes}, {"memory_ps", p.memory_ps},
          {"engine_busy_s", p.engine_busy_s}, {"actions", actions_json(p.actions)}};
}

model::OpProfile profile_from_json(const json& j) {
  model::OpProfile p;
  p.time_ps = j.at("time_ps").get<std::int64_t>();
  p.cores_used = j.at("cores_used").get<int>();
  p.sbuf_bytes_per_partition = j.at("sbuf").get<std::uint64_t>();
  p.psum_banks = j.at("psum").get<int>();
  p.flops = j.at("flops").get<double>();
  p.hbm_bytes = j.at("hbm_bytes").get<double>();
  p.instructions = j.at("instructions").get<std::uint64_t>();
  p.read_bytes = j.at("read_bytes").get<double>();
  p.write_bytes = j.at("write_bytes").get<double>();
  p.memory_ps = j.at("memory_ps").get<std::int64_t>();
  p.engine_busy_s = j.at("engine_busy_s").get<std::array<double, 4>>();
  for (const auto& [name, qj] : j.at("actions").items()) {
    const auto a = model::action_named(name);
    if (!a) throw InternalError(fmt::format("op-level calibration: no action named {}", name));
    p.actions[*a].count_priced(qj.at(0).get<double>(), qj.at(1).get<double>());
  }
  return p;
}

const std::string& build_identity() {
  static const std::string id = [] {
    std::string out;
    dl_iterate_phdr(find_build_id, &out);
    if (!out.empty()) return "build-id " + out;
    // No build id: the executable's bytes (read once per process).
    std::ifstream f("/proc/self/exe", std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return "exe " + hash128(ss.str());
  }();
  return id;
}

CacheSettings cache_settings_from_env(bool no_cache) {
  CacheSettings s;
  const char* off = std::getenv("TRNSIM_NO_CACHE");
  if (no_cache || (off && *off && std::string_view(off) != "0")) return s;
  if (const char* d = std::getenv("TRNSIM_CACHE_DIR"); d && *d) {
    s.dir = d;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x && x[0] == '/') {
    s.dir = std::string(x) + "/trnsim";
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    s.dir = std::string(h) + "/.cache/trnsim";
  } else {
    return s;  // nowhere to keep it
  }
  s.enabled = true;
  return s;
}

CacheKey calibration_key(const resolve::ChipPlan& plan, const std::vector<std::string>& op_keys,
                         bool op_heads) {
  // Everything a tile chip of the calibration is built from (its compute model is always the
  // calibration reference, and the overrides are log lines), and the code that builds it.
  json k = json::object();
  k["format"] = kFormat;
  k["build"] = build_identity();
  k["chip"] = config::JsonWriter::to_json(plan.params);
  k["memory_model"] = plan.memory_model;
  k["granularity"] = plan.granularity;
  k["op_head"] = plan.op_head;
  k["power_model"] = plan.power_model;
  k["op_heads"] = op_heads;
  const std::set<std::string> sorted(op_keys.begin(), op_keys.end());
  k["ops"] = std::vector<std::string>(sorted.begin(), sorted.end());
  CacheKey out;
  out.canonical = k.dump();  // object keys sorted: canonical
  out.hex = hash128(out.canonical);
  return out;
}

CacheKey cache_key(const json& k) {
  CacheKey out;
  out.canonical = k.dump();
  out.hex = hash128(out.canonical);
  return out;
}

std::string content_hash(std::string_view bytes) { return hash128(bytes); }

ProfileCache::ProfileCache(CacheSettings settings) : s_(std::move(settings)) {}

std::string ProfileCache::path_of(const CacheKey& key) const {
  return (fs::path(s_.dir) / "calibration" / (key.hex + ".json")).string();
}

std::optional<CachedCalibration> ProfileCache::get(const CacheKey& key) const {
  const std::string path = path_of(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    const json j = json::parse(read_input_file(path, kMaxConfigFileBytes));
    if (!j.is_object() || j.value("format", "") != kFormat) {
      logger("run")->warn("calibration cache: ignoring {}: not an entry of this format ({})", path,
                          kFormat);
      return std::nullopt;
    }
    if (j.at("key").get<std::string>() != key.canonical) {
      logger("run")->warn("calibration cache: ignoring {}: an entry for another plan, build or op "
                          "set (hash collision or a foreign file)", path);
      return std::nullopt;
    }
    CachedCalibration c;
    c.static_power_w = j.at("static_power_w").get<double>();
    for (const auto& [op, pj] : j.at("profiles").items()) c.profiles.emplace(op, profile_from_json(pj));
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
    return c;
  } catch (const std::exception& e) {
    logger("run")->warn("calibration cache: ignoring corrupt entry {}: {}", path, e.what());
    return std::nullopt;
  }
}

void ProfileCache::put(const CacheKey& key, const CachedCalibration& c) const {
  const std::string path = path_of(key);
  try {
    json j = json::object();
    j["format"] = kFormat;
    j["key"] = key.canonical;
    j["static_power_w"] = c.static_power_w;
    json profiles = json::object();
    for (const auto& [op, p] : c.profiles) profiles[op] = profile_to_json(p);
    j["profiles"] = std::move(profiles);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) throw InputError(fmt::format("{}: {}", fs::path(path).parent_path().string(), ec.message()));
    write_file_atomic(path, j.dump() + "\n");
  } catch (const std::exception& e) {
    logger("run")->warn("calibration cache: could not store {}: {}", path, e.what());
    return;
  }
  evict(path);
}

ProfileCache::Lock::~Lock() {
  if (fd >= 0) ::close(fd);  // releases the flock
}

std::unique_ptr<ProfileCache::Lock> ProfileCache::lock(const CacheKey& key) const {
  const std::string path = (fs::path(s_.dir) / "calibration" / (key.hex + ".lock")).string();
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  auto l = std::make_unique<Lock>();
  l->fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (l->fd < 0) {
    logger("run")->warn("calibration cache: cannot open the lock {}: {}", path, std::strerror(errno));
    return nullptr;
  }
  if (::flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
    logger("run")->info("calibration cache: another trnsim process is calibrating the same ops; "
                        "waiting for its entry");
    l->waited = true;
    while (::flock(l->fd, LOCK_EX) != 0) {
      if (errno != EINTR) return nullptr;
    }
  }
  return l;
}

void evict_least_recently_used(const std::string& dir, std::string_view extension,
                               const std::string& keep, std::uint64_t max_bytes,
                               std::string_view what) {
  // Entries by last use, oldest first.
  struct Entry {
    fs::file_time_type used;
    std::uint64_t bytes;
    fs::path path;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    const fs::path p = it->path();
    const auto t = fs::last_write_time(p, e2);
    const std::uint64_t n = fs::file_size(p, e2);
    if (e2) continue;
    if (p.extension() != extension) {
      if (now - t > kStaleTemporary) fs::remove(p, e2);
      continue;
    }
    total += n;
    if (p.string() != keep) entries.push_back({t, n, p});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes) break;
    std::error_code e2;
    fs::remove(e.path, e2);
    total -= e.bytes;
    logger("run")->debug("{} cache: evicted {} ({} B) to stay within {} B", what, e.path.string(),
                         e.bytes, max_bytes);
  }
}

void ProfileCache::evict(const std::string& keep) const {
  evict_least_recently_used((fs::path(s_.dir) / "calibration").string(), ".json", keep,
                            s_.max_bytes, "calibration");
}

}  // namespace trnsim::run
