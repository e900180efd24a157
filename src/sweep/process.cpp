// SPDX-License-Identifier: MIT
#include "process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>

#include "files.hpp"
#include "trnsim/sweep/sweep.hpp"

namespace trnsim::sweep::detail {

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child, after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<char*>& args, int out_fd, int err_fd, pid_t parent) {
  // A sweep killed outright (SIGKILL, a lost Slurm node) must not leave orphaned runs writing
  // into point directories that a resume is about to clean.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  const int in = ::open("/dev/null", O_RDONLY);
  if (in >= 0) ::dup2(in, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  // The sweep's own SIGINT/SIGTERM handlers must not carry over.
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::execvp(args[0], args.data());
  const char msg[] = "trnsim sweep: cannot execute the point's command\n";
  [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
  ::_exit(127);
}

}  // namespace

pid_t spawn(const std::vector<std::string>& argv, const std::string& log, const std::string& out) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw SweepError(fmt::format("{}: cannot write: {}", log, std::strerror(errno)));
  int out_fd = fd;
  if (!out.empty()) {
    out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      ::close(fd);
      throw SweepError(fmt::format("{}: cannot write: {}", out, std::strerror(errno)));
    }
  }
  auto args = c_argv(argv);
  const pid_t self = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    if (out_fd != fd) ::close(out_fd);
    throw SweepError(fmt::format("cannot start {}: fork failed: {}", argv[0], std::strerror(errno)));
  }
  if (pid == 0) exec_child(args, out_fd, fd, self);
  ::close(fd);
  if (out_fd != fd) ::close(out_fd);
  return pid;
}

Captured capture(const std::vector<std::string>& argv, const std::string& err_log) {
  Captured c;
  int err = -1;
  if (!err_log.empty()) {
    err = ::open(err_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err < 0) throw SweepError(fmt::format("{}: cannot write: {}", err_log, std::strerror(errno)));
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    if (err >= 0) ::close(err);
    return c;
  }
  auto args = c_argv(argv);
  const pid_t self = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    if (err >= 0) ::close(err);
    return c;
  }
  if (pid == 0) exec_child(args, fds[1], err >= 0 ? err : fds[1], self);
  ::close(fds[1]);
  if (err >= 0) ::close(err);
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) c.out.append(buf, std::size_t(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  c.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (c.code == 127) c.code = -1;  // exec failed: the command is not installed
  c.status = st;
  return c;
}

std::string error_of(const std::string& log) {
  std::istringstream in(read_text(log));
  std::string line, last, err;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.starts_with("trnsim: error:") || line.starts_with("trnsim: internal error:")) err = line;
  }
  std::string e = err.empty() ? last : err;
  if (e.size() > 1000) e = e.substr(0, 1000) + "...";
  return e;
}

std::string describe_status(int st) {
  if (WIFEXITED(st)) return fmt::format("exit code {}", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(st), ::strsignal(WTERMSIG(st)));
  }
  return "stopped";
}

}  // namespace trnsim::sweep::detail
