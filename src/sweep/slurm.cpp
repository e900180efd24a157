// SPDX-License-Identifier: MIT
#include "trnsim/sweep/slurm.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "files.hpp"
#include "process.hpp"
#include "trnsim/io.hpp"

namespace trnsim::sweep {

namespace fs = std::filesystem;

namespace {

// Single-quoted for bash: the script must survive any path.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// An #SBATCH value must be one word: the line is not parsed by a shell.
std::string sbatch_value(const std::string& option, const std::string& v) {
  if (v.empty() || v.find_first_of(" \t\n'\"") != std::string::npos) {
    throw SweepError(fmt::format("--{} \"{}\": expected one word without spaces or quotes", option, v));
  }
  return v;
}

}  // namespace

std::string sbatch_script(const std::string& dir, const std::string& trnsim, const std::string& name,
                          const SlurmOptions& o) {
  if (o.shards < 1) throw SweepError(fmt::format("--shards {}: expected at least 1", o.shards));
  if (o.cpus_per_task < 1) {
    throw SweepError(fmt::format("--cpus-per-task {}: expected at least 1", o.cpus_per_task));
  }
  const std::string adir = fs::absolute(dir).lexically_normal().string();
  std::string s = "#!/bin/bash\n";
  s += "# Written by `trnsim sweep --slurm`: one array task per shard of the sweep directory.\n";
  s += fmt::format("#SBATCH --job-name={}\n",
                   sbatch_value("job-name", o.job_name.empty() ? "trnsim-" + name : o.job_name));
  s += fmt::format("#SBATCH --array=1-{}\n", o.shards);
  s += fmt::format("#SBATCH --cpus-per-task={}\n", o.cpus_per_task);
  s += fmt::format("#SBATCH --mem={}\n", sbatch_value("mem", o.mem));
  s += fmt::format("#SBATCH --time={}\n", sbatch_value("time", o.time));
  s += fmt::format("#SBATCH --output={}\n", sbatch_value("out", adir + "/slurm/task-%a.log"));
  if (!o.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", sbatch_value("partition", o.partition));
  if (!o.account.empty()) s += fmt::format("#SBATCH --account={}\n", sbatch_value("account", o.account));
  for (const auto& e : o.extra) s += fmt::format("#SBATCH {}\n", sbatch_value("sbatch", e));
  s += "set -euo pipefail\n";
  s += "export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1\n";
  s += fmt::format("exec {} sweep resume {} --shard \"${{SLURM_ARRAY_TASK_ID}}/{}\" -j {} --no-merge\n",
                   quoted(trnsim), quoted(adir), o.shards, o.cpus_per_task);
  return s;
}

std::string merge_script(const std::string& dir, const std::string& trnsim, const std::string& name,
                         const SlurmOptions& o) {
  const std::string adir = fs::absolute(dir).lexically_normal().string();
  std::string s = "#!/bin/bash\n";
  s += "# Written by `trnsim sweep --slurm`: merges the points once every array task succeeded.\n";
  s += fmt::format("#SBATCH --job-name={}-merge\n",
                   sbatch_value("job-name", o.job_name.empty() ? "trnsim-" + name : o.job_name));
  s += "#SBATCH --cpus-per-task=1\n";
  s += fmt::format("#SBATCH --mem={}\n", sbatch_value("mem", o.mem));
  s += fmt::format("#SBATCH --time={}\n", sbatch_value("time", o.time));
  s += fmt::format("#SBATCH --output={}\n", sbatch_value("out", adir + "/slurm/merge.log"));
  if (!o.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", sbatch_value("partition", o.partition));
  if (!o.account.empty()) s += fmt::format("#SBATCH --account={}\n", sbatch_value("account", o.account));
  for (const auto& e : o.extra) s += fmt::format("#SBATCH {}\n", sbatch_value("sbatch", e));
  s += "set -euo pipefail\n";
  s += fmt::format("exec {} sweep merge {}\n", quoted(trnsim), quoted(adir));
  return s;
}

Submitted submit(const std::string& dir, const std::string& script, int shards, const std::string& merge) {
  const std::string sdir = dir + "/slurm";
  std::error_code ec;
  fs::create_directories(sdir, ec);
  if (ec) throw SweepError(fmt::format("{}: cannot create directory: {}", sdir, ec.message()));
  // --parsable prints "jobid" or "jobid;cluster".
  const auto sbatch = [](std::vector<std::string> args, const std::string& path) {
    args.insert(args.begin(), {"sbatch", "--parsable"});
    args.push_back(path);
    const auto r = detail::capture(args);
    if (r.code == -1) throw SweepError("--slurm: cannot run sbatch: is Slurm installed on this machine?");
    if (r.code != 0) throw SweepError(fmt::format("--slurm: sbatch {} refused the job: {}", path, r.out));
    return r.out.substr(0, r.out.find_first_of(";\n"));
  };
  const std::string path = sdir + "/sweep.sbatch";
  write_file_atomic(path, script);
  Submitted out;
  out.array_id = sbatch({}, path);
  Json job{{"job_id", out.array_id}, {"shards", shards}, {"script", path}};
  if (!merge.empty()) {
    const std::string mpath = sdir + "/merge.sbatch";
    write_file_atomic(mpath, merge);
    out.merge_id = sbatch({"--dependency=afterok:" + out.array_id, "--kill-on-invalid-dep=yes"}, mpath);
    job["merge_job_id"] = out.merge_id;
    job["merge_script"] = mpath;
  }
  write_file_atomic(sdir + "/job.json", job.dump(2) + "\n");
  return out;
}

std::optional<JobState> job_status(const std::string& dir) {
  const std::string path = dir + "/slurm/job.json";
  if (!fs::exists(path)) return std::nullopt;
  const Json job = detail::read_json(path);
  JobState st;
  st.job_id = job.value("job_id", std::string());
  st.array_tasks = job.value("shards", 0);
  st.merge_job_id = job.value("merge_job_id", std::string());
  auto count = [](const std::string& text) {
    std::map<std::string, int> by;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream w(line);
      std::string state;
      if (w >> state) ++by[state];
    }
    return by;
  };
  // squeue knows queued and running tasks; sacct (when accounting is on) the ended ones.
  auto q = detail::capture({"squeue", "-h", "-r", "-j", st.job_id, "-o", "%T"});
  if (q.code == 0) st.tasks = count(q.out);
  if (st.tasks.empty()) {
    auto a = detail::capture({"sacct", "-n", "-X", "-P", "-j", st.job_id, "-o", "State"});
    if (a.code == 0) st.tasks = count(a.out);
  }
  return st;
}

std::string job_state(const std::string& dir) {
  const auto st = job_status(dir);
  if (!st) return "";
  std::string line;
  for (const auto& [k, v] : st->tasks) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", k, v);
  return fmt::format("Slurm job {} ({} array tasks): {}{}", st->job_id, st->array_tasks,
                     line.empty() ? "no task queued or running" : line,
                     st->merge_job_id.empty() ? "" : fmt::format("; merge job {}", st->merge_job_id));
}

}  // namespace trnsim::sweep
