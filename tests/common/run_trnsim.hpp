// SPDX-License-Identifier: MIT
// Runs the trnsim binary the tests were built with (TRNSIM_BINARY) and captures its output and
// exit code, for end-to-end tests of the command line.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace trnsim::test {

struct CliResult {
  int code = -1;
  std::string out;
};

// `stderr_too` merges standard error into `out` (error messages); JSON checks read standard
// output alone, since sanitizer builds print warnings on standard error.
inline CliResult run_trnsim(const std::string& args, bool stderr_too = true) {
  const std::string cmd = std::string("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ") + TRNSIM_BINARY +
                          " " + args + (stderr_too ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace trnsim::test
