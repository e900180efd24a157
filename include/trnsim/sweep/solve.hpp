// SPDX-License-Identifier: MIT
// `trnsim solve`: the value of one --set parameter, within a range, that brings a metric of a
// `trnsim run` or `trnsim bench` command to a target, by bisection on a monotone metric. Each
// value tried is a sweep directory of its own (one point per seed), run by the sweep runner, so
// every run is kept and a solve that stops resumes where it stopped. docs/sweeps.md#solve.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "trnsim/sweep/sweep.hpp"

namespace trnsim::sweep {

// A parameter value as --set takes it: a number and the unit text that follows it ("4.9TB/s").
struct ParamValue {
  double number = 0;
  std::string unit;  // "" for a plain number
  std::string text() const;  // "4.9TB/s", with up to 9 significant digits
};
// "4.9TB/s" -> {4.9, "TB/s"}; SweepError naming `option` when it does not start with a number.
ParamValue parse_param_value(const std::string& text, const std::string& option);

struct SolveProblem {
  std::string param;                 // a --set path
  std::string from, to;              // the range, as given (same unit)
  std::string metric;                // a name of kMetrics (run only) or a JSON pointer
  double target = 0;
  // The command after `trnsim`: `run ...` (its report.json is read; solve adds --out) or
  // `bench ... --json` (its standard output is read). Each evaluation appends its --set options.
  std::vector<std::string> command;
  int seeds = 0;                     // 0: no seed axis; N: sim.seed = 1..N, the metric is their mean
  bool log_scale = false;            // bisect the logarithm of the parameter (geometric midpoints)
  bool check_ends = true;            // probe the metric just inside each end of the range
  double xtol = 1e-3;                // stop when the bracket is this fraction of the range wide
  double ftol = 0;                   // or when |metric - target| <= ftol x |target|
  int max_evals = 30;

  Json to_json() const;
};

// The pointer into the command's output that `metric` reads, and the file it is in: a run's
// report.json (kMetrics names or pointers), a bench's --json output (pointers only). SweepError
// naming --metric otherwise.
struct MetricSource {
  bool run = false;
  std::string pointer;
};
MetricSource metric_source(const SolveProblem& p);

struct Evaluation {
  std::string value;           // as passed to --set
  double x = 0;
  double mean = 0, stddev = 0; // over the seeds (stddev 0 with one run)
  std::vector<double> values;  // one per seed
  std::string dir;             // its sweep directory
  bool reused = false;         // complete before this invocation
  std::string role;            // "end", "end probe" or "bisection"
};

struct SolveResult {
  std::vector<Evaluation> evaluations;  // in the order they were used
  std::size_t lo = 0, hi = 0;           // indices of the final bracket's ends
  double answer = 0;                    // linear interpolation of the target in the final bracket
  std::string answer_text;
  bool converged = false;               // by xtol or ftol, not by max_evals
  bool increasing = true;
  std::string note;                     // noise, or how the search stopped
  Json to_json(const SolveProblem& p) const;
};

// SIGINT or SIGTERM stopped the runs: nothing of the running value was recorded, and the same
// command resumes (exit code 130).
class SolveInterrupted : public std::runtime_error {
 public:
  explicit SolveInterrupted(const std::string& dir)
      : std::runtime_error(fmt::format("solve interrupted; the same command with --out {} resumes it", dir)) {}
};

struct SolveOptions {
  std::string dir;       // the solve directory: solve.json and evals/<value>/
  int jobs = 1;          // concurrent processes (the seeds of one value)
  std::string trnsim;    // the executable
  bool progress = false; // one line per evaluation on stderr
};

// Runs the bisection. SweepError (exit 2) for a range that does not bracket the target (naming
// it, with the metric at both ends), a metric that is not monotone on it, an evaluation that
// rejected its input, or a directory that holds another solve.
SolveResult solve(const SolveProblem& p, const SolveOptions& o);

// The text table of a result.
std::string solve_text(const SolveProblem& p, const SolveResult& r);

}  // namespace trnsim::sweep
