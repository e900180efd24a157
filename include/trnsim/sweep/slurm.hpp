// SPDX-License-Identifier: MIT
// Sweeps on a Slurm cluster: an sbatch job array with one array task per shard; each task runs
// `trnsim sweep resume DIR --shard I/N` on the sweep directory (a shared file system).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/sweep/sweep.hpp"

namespace trnsim::sweep {

struct SlurmOptions {
  int shards = 1;            // array tasks
  int cpus_per_task = 1;     // also the -j of each task
  std::string mem = "4G";    // per task
  std::string time = "01:00:00";  // per task
  std::string partition, account, job_name;
  std::vector<std::string> extra;  // more #SBATCH lines ("--qos=short")
};

// The sbatch script of a sweep directory. `trnsim` is the executable the tasks run.
std::string sbatch_script(const std::string& dir, const std::string& trnsim, const std::string& name,
                          const SlurmOptions& o);

// The sbatch script of the merge that follows the array (`trnsim sweep merge DIR`), submitted
// with --dependency=afterok on the array: it runs once every task has succeeded.
std::string merge_script(const std::string& dir, const std::string& trnsim, const std::string& name,
                         const SlurmOptions& o);

struct Submitted {
  std::string array_id;
  std::string merge_id;  // "" without a merge job
};
// Writes DIR/slurm/sweep.sbatch (and merge.sbatch when `merge` is not empty), submits the array
// with `sbatch --parsable` and the merge with --dependency=afterok:<array>, and records both in
// DIR/slurm/job.json. SweepError when sbatch is missing or refuses.
Submitted submit(const std::string& dir, const std::string& script, int shards, const std::string& merge = "");

// The recorded job of a sweep directory and its array tasks by state ("RUNNING": 2,
// "COMPLETED": 6), from squeue while it is queued or running and from sacct after.
struct JobState {
  std::string job_id;
  int array_tasks = 0;
  std::map<std::string, int> tasks;  // empty: no task queued, running or (with accounting) ended
  std::string merge_job_id;          // "" when the sweep was submitted with --no-merge
};
std::optional<JobState> job_status(const std::string& dir);

// job_status() as one line ("Slurm job 42 (8 array tasks): COMPLETED 6, RUNNING 2"); "" when the
// directory has no Slurm job.
std::string job_state(const std::string& dir);

}  // namespace trnsim::sweep
