// SPDX-License-Identifier: MIT
// Design-space sweeps: a sweep file (base config, workload, axes of --set values), its expansion
// into points, and their validation through the config loader before anything runs.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"
#include "trnsim/sweep/metrics.hpp"

namespace trnsim::sweep {

using Json = nlohmann::json;

// A bad sweep file, sweep directory or sweep option: exit code 2.
class SweepError : public InputError {
 public:
  using InputError::InputError;
};

// The path every seed axis uses: its points are grouped, and figures averaged, over it (in a
// serving sweep, kServeSeedPath: the arrivals' seed).
inline constexpr const char* kSeedPath = "sim.seed";
inline constexpr const char* kServeSeedPath = "arrivals.seed";

struct Axis {
  std::string name;         // column name in sweep.csv and in filters (default: last component)
  std::string path;         // a --set path, "chip.hbm.bandwidth" or "/chip/hbm/bandwidth"
  std::string pointer;      // where the axis is in the sweep file ("/axes/2"), for errors
  std::vector<Json> values; // in order; strings are passed to --set as they are
  bool is_seed() const;
};

struct Sweep {
  std::string file;         // the sweep file as given
  std::string name, description;
  // A serving sweep ("command": "serve"): each point is `trnsim serve SERVING`; config is then
  // the rack (`serve --config`; "" = the spec's) and the sets go to the spec, the rack or
  // --rack-set by their path (serve_args). "" = a training sweep of `trnsim run` points.
  std::string serving;      // the serving spec, absolute
  std::string config;       // base config, absolute
  std::string trace;        // workload, absolute; "" = trnsim run's default workload
  std::vector<std::string> sets;  // base --set assignments, applied before the axes
  enum class Combine { grid, zip } combine = Combine::grid;
  std::vector<Axis> axes;
  std::string filter;       // expression over axis names; "" keeps every point
  // The files each point's run directory keeps ("run_files"; kDefaultRunFiles unless given).
  std::vector<std::string> run_files;

  // Index of the seed axis, or -1.
  int seed_axis() const;
  RunKind kind() const { return serving.empty() ? RunKind::run : RunKind::serve; }
};

// Overrides given on the command line; they replace (config, trace) or extend (sets) the file's.
struct Overrides {
  std::string config, trace;
  std::vector<std::string> sets;
  // The file's "config" or "trace" when it is a plain name that is no file beside the sweep file:
  // a preset or a bundled trace, which the command line knows how to find (given the name, the
  // file; throws InputError for an unknown name). Unset: the name stays a path.
  std::function<std::string(const std::string&)> config_by_name, trace_by_name;
  // The file's "serving" when it is a plain name: a spec under configs/serving/.
  std::function<std::string(const std::string&)> serving_by_name;
};

struct Point {
  std::size_t index = 0;    // 0-based position among the kept points
  std::string id;           // "p0007": its directory name
  std::vector<Json> values; // one per axis
};

// Reads and checks a sweep file. Relative "config" and "trace" are relative to the file.
// Throws SweepError naming the file and the JSON pointer of the first problem.
Sweep load_sweep(const std::string& file, const Overrides& overrides = {});
// The same from JSON text (tests); relative paths are relative to `base_dir`.
Sweep parse_sweep(const std::string& text, const std::string& origin, const std::string& base_dir,
                  const Overrides& overrides = {});

// Every point of the grid (or zip), in order (last axis fastest), without those the filter drops.
std::vector<Point> expand(const Sweep& sweep);

// The text an axis value takes after `path=` (strings as they are, numbers as JSON).
std::string value_text(const Json& value);
// The --set assignments of one point: the base sets, then one per axis.
std::vector<std::string> point_sets(const Sweep& sweep, const Point& point);

// What a loaded config must pass: by default check_config, the resolve step as `trnsim config`
// runs it (resolve::plan with Purpose::config); the CLI adds the registry's check of model names.
using ConfigCheck = std::function<void(const config::LoadedConfig&)>;
void check_config(const config::LoadedConfig& loaded);

// Loads the base config, the config of every value of every axis, then of every point, and runs
// `check` on each, before anything runs. Throws SweepError naming the sweep file, the axis
// pointer or point, and the message `trnsim config` would give.
void validate(const Sweep& sweep, const std::vector<Point>& points,
              const ConfigCheck& check = check_config);

// The arguments of one serving point's `trnsim serve`: its assignments split by path. "rack=V"
// (or "/rack=V") is the rack (`--config V`, a preset name or file); "rack.PATH=V" (or
// "/rack/PTR=V") a key of the rack (`--rack-set PATH=V`); every other one a key of the spec
// (`--set`). `rack` starts as the sweep's "config" ("" = the spec's own rack).
struct ServeArgs {
  std::vector<std::string> spec_sets;
  std::string rack;
  std::vector<std::string> rack_sets;
};
ServeArgs serve_args(const std::string& rack, const std::vector<std::string>& sets);

// What a serving point must pass before anything runs: the CLI loads the spec with its sets and
// the rack with its sets (as `trnsim serve` does first). Throws InputError.
using ServeCheck = std::function<void(const std::string& spec, const ServeArgs& args)>;
// As validate(), for a serving sweep: the base, each axis value alone, then every point.
void validate_serve(const Sweep& sweep, const std::vector<Point>& points, const ServeCheck& check);

// The I-th of N slices (1 <= I <= N): point k belongs to slice (k mod N) + 1, so that every
// slice gets the same mix of the grid.
struct Shard {
  int index = 1, count = 1;
};
Shard parse_shard(const std::string& text);  // "2/8"; SweepError otherwise
std::vector<Point> shard_points(const std::vector<Point>& points, Shard shard);

}  // namespace trnsim::sweep
