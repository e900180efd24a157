// SPDX-License-Identifier: MIT
// Running the measurements of a claims file: each a `trnsim ... --json` child process, at most
// `jobs` at a time (run_forked's pool; each job execs trnsim and returns what it printed).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "../sweep/process.hpp"
#include "trnsim/claims/claims.hpp"
#include "trnsim/isolate.hpp"

namespace trnsim::claims {

namespace fs = std::filesystem;

std::map<std::string, RunResult> execute(const ClaimsFile& f, bool quick, const ExecOptions& o) {
  const std::vector<std::string> names = needed_runs(f, quick);
  std::error_code ec;
  fs::create_directories(o.log_dir, ec);
  if (ec)
    throw ClaimsError(fmt::format("{}: cannot create directory: {}", o.log_dir, ec.message()));
  std::vector<std::function<std::string()>> jobs;
  std::vector<std::string> to_run;
  for (const auto& name : names) {
    const auto it = o.reuse.find(name);
    if (it == o.reuse.end() || it->second.args != run_args(f, f.runs.at(name), quick)) to_run.push_back(name);
  }
  for (const auto& name : to_run) {
    std::vector<std::string> argv{o.trnsim};
    for (auto& a : run_args(f, f.runs.at(name), quick)) argv.push_back(std::move(a));
    const std::string log = o.log_dir + "/" + name + ".log";
    // The job's result: "<exit code> <wait status> <wall seconds>\n" and the standard output.
    jobs.emplace_back([argv, log] {
      const auto t0 = std::chrono::steady_clock::now();
      const sweep::detail::Captured c = sweep::detail::capture(argv, log);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return fmt::format("{} {} {:.6f}\n", c.code, c.status, wall) + c.out;
    });
  }
  const std::vector<std::string> texts = run_forked(jobs, o.jobs);
  std::map<std::string, RunResult> out;
  for (const auto& name : names) {
    if (std::find(to_run.begin(), to_run.end(), name) == to_run.end()) out[name] = o.reuse.at(name);
  }
  for (std::size_t i = 0; i < to_run.size(); ++i) {
    const std::string& name = to_run[i];
    RunResult r;
    r.args = run_args(f, f.runs.at(name), quick);
    const std::string& t = texts[i];
    const std::size_t eol = t.find('\n');
    int code = -1, status = 0;
    if (eol == std::string::npos ||
        std::sscanf(t.c_str(), "%d %d %lf", &code, &status, &r.wall_s) != 3) {
      throw InternalError(fmt::format("measurement {}: malformed result from its child", name));
    }
    const std::string log = o.log_dir + "/" + name + ".log";
    const std::string command = fmt::format("trnsim {}", fmt::join(r.args, " "));
    if (code == 2) {
      throw ClaimsError(fmt::format("{}:/runs/{}: `{}` rejected its input: {}", f.path, name,
                                    command, sweep::detail::error_of(log)));
    }
    if (code != 0) {
      r.error = fmt::format(
          "`{}` ended with {}: {} (log {})", command,
          code < 0 ? sweep::detail::describe_status(status) : fmt::format("exit code {}", code),
          sweep::detail::error_of(log), log);
    } else {
      try {
        r.output = Json::parse(t.substr(eol + 1));
        if (!r.output->is_object()) throw std::invalid_argument("not an object");
      } catch (const std::exception&) {
        r.output.reset();
        r.error = fmt::format("`{}` printed no JSON object (log {})", command, log);
      }
    }
    out[name] = std::move(r);
  }
  return out;
}

}  // namespace trnsim::claims
