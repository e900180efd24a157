// SPDX-License-Identifier: MIT
// Sweeps on a Slurm cluster: an sbatch job array with one array task per shard; each task runs
// `trnsim sweep resume DIR --shard I/N` on the sweep directory (a shared file system).
#pragma once

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

// One line per array-task state of the recorded job ("RUNNING 2", "COMPLETED 6"), from squeue
// while it is queued or running and from sacct after; "" when the directory has no Slurm job.
std::string job_state(const std::string& dir);

}  // namespace trnsim::sweep
