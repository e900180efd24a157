// SPDX-License-Identifier: MIT
// Merging a sweep: the points of one or more directories of the same plan (shards run apart)
// into sweep.json and sweep.csv, with the headline figures of every point and, over seeds, their
// mean and spread. The merged files hold no wall times, so equal inputs give equal bytes.
#pragma once

#include <string>
#include <vector>

#include "trnsim/sweep/runner.hpp"

namespace trnsim::sweep {

// What a report.json is the report of: a serving run's has the served spec and its results
// (`trnsim serve`, docs/serving.md#outputs); anything else is a training run's.
RunKind report_kind(const Json& report);

// The headline figures of a run directory (metrics_of(kind) read from kReportFile): name ->
// number, null where the report has no such figure. SweepError when the report is missing or
// unreadable.
Json read_metrics(const std::string& run_dir, RunKind kind = RunKind::run);

// Joins `dirs` (all of one plan; SweepError naming a directory of another plan). Each point is
// taken from the first directory where it is complete.
Json merge(const std::vector<std::string>& dirs);

// sweep.csv: one row per group of points that differ only in their seed.
std::string merged_csv(const Json& merged);

// Writes sweep.json and sweep.csv into `dir`, each atomically.
void write_merged(const std::string& dir, const Json& merged);

// Counts of the points by state ("ok", "failed", "started", "pending") in `dir`, and the
// failed points with their errors.
struct DirStatus {
  std::size_t ok = 0, failed = 0, started = 0, pending = 0;
  std::vector<std::pair<std::string, std::string>> failures;  // id, error
};
DirStatus dir_status(const std::string& dir, const Plan& plan);

}  // namespace trnsim::sweep
