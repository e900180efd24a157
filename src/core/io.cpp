// SPDX-License-Identifier: MIT
#include "trnsim/io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "trnsim/error.hpp"

namespace trnsim {

namespace fs = std::filesystem;

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes % (1u << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} B", bytes);
}

// Writes all of `content` to a new file; returns errno of the first failure, or 0.
int write_whole(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return err;
    }
    done += std::size_t(n);
  }
  if (::close(fd) != 0) return errno;  // NFS and full disks may report only here
  return 0;
}

// ---- removal of an uncommitted output directory on SIGINT/SIGTERM --------------------------------
// A signal handler may only call async-signal-safe functions, so the paths are kept as C strings
// prepared before the handler can see them.
constexpr std::size_t kMaxTracked = 16;
constexpr std::size_t kPathMax = 4096;
std::array<std::array<char, kPathMax>, kMaxTracked + 1> g_paths{};  // files, then the directory
std::atomic<int> g_path_count{0};
struct sigaction g_old_int {}, g_old_term {};

void remove_tracked(int sig) {
  const int n = g_path_count.load();
  for (int i = 0; i + 1 < n; ++i) ::unlink(g_paths[std::size_t(i)].data());
  if (n > 0) ::rmdir(g_paths[std::size_t(n - 1)].data());
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  ::raise(sig);  // end as the signal would have, now that nothing half-written is left
}

void track(const std::vector<std::string>& files, const std::string& dir) {
  g_path_count = 0;
  std::size_t i = 0;
  for (const auto& f : files) {
    if (i == kMaxTracked || f.size() >= kPathMax) break;
    std::memcpy(g_paths[i].data(), f.c_str(), f.size() + 1);
    ++i;
  }
  if (dir.size() >= kPathMax) return;
  std::memcpy(g_paths[i].data(), dir.c_str(), dir.size() + 1);
  g_path_count = int(i + 1);
  struct sigaction sa {};
  sa.sa_handler = remove_tracked;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

void untrack() {
  if (g_path_count.exchange(0) == 0) return;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

std::string temporary_for(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, ::getpid());
}

// Removes `dir`.tmp.<pid> and `dir`.old.<pid> left beside `dir` by runs that were killed
// (SIGKILL runs no handler): only directories of that exact name whose process is gone.
void remove_stale_temporaries(const std::string& dir) {
  const fs::path p(dir);
  const std::string base = p.filename().string();
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    for (const std::string kind : {".tmp.", ".old."}) {
      const std::string prefix = base + kind;
      if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
      const std::string digits = name.substr(prefix.size());
      if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          digits.size() > 9) {
        continue;
      }
      const auto pid = ::pid_t(std::stol(digits));
      if (pid <= 0 || pid == ::getpid() || !entry.is_directory(ec)) continue;
      if (::kill(pid, 0) != 0 && errno == ESRCH) stale.push_back(entry.path());
    }
  }
  for (const auto& s : stale) fs::remove_all(s, ec);
}

}  // namespace

std::uint64_t default_memory_budget() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t(4) << 30;  // unknown: assume a small machine
  return std::uint64_t(pages) * std::uint64_t(page) / 4;
}

std::string input_file_problem(const std::string& path, std::uint64_t max_bytes) {
  if (path.empty()) return "an empty file name";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);  // follows symlinks; ELOOP
  if (!S_ISREG(st.st_mode)) {
    return fmt::format("{}, expected a regular file", kind_of(st.st_mode));
  }
  if (std::uint64_t(st.st_size) > max_bytes) {
    return fmt::format("{} bytes is more than the {} an input file may have", st.st_size,
                       size_text(max_bytes));
  }
  return "";
}

std::string read_input_file(const std::string& path, std::uint64_t max_bytes) {
  if (auto why = input_file_problem(path, max_bytes); !why.empty()) {
    throw InputError(fmt::format("{}: cannot read: {}", path, why));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string data;
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(fmt::format("{}: cannot read: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    data.append(buf.data(), std::size_t(n));
    if (data.size() > max_bytes) {  // the file grew after stat
      ::close(fd);
      throw InputError(fmt::format("{}: cannot read: more than the {} an input file may have",
                                   path, size_text(max_bytes)));
    }
  }
  ::close(fd);
  return data;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw InputError(fmt::format("{}: cannot write: is a directory", path));
  }
  const std::string tmp = temporary_for(path);
  if (const int err = write_whole(tmp, content); err != 0) {
    fs::remove(tmp, ec);
    throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    fs::remove(tmp, ec);
    throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(err)));
  }
}

