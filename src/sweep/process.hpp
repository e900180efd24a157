// SPDX-License-Identifier: MIT
// Child processes of the sweep library: points run as `trnsim run` children, Slurm commands are
// run and their output read, `trnsim claims` reads its measurements' JSON. No shell is
// involved, so values need no quoting.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trnsim::sweep::detail {

// Starts `argv[0]` with `argv`, standard input from /dev/null, standard output and error into
// `log` (created or truncated), or standard output alone into `out` when it is given. Returns the
// child's pid; SweepError when it cannot start.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log, const std::string& out = "");

struct Captured {
  int code = -1;  // exit code; -1 when it could not run or died of a signal
  int status = 0;  // the wait status (for describe_status)
  std::string out;  // standard output, and standard error when no `err_log` is given
};
// Runs `argv` to completion and returns what it printed. With `err_log`, standard error goes
// into that file (created or truncated) instead, so that `out` holds standard output alone.
Captured capture(const std::vector<std::string>& argv, const std::string& err_log = "");

// The error of a failed trnsim run from its log: its last "trnsim: error:" line, else its last
// line (at most 1000 characters).
std::string error_of(const std::string& log);

// "exit code 2", "killed by signal 9 (Killed)".
std::string describe_status(int wait_status);

}  // namespace trnsim::sweep::detail
