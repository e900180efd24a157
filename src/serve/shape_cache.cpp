// SPDX-License-Identifier: MIT
#include "trnsim/serve/shape_cache.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>

namespace trnsim::serve {

namespace {

std::string host_name() {
  std::array<char, 256> h{};
  if (::gethostname(h.data(), h.size() - 1) != 0) return "?";
  return h.data();
}

std::string read_fd(int fd) {
  std::string text;
  std::array<char, 256> buf{};
  ssize_t n = 0;
  while ((n = ::pread(fd, buf.data(), buf.size(), off_t(text.size()))) > 0) {
    text.append(buf.data(), std::size_t(n));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

}  // namespace

ShapeClaims::~ShapeClaims() {
  while (!held_.empty()) release(held_.begin()->first);
}

std::string ShapeClaims::lock_path(const Shape& s) const {
  return fmt::format("{}.{}-{}-{}-{}.lock", prefix_, s.decode, s.context, s.prefill,
                     s.prefill_context);
}

std::string ShapeClaims::holder(const Shape& s) const {
  const int fd = ::open(lock_path(s).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text = read_fd(fd);
  ::close(fd);
  return text;
}

ShapeClaims::Claim ShapeClaims::claim(const Shape& s) {
  if (prefix_.empty()) return Claim::self;
  if (held_.count(s)) return Claim::ours;
  const std::string path = lock_path(s);
  const std::string me = fmt::format("{} {}", ::getpid(), host_name());
  // A few rounds: a holder that releases removes its file, so a lock taken on a file that is no
  // longer the path's is taken again on the new one.
  for (int round = 0; round < 8; ++round) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Claim::self;  // no lock file: simulated unclaimed, as without claims
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      // Held: by this process (another timer of the same key) or by another.
      const std::string by = err == EWOULDBLOCK ? read_fd(fd) : std::string();
      ::close(fd);
      if (err != EWOULDBLOCK) return Claim::self;
      return by == me ? Claim::self : Claim::other;
    }
    struct stat ours {}, now {};
    if (::fstat(fd, &ours) != 0 || ::stat(path.c_str(), &now) != 0 || ours.st_ino != now.st_ino ||
        ours.st_dev != now.st_dev) {
      ::close(fd);  // released and removed meanwhile (or removed and made anew): again
      continue;
    }
    // Ours; the file may hold a dead holder's pid (a stale claim, taken over): replaced.
    const std::string line = me + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) != ssize_t(line.size())) {
      // The holder's name is only for messages; the lock is what counts.
    }
    held_[s] = fd;
    return Claim::ours;
  }
  return Claim::self;
}

void ShapeClaims::release(const Shape& s) {
  const auto it = held_.find(s);
  if (it == held_.end()) return;
  // Removed before unlocked: a waiter that locks the old file finds it is no longer the path's.
  ::unlink(lock_path(s).c_str());
  // Children forked while the claim was held share the descriptor: unlocked explicitly, not by
  // closing ours.
  ::flock(it->second, LOCK_UN);
  ::close(it->second);
  held_.erase(it);
}

}  // namespace trnsim::serve
