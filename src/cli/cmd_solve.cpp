// SPDX-License-Identifier: MIT
// `trnsim solve ... -- COMMAND`: the value of one --set parameter, within a range, that brings a
// metric of a run or bench command to a target (bisection; docs/sweeps.md#solve).
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "commands.hpp"
#include "trnsim/io.hpp"
#include "trnsim/sweep/runner.hpp"
#include "trnsim/sweep/solve.hpp"

namespace trnsim::cli {

void register_solve_command(CLI::App& app, Registry& reg) {
  struct Opts {
    sweep::SolveProblem p;
    std::string out;
    int jobs = 1;
    bool json = false, no_check_ends = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "solve",
      "the value of one parameter, within a range, that brings a run or bench metric to a target "
      "(bisection on a monotone metric; docs/sweeps.md#solve)");
  sub->add_option("--param", o->p.param, "the --set path to solve for (chip.hbm.bandwidth)")->required();
  sub->add_option("--from", o->p.from, "low end of the range, as --set takes it (1TB/s)")->required();
  sub->add_option("--to", o->p.to, "high end of the range, in the same unit (8TB/s)")->required();
  sub->add_option("--metric", o->p.metric,
                  "a figure of sweep/metrics.hpp (run) or a JSON pointer into the command's output")
      ->required();
  sub->add_option("--target", o->p.target, "the metric's value to reach, in its SI unit")->required();
  sub->add_option("--seeds", o->p.seeds,
                  "run every value with sim.seed = 1..N and bisect on the mean (default: one run)")
      ->check(CLI::Range(0, 1000));
  sub->add_flag("--log", o->p.log_scale, "bisect the parameter's logarithm (geometric midpoints)");
  sub->add_flag("--no-check-ends", o->no_check_ends,
                "do not probe the metric just inside each end of the range (two runs fewer)");
  sub->add_option("--xtol", o->p.xtol, "stop when the bracket is this fraction of the range wide")
      ->capture_default_str();
  sub->add_option("--ftol", o->p.ftol, "or when |metric - target| <= ftol x |target|")
      ->capture_default_str();
  sub->add_option("--max-evals", o->p.max_evals, "at most this many values")
      ->capture_default_str()
      ->check(CLI::Range(2, 10000));
  sub->add_option("--out", o->out, "the solve directory (default out/solve/PARAM); the same command resumes");
  sub->add_option("-j,--jobs", o->jobs, "concurrent processes (the seeds of one value)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sub->add_flag("--json", o->json, "print solve.json instead of the table");
  sub->add_option("COMMAND", o->p.command,
                  "after --: `run --config C [--trace T]` or `bench KIND ... --json`")
      ->required();
  reg.add(sub, Footprint::builds_models, [o]() {
    o->p.check_ends = !o->no_check_ends;
    if (o->out.empty()) o->out = "out/solve/" + o->p.param;
    sweep::SolveOptions so;
    so.dir = o->out;
    so.jobs = o->jobs;
    so.trnsim = sweep::self_executable();
    so.progress = !o->json;
    try {
      const sweep::SolveResult r = sweep::solve(o->p, so);
      if (o->json) {
        fmt::print("{}\n", r.to_json(o->p).dump(2));
      } else {
        fmt::print("{}runs: {}/evals/, record: {}/solve.json\n", sweep::solve_text(o->p, r), o->out, o->out);
      }
      return r.converged ? 0 : 3;
    } catch (const sweep::SolveInterrupted& e) {
      fmt::print(stderr, "{}\n", e.what());
      return 130;
    }
  });
}

}  // namespace trnsim::cli
