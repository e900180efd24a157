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

// Writes DIR/slurm/sweep.sbatch, submits it with `sbatch --parsable` and records the job in
// DIR/slurm/job.json. Returns the job id. SweepError when sbatch is missing or refuses.
std::string submit(const std::string& dir, const std::string& script, int shards);

// The recorded job of a sweep directory and its array tasks by state ("RUNNING": 2,
// "COMPLETED": 6), from squeue while it is queued or running and from sacct after.
struct JobState {
  std::string job_id;
  int array_tasks = 0;
  std::map<std::string, int> tasks;  // empty: no task queued, running or (with accounting) ended
};
std::optional<JobState> job_status(const std::string& dir);

// job_status() as one line ("Slurm job 42 (8 array tasks): COMPLETED 6, RUNNING 2"); "" when the
// directory has no Slurm job.
std::string job_state(const std::string& dir);

}  // namespace trnsim::sweep
