// SPDX-License-Identifier: MIT
// Work in forked child processes. SystemC allows one elaboration per process, so anything that
// must elaborate a model of its own (a benchmark point, the op-level calibration of a run) runs
// in a child, before or beside the parent's one simulation.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace trnsim {

// Runs each job in its own forked child, at most `parallel` (>= 1) at a time, and returns what
// each returned, in job order. An InputError in a child is rethrown here with its message (that
// of the first failing job in job order); any other failure becomes an InternalError.
std::vector<std::string> run_forked(const std::vector<std::function<std::string()>>& jobs,
                                    int parallel);

// Re-executes this program (/proc/self/exe, the same arguments) once with glibc's malloc advising
// transparent huge pages for its heap and its large blocks: the tunable glibc.malloc.hugetlb=1,
// which glibc reads only when a program starts, added to GLIBC_TUNABLES. A process that builds
// hundreds of MB (a run's model, serve's shape children) then takes one page fault per 2 MB
// instead of one per 4 KB. Returns without an exec when GLIBC_TUNABLES names the tunable already
// (set by the user, who may also turn it off with =0, or by this exec) or when the exec fails;
// the process then goes on as it is. Nothing a run computes depends on where its memory is.
void exec_with_huge_page_malloc(char** argv);

// GLIBC_TUNABLES as this process has it (empty: not set), for host.json.
std::string malloc_tunables();

// Jobs in forked children started one at a time and collected as they end, for a caller that
// keeps working meanwhile (serve's shapes simulated ahead of need). The children are killed and
// reaped when the pool is destroyed.
class ForkPool {
 public:
  ForkPool() = default;
  ForkPool(const ForkPool&) = delete;
  ForkPool& operator=(const ForkPool&) = delete;
  ~ForkPool();
  // Starts `job` in a forked child; returns its id (1, 2, ...). A `background` child (and what
  // it forks) runs at the lowest CPU priority (nice 19), so that on a busy machine it takes only
  // the cores the normal children leave idle: serve's shapes simulated ahead of need.
  std::uint64_t start(const std::function<std::string()>& job, bool background = false);
  // A background child (and its children) back at this process's priority, from now on: the
  // parent needs its result. Best effort: without the right to raise a priority (RLIMIT_NICE)
  // the child stays at the low one.
  void foreground(std::uint64_t id);
  std::size_t running() const { return running_.size(); }
  struct Done {
    std::uint64_t id = 0;
    // 'o' the job's result in `text`; 'i' an InputError, 'e' another error (its message in
    // `text`); 'd' the child died (its wait status in `text`).
    char kind = 'd';
    std::string text;
    // A failure as the caller's exception: InputError for 'i' (its message), InternalError for
    // 'e' and 'd'; nothing for 'o'.
    void rethrow() const;
  };
  // The children that ended, in the order of their ids; with `block`, waits until one has
  // (none running: returns at once).
  std::vector<Done> collect(bool block);

 private:
  struct Child {
    std::uint64_t id = 0;
    pid_t pid = 0;
    std::string text;
  };
  std::map<int, Child> running_;  // by the read end of its pipe
  std::uint64_t next_ = 1;
};

}  // namespace trnsim
