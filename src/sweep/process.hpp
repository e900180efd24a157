// SPDX-License-Identifier: MIT
// Child processes of the sweep library: points run as `trnsim run` children, Slurm commands are
// run and their output read. No shell is involved, so values need no quoting.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trnsim::sweep::detail {

// Starts `argv[0]` with `argv`, standard input from /dev/null, standard output and error into
// `log` (created or truncated). Returns the child's pid; SweepError when it cannot start.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log);

struct Captured {
  int code = -1;  // exit code; -1 when it could not run or died of a signal
  std::string out;  // standard output and error
};
// Runs `argv` to completion and returns what it printed.
Captured capture(const std::vector<std::string>& argv);

// "exit code 2", "killed by signal 9 (Killed)".
std::string describe_status(int wait_status);

}  // namespace trnsim::sweep::detail
