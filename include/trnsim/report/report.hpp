// SPDX-License-Identifier: MIT
// The report layer: turns what a run measured (run::RunData) into the files and text a user
// reads. It formats; it never simulates, and it reads the models only through their statistics.
// Every file and field is described in docs/report.md.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/report/summary.hpp"
#include "trnsim/run/run.hpp"

namespace trnsim::report {

using Json = nlohmann::json;

// report.json's "schema_version": raised whenever a field changes meaning or moves.
// 2: fabric.messages counts pieces at every tier; 3: energy.peak_power_w over a fixed window
// (/sim/peak_power_window), not one sample interval
inline constexpr int kSchemaVersion = 3;

// Where a run came from: what only the command line knows.
struct Identity {
  std::vector<std::string> command_line;
  std::string config;                     // as given (a preset name or a path)
  std::vector<std::string> config_files;  // the preset and every file it extends, in order
  std::string trace;                      // as given (a file or a Chakra prefix)
  std::vector<std::string> trace_files;   // the files read
  std::string trace_sha256;               // of the bytes of trace_files, concatenated in order
  std::uint64_t trace_bytes = 0;
};

// The bounds of timeline.json (docs/report.md, "Timeline").
struct TimelineOptions {
  std::size_t max_events = 200000;  // op events beyond it are dropped, the longest kept
  std::vector<int> ranks;           // the ranks drawn (empty: every rank)
  double window_from_ns = 0;        // the ops drawn overlap [from, to), each drawn whole
  double window_to_ns = std::numeric_limits<double>::infinity();
  bool counters = true;             // HBM bandwidth, link utilisation and power tracks
  std::size_t link_tracks = 16;     // with counters: a utilisation track per busiest link
  bool flows = true;                // arrows from a collective's first to its last member
};

struct Report {
  Json report;               // report.json: the same bytes for the same inputs
  Json host;                 // host.json: wall time and kernel activity (differ between runs)
  Json stats;                // every block's statistics by hierarchical name
  Json timeline;             // Chrome/Perfetto trace events
  std::string ops_csv;       // one row per op
  std::string summary_csv;   // one header and one row of headline figures
  std::string text;          // the human-readable summary
};

// What make_report builds beyond report.json, summary.csv, host.json and the text, each only
// when it is written: ops.csv and timeline.json (seconds for a large trace; report.json says what
// the timeline holds when there is one), stats.json (every block of the rack: a sixth of the
// report's work on a small trace). Left out, a part is empty. By default, everything.
struct ReportParts {
  bool ops_and_timeline = true;
  bool stats = true;
};

Report make_report(const run::RunData& run, const Identity& identity = {},
                   const TimelineOptions& timeline = {}, ReportParts parts = {});

// The Chrome/Perfetto trace of a run (timeline.cpp). Its "otherData" says how many ops the run
// had, how many the ranks and window select, how many were drawn and how many dropped by the cap.
Json make_timeline(const run::RunData& run, const TimelineOptions& options);

// The records a timeline draws: those of the chosen ranks that overlap the window, the longest
// max_events of them. `selected` counts them before the cap.
struct TimelineSelection {
  std::vector<std::size_t> keep;  // indices into run.records
  std::size_t selected = 0;
};
TimelineSelection select_timeline_ops(const run::RunData& run, const TimelineOptions& options);

// The chips the workload runs on (those of run.rank_to_chip), in order.
std::vector<int> used_chips(const run::RunData& run);

// The static power of the used chips and their share of the fabric's (the chips used over all
// chips), over the step.
double workload_static_power(const run::RunData& run, const std::vector<int>& used);
// The workload's power over each interval between consecutive samples: the dynamic energy of the
// used chips and of the fabric in it, over the part of it inside the step, plus the static power
// above. timeline.json's power track draws them; report.json's peak_power_w is over a fixed
// window instead (/sim/peak_power_window), as no interval is the same at every tier. Intervals
// of no length inside the step are left out.
struct PowerInterval {
  double start_s = 0;
  double watts = 0;
};
struct WorkloadPower {
  double static_w = 0;
  std::vector<PowerInterval> intervals;
};
WorkloadPower workload_power(const run::RunData& run, const std::vector<int>& used);

// count, mean, p50, p90, p99 and max of `seconds`, in nanoseconds (nearest-rank percentiles); an
// empty object for no values.
Json percentiles_ns(std::vector<double> seconds);

// Writes report.json, summary.csv, host.json, config.json (fully resolved), stats.json, ops.csv and
// timeline.json into `dir` (created if missing), all together or none: `report` has all parts.
void write_outputs(const std::string& dir, const Report& report, const config::LoadedConfig& cfg);
// Only the files named in `files` (each one of output_file_names(); `run --out-files`); an
// earlier result in `dir` is replaced whole, its other files too.
void write_outputs(const std::string& dir, const Report& report, const config::LoadedConfig& cfg,
                   const std::vector<std::string>& files);
// The files write_outputs() writes: what a results directory it may replace may hold.
std::vector<std::string> output_file_names();

// Nanoseconds of a simulated time through integer picoseconds, so that 8925.366 ns prints as
// such and not as 8925.366000000002.
double ns_of(const sc_core::sc_time& t);

// SHA-256 of the trace bytes for report.json's identity: nettle's (which uses the x86 SHA
// extensions where the CPU has them), behind this interface so that nettle's header and macros stay
// in sha256.cpp.
class Sha256 {
 public:
  Sha256();
  Sha256(const Sha256& o);
  Sha256& operator=(const Sha256& o);
  ~Sha256();
  Sha256& update(std::string_view data);
  std::string hex() const;  // of everything given so far

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace trnsim::report
