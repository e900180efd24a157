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

// Bumped whenever an entry's layout or the meaning of a profile field changes (2: profiles
// counted from zero for each op, one line per op).
constexpr const char* kFormat = "trnsim-op-profiles-2";
// The store's folder under the cache folder, and its files' extension.
constexpr const char* kStoreDir = "op-profiles";
constexpr const char* kStoreExtension = ".ops";
// The name a store line gives the tile chip's static power (no op key starts with '#').
constexpr std::string_view kStaticPower = "#static_power_w";
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

namespace {

// Everything a tile chip of the calibration is built from (its compute model is always the
// calibration reference, and the overrides are log lines), and the code that builds it.
json plan_json(const resolve::ChipPlan& plan, bool op_heads) {
  json k = json::object();
  k["format"] = kFormat;
  k["build"] = build_identity();
  k["chip"] = config::JsonWriter::to_json(plan.params);
  k["memory_model"] = plan.memory_model;
  k["granularity"] = plan.granularity;
  k["op_head"] = plan.op_head;
  k["power_model"] = plan.power_model;
  k["op_heads"] = op_heads;
  return k;
}

}  // namespace

CacheKey calibration_key(const resolve::ChipPlan& plan, const std::vector<std::string>& op_keys,
                         bool op_heads) {
  json k = plan_json(plan, op_heads);
  const std::set<std::string> sorted(op_keys.begin(), op_keys.end());
  k["ops"] = std::vector<std::string>(sorted.begin(), sorted.end());
  return cache_key(k);  // object keys sorted: canonical
}

CacheKey plan_key(const resolve::ChipPlan& plan, bool op_heads) {
  return cache_key(plan_json(plan, op_heads));
}

CacheKey cache_key(const json& k) {
  CacheKey out;
  out.canonical = k.dump();
  out.hex = hash128(out.canonical);
  return out;
}

std::string content_hash(std::string_view bytes) { return hash128(bytes); }

ProfileCache::ProfileCache(CacheSettings settings) : s_(std::move(settings)) {}

std::string ProfileCache::path_of(const CacheKey& plan) const {
  return (fs::path(s_.dir) / kStoreDir / (plan.hex + kStoreExtension)).string();
}

namespace {

// A store line: "<checksum>\t<op key>\t<profile JSON>\n"; the checksum is content_hash() of the
// plan's hash and the rest of the line, so a line of another plan's file is never trusted.
std::string line_checksum(const CacheKey& plan, std::string_view key, std::string_view value) {
  std::string text = plan.hex;
  text += '\t';
  text += key;
  text += '\t';
  text += value;
  return hash128(text);
}

}  // namespace

CachedCalibration ProfileCache::get(const CacheKey& plan, const std::set<std::string>& ops) const {
  CachedCalibration out;
  const std::string path = path_of(plan);
  std::string text;
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) return out;
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  std::size_t bad = 0;
  std::string first_bad;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // a writer's append under way: not there yet
    ++line_no;
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;  // put() ends another writer's torn line with a newline
    const std::size_t t1 = line.find('\t');
    const std::size_t t2 = t1 == std::string_view::npos ? t1 : line.find('\t', t1 + 1);
    auto reject = [&](std::string_view why) {
      if (bad++ == 0) first_bad = fmt::format("line {}: {}", line_no, why);
    };
    if (t2 == std::string_view::npos) {
      reject("not a store line");
      continue;
    }
    const std::string_view key = line.substr(t1 + 1, t2 - t1 - 1);
    const std::string_view value = line.substr(t2 + 1);
    const bool is_static = key == kStaticPower;
    if (!is_static && !ops.contains(std::string(key))) continue;  // not wanted: not checked
    if (line.substr(0, t1) != line_checksum(plan, key, value)) {
      reject("checksum mismatch (corrupt, or another plan's)");
      continue;
    }
    try {
      const json j = json::parse(value);
      if (is_static) {
        if (!out.static_power_w) out.static_power_w = j.get<double>();
        continue;
      }
      model::OpProfile p = profile_from_json(j);
      const auto [it, added] = out.profiles.try_emplace(std::string(key), std::move(p));
      if (!added && profile_to_json(it->second) != j) {
        // Profiles are counted from zero for their op, so two calibrations of one op agree to
        // the bit; if they do not, the first line wins (every reader takes the same).
        logger("run")->warn("op profile store: {} holds two different profiles of {}; the first "
                            "is used", path, key);
      }
    } catch (const std::exception& e) {
      reject(e.what());
    }
  }
  if (bad) {
    logger("run")->warn("op profile store: ignoring {} corrupt or foreign line(s) of {} ({})", bad,
                        path, first_bad);
  }
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // recently used
  return out;
}

void ProfileCache::put(const CacheKey& plan, const CachedCalibration& c) const {
  const std::string path = path_of(plan);
  std::string lines;
  auto add = [&](std::string_view key, const std::string& value) {
    lines += line_checksum(plan, key, value);
    lines += '\t';
    lines += key;
    lines += '\t';
    lines += value;
    lines += '\n';
  };
  for (const auto& [op, p] : c.profiles) add(op, profile_to_json(p).dump());
  if (c.static_power_w) add(kStaticPower, json(*c.static_power_w).dump());
  if (lines.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // One append of whole lines (O_APPEND: concurrent writers' lines do not interleave); a failure
  // leaves the run without the store, not wrong (a torn line fails its checksum).
  const int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  // After a crashed writer's torn line, start on a line of our own (the torn one then fails its
  // checksum alone).
  struct stat st {};
  char last = '\n';
  if (ok && ::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) == 1 &&
      last != '\n') {
    lines.insert(0, 1, '\n');
  }
  for (std::size_t done = 0; ok && done < lines.size();) {
    const ssize_t n = ::write(fd, lines.data() + done, lines.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += std::size_t(n);
  }
  if (!ok) logger("run")->warn("op profile store: could not append to {}: {}", path, std::strerror(errno));
  if (fd >= 0) ::close(fd);
  if (ok) evict(path);
}

ProfileCache::Lock::~Lock() {
  if (fd >= 0) ::close(fd);  // releases the flock
}

std::unique_ptr<ProfileCache::Lock> ProfileCache::lock(const CacheKey& set) const {
  const std::string path = (fs::path(s_.dir) / kStoreDir / (set.hex + ".lock")).string();
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  auto l = std::make_unique<Lock>();
  l->fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (l->fd < 0) {
    logger("run")->warn("op profile store: cannot open the lock {}: {}", path, std::strerror(errno));
    return nullptr;
  }
  if (::flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
    logger("run")->info("op profile store: another trnsim process is calibrating the same ops; "
                        "waiting for its profiles");
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
  evict_least_recently_used((fs::path(s_.dir) / kStoreDir).string(), kStoreExtension, keep,
                            s_.max_bytes, "op profile");
}

}  // namespace trnsim::run
