// SPDX-License-Identifier: MIT
// Running a sweep: its plan (the points, written once into the sweep directory), a pool of
// `trnsim run` child processes (SystemC allows one simulation per process), resume, and the
// record of each point (points/<id>/status.json, written atomically after its run ended).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trnsim/sweep/sweep.hpp"

namespace trnsim::sweep {

// Everything needed to run the points, independent of the sweep file (which may change or be
// gone when a sweep resumes): DIR/plan.json.
struct Plan {
  struct PlannedPoint {
    std::string id;
    std::size_t index = 0;
    std::vector<Json> values;       // one per axis
    std::vector<std::string> sets;  // the --set assignments of its run
  };
  std::string name, description, file, config, trace;
  // A serving sweep: the spec each point serves (`trnsim serve SERVING --out`; config is the
  // rack, "" = the spec's; the sets split by serve_args). "" = `trnsim run` points.
  std::string serving;
  std::vector<std::string> axis_names, axis_paths;
  int seed_axis = -1;
  std::vector<PlannedPoint> points;
  Json base_config;                 // resolved base config (for `trnsim compare`)
  // Empty: each point runs `trnsim run --config CONFIG [--trace TRACE]`. Otherwise the command
  // after `trnsim` (`trnsim solve` gives one): `run ...` gets --out like a sweep's points, any
  // other command (`bench ... --json`) has its standard output kept in output_file().
  std::vector<std::string> command;
  // The files a `run` point writes (`run --out-files`); a plan from before the key: all of them.
  std::vector<std::string> run_files;

  RunKind kind() const { return serving.empty() ? RunKind::run : RunKind::serve; }
  Json to_json() const;
  static Plan from_json(const Json& j, const std::string& origin);
};

Plan make_plan(const Sweep& sweep, const std::vector<Point>& points);

// The plan of a sweep directory; SweepError when it has none.
Plan read_plan(const std::string& dir);
// The command line (after the executable) that runs one point of the plan, its outputs in
// `out` when it is a run (`run` or `serve`): `trnsim run --config ...`, `trnsim serve SPEC ...`
// or the plan's command.
std::vector<std::string> point_command(const Plan& plan, const Plan::PlannedPoint& point, const std::string& out);

// Writes DIR/plan.json, or checks that the one there is the same sweep (else SweepError: a
// directory holds one sweep).
void write_or_check_plan(const std::string& dir, const Plan& plan);

struct RunOptions {
  std::string dir;           // the sweep directory
  int jobs = 1;              // concurrent `trnsim run` processes
  Shard shard{};
  bool retry_failed = false; // run failed points again (interrupted ones always are)
  bool progress = false;     // a progress line on stderr
  std::string trnsim;        // the executable to run points with
};

struct RunSummary {
  std::size_t points = 0;    // in this shard
  std::size_t skipped = 0;   // already complete (or failed, without retry_failed)
  std::size_t ran = 0, ok = 0, failed = 0;
  bool interrupted = false;  // SIGINT or SIGTERM: running points were stopped, not recorded
};

// Runs the plan's points of `o.shard` that are not complete. Points that end in failure are
// recorded and do not stop the others.
RunSummary run_plan(const Plan& plan, const RunOptions& o);

// The state of one point in a directory: "ok", "failed", "started" (point.json, no status:
// running or interrupted) or "pending".
std::string point_state(const std::string& dir, const std::string& id);
// DIR/points/<id>
std::string point_dir(const std::string& dir, const std::string& id);
// Where the point's `trnsim run --out` writes (a directory of its own: a run's output directory
// appears whole or not at all, so it holds nothing else).
std::string run_dir(const std::string& dir, const std::string& id);

// DIR/points/<id>/output.json: the standard output of a point of a plan with a command other
// than `run`.
std::string output_file(const std::string& dir, const std::string& id);

// This executable (/proc/self/exe).
std::string self_executable();

}  // namespace trnsim::sweep
