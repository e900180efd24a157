// SPDX-License-Identifier: MIT
#include "trnsim/isolate.hpp"

#include <fmt/format.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string_view>

#include "trnsim/error.hpp"

namespace trnsim {

namespace {

constexpr int kBackgroundNice = 19;

bool write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += std::size_t(n);
  }
  return true;
}

// A child builds its work from fresh memory (a serving shape's child: 40 to 90 MB, a model
// elaborated and an iteration replayed) and ends with _exit, never giving memory back. By
// default malloc grows the heap by 128 KB at a time and returns its top above 128 KB, so a child
// faults in its heap 4 KB at a time and trims and refaults it as it frees and allocates again.
// Here the heap is never trimmed, grows 64 MB at a time, and the first 64 MB are advised as
// transparent huge pages (one fault for 2 MB; where the kernel has none free it falls back to
// 4 KB pages): on a cold 30-request `trnsim serve`, 2.04 M page faults became 0.90 M, the system
// time fell by a fifth and the CPU by 7 % (docs/serving.md, "Where a shape's CPU goes"). The
// mmap threshold is pinned at malloc's default, 128 KB, so that the SystemC threads' stacks
// (256 KB each) stay mappings of their own and their guard pages never split the huge pages of
// the heap. Nothing the job computes depends on where its memory is.
void prepare_heap() {
  constexpr std::size_t kPad = std::size_t(64) << 20, kHuge = std::size_t(2) << 20;
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, int(kPad));
  // The free top of the heap (what the parent left) and an allocation just past it, taken from
  // the heap (the mmap threshold raised for it): the heap grows by the pad, and the allocation
  // goes back to the top, which is kept.
  const std::size_t top = ::mallinfo2().keepcost;
  const auto start = reinterpret_cast<std::uintptr_t>(::sbrk(0)) - top;
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (top < (std::size_t(16) << 20)) {
    void* volatile probe = std::malloc(top + 64 * 1024);  // volatile: not elided with its free
    std::free(probe);
  }
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  const auto end = reinterpret_cast<std::uintptr_t>(::sbrk(0));
  const std::uintptr_t lo = (start + kHuge - 1) / kHuge * kHuge, hi = end / kHuge * kHuge;
  // Advice only: a kernel without transparent huge pages refuses it and the heap stays as it is.
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
}

// What a child writes: one status byte ('o' ok, 'i' input error, 'e' internal error), then the
// job's result or the error's message.
[[noreturn]] void child(const std::function<std::string()>& job, int fd) {
  prepare_heap();
  std::string out(1, 'o');
  int code = 0;
  try {
    out += job();
  } catch (const InputError& e) {
    out.assign(1, 'i');
    out += e.what();
    code = 2;
  } catch (const std::exception& e) {
    out.assign(1, 'e');
    out += e.what();
    code = 1;
  }
  const bool ok = write_all(fd, out);
  ::close(fd);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(ok ? code : 1);
}

}  // namespace

std::vector<std::string> run_forked(const std::vector<std::function<std::string()>>& jobs,
                                    int parallel) {
  parallel = std::max(1, parallel);
  std::vector<ForkPool::Done> done(jobs.size());
  {
    ForkPool pool;
    std::map<std::uint64_t, std::size_t> job_of;  // the pool's id -> the job's index
    std::size_t next = 0, ended = 0;
    while (ended < jobs.size()) {
      for (; next < jobs.size() && pool.running() < std::size_t(parallel); ++next) {
        job_of[pool.start(jobs[next])] = next;
      }
      for (ForkPool::Done& d : pool.collect(true)) {
        done[job_of.at(d.id)] = std::move(d);
        ++ended;
      }
    }
  }
  // Every child has ended: the first failure in the jobs' order, whichever ended first.
  std::vector<std::string> text(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    ForkPool::Done& d = done[j];
    d.rethrow();
    text[j] = std::move(d.text);
  }
  return text;
}

void ForkPool::Done::rethrow() const {
  if (kind == 'o') return;
  if (kind == 'i') throw InputError(text);
  if (kind == 'e') throw InternalError(text);
  throw InternalError(fmt::format("child process died (status {})", text));
}

void exec_with_huge_page_malloc(char** argv) {
  constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
  const std::string now = malloc_tunables();
  if (now.find(kTunable) != std::string::npos) return;
  const std::string with = (now.empty() ? "" : now + ":") + std::string(kTunable) + "=1";
  if (::setenv("GLIBC_TUNABLES", with.c_str(), 1) != 0) return;
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv("/proc/self/exe", argv);
  // No exec (no /proc): as before, without the tunable.
  if (now.empty()) {
    ::unsetenv("GLIBC_TUNABLES");
  } else {
    ::setenv("GLIBC_TUNABLES", now.c_str(), 1);
  }
}

std::string malloc_tunables() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  return t ? t : "";
}

ForkPool::~ForkPool() {
  for (const auto& [fd, c] : running_) {
    ::kill(c.pid, SIGKILL);
    ::close(fd);
    ::waitpid(c.pid, nullptr, 0);
  }
}

std::uint64_t ForkPool::start(const std::function<std::string()>& job, bool background) {
  int fds[2];
  if (::pipe(fds) != 0) throw InternalError("pipe() failed");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw InternalError("fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    for (const auto& [fd, c] : running_) ::close(fd);
    if (background) ::setpriority(PRIO_PROCESS, 0, kBackgroundNice);
    child(job, fds[1]);
  }
  ::close(fds[1]);
  running_[fds[0]] = Child{next_, pid, {}};
  return next_++;
}

void ForkPool::foreground(std::uint64_t id) {
  const int own = ::getpriority(PRIO_PROCESS, 0);
  // The child, then the children it has forked (a calibration's: they took its priority), as
  // /proc lists them; one that ends meanwhile is simply not found.
  std::function<void(pid_t)> raise = [&](pid_t pid) {
    ::setpriority(PRIO_PROCESS, id_t(pid), own);
    std::ifstream kids(fmt::format("/proc/{}/task/{}/children", pid, pid));
    for (pid_t k = 0; kids >> k;) raise(k);
  };
  for (const auto& [fd, c] : running_) {
    if (c.id == id) raise(c.pid);
  }
}

std::vector<ForkPool::Done> ForkPool::collect(bool block) {
  std::vector<Done> out;
  // Blocking: until a child has ended; then (and without blocking) whatever else is ready.
  while (!running_.empty()) {
    std::vector<pollfd> fds;
    for (const auto& [fd, c] : running_) fds.push_back({fd, POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), block && out.empty() ? -1 : 0);
    if (ready < 0) continue;  // EINTR: poll again
    if (ready == 0) break;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      char buf[65536];
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      Child& c = running_.at(p.fd);
      if (n > 0) {
        c.text.append(buf, std::size_t(n));
        continue;
      }
      ::close(p.fd);
      int status = 0;
      ::waitpid(c.pid, &status, 0);
      Done d;
      d.id = c.id;
      if (!c.text.empty() && (c.text[0] == 'o' || c.text[0] == 'i' || c.text[0] == 'e')) {
        d.kind = c.text[0];
        d.text = c.text.substr(1);
      } else {
        d.text = std::to_string(status);
      }
      out.push_back(std::move(d));
      running_.erase(p.fd);
    }
  }
  std::sort(out.begin(), out.end(), [](const Done& a, const Done& b) { return a.id < b.id; });
  return out;
}

}  // namespace trnsim