OutputDir::OutputDir(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

OutputDir::~OutputDir() = default;

void OutputDir::add(std::string name, std::string content) {
  files_.emplace_back(std::move(name), std::move(content));
  refs_.push_back(nullptr);
}

void OutputDir::add_ref(std::string name, const std::string& content) {
  files_.emplace_back(std::move(name), std::string());
  refs_.push_back(&content);
}

void create_parent_directories(const std::string& path, std::string_view option) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (fs::is_directory(parent, ec)) return;
  fs::create_directories(parent, ec);
  if (ec) {
    throw InputError(fmt::format("{} {}: cannot create the folder {}: {}", option, path,
                                 parent.string(), ec.message()));
  }
}

void OutputDir::check_writable(const std::string& dir_in, const std::vector<std::string>& ours) {
  if (dir_in.empty()) throw InputError("--out: an empty directory name");
  OutputDir probe(dir_in);
  const std::string& dir = probe.dir_;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw InputError(fmt::format("{}: cannot write results: exists and is not a directory", dir));
  }
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const auto name = entry.path().filename().string();
      if (!entry.is_regular_file(ec) || std::find(ours.begin(), ours.end(), name) == ours.end()) {
        throw InputError(fmt::format("{}: cannot write results: the directory holds {}, which a "
                                     "run does not write; not replacing it (give another --out)",
                                     dir, name));
      }
    }
  }
  // The missing parent folders, as commit() creates them.
  if (const fs::path parent = fs::path(dir).parent_path(); !parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) {
      throw InputError(fmt::format("{}: cannot write results: cannot create the folder {}: {}", dir,
                                   parent.string(), ec.message()));
    }
  }
  const std::string tmp = temporary_for(dir);
  if (::mkdir(tmp.c_str(), 0755) != 0) {
    throw InputError(fmt::format("{}: cannot write results: {}", dir, std::strerror(errno)));
  }
  ::rmdir(tmp.c_str());
}

void OutputDir::commit() {
  create_parent_directories(dir_);
  remove_stale_temporaries(dir_);
  const std::string tmp = temporary_for(dir_);
  std::error_code ec;
  fs::remove_all(tmp, ec);  // left by an earlier process of the same pid that was killed
  if (::mkdir(tmp.c_str(), 0755) != 0) {
    throw InputError(fmt::format("{}: cannot write results: {}", dir_, std::strerror(errno)));
  }
  std::vector<std::string> paths;
  for (const auto& [name, content] : files_) paths.push_back(tmp + "/" + name);
  track(paths, tmp);
  auto abandon = [&](const std::string& why) {
    untrack();
    fs::remove_all(tmp, ec);
    throw InputError(fmt::format("{}: cannot write results: {}", dir_, why));
  };
  for (std::size_t i = 0; i < files_.size(); ++i) {
    if (const int err = write_whole(paths[i], refs_[i] ? *refs_[i] : files_[i].second); err != 0) {
      abandon(fmt::format("{}: {}", files_[i].first, std::strerror(err)));
    }
  }
  // An earlier result is moved aside and removed; anything else in the way is refused.
  std::string old;
  if (fs::exists(dir_, ec)) {
    if (!fs::is_directory(dir_, ec)) abandon("exists and is not a directory");
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      const auto name = entry.path().filename().string();
      const bool ours = entry.is_regular_file(ec) &&
                        (std::any_of(files_.begin(), files_.end(),
                                     [&](const auto& f) { return f.first == name; }) ||
                         std::find(replaces_.begin(), replaces_.end(), name) != replaces_.end());
      if (!ours) {
        abandon(fmt::format("the directory holds {}, which a run does not write; not replacing it",
                            name));
      }
    }
    old = fmt::format("{}.old.{}", dir_, ::getpid());
    if (::rename(dir_.c_str(), old.c_str()) != 0) abandon(std::strerror(errno));
  }
  if (::rename(tmp.c_str(), dir_.c_str()) != 0) {
    const int err = errno;
    if (!old.empty()) ::rename(old.c_str(), dir_.c_str());
    abandon(std::strerror(err));
  }
  untrack();
  if (!old.empty()) fs::remove_all(old, ec);
}

std::size_t invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string::npos;
}

}  // namespace trnsim
