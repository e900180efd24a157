// SPDX-License-Identifier: MIT
// `trnsim sweep FILE`: a design-space sweep as a pool of `trnsim run` processes (or a Slurm job
// array); `trnsim sweep resume|status|merge DIR` follow it. docs/sweeps.md describes it all.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "bench_common.hpp"
#include "commands.hpp"
#include "presets.hpp"
#include "sweep_estimate.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/serve/serve.hpp"
#include "trnsim/sweep/merge.hpp"
#include "trnsim/sweep/runner.hpp"
#include "trnsim/sweep/slurm.hpp"
#include "trnsim/sweep/sweep.hpp"

namespace trnsim::cli {

namespace {

using namespace trnsim::sweep;

// A serving spec by name (configs/serving/NAME.json), as `trnsim serve NAME` finds it.
std::string resolve_serving(const std::string& given) {
  const std::string path = data_path("configs/serving/" + given + ".json");
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  throw ConfigError(fmt::format("{}: no such file, nor a serving spec of that name under configs/serving/", given));
}

// What `trnsim serve` reads first of a serving point: its spec (with its --set) and its rack
// (with its --rack-set), checked as `trnsim config` checks a rack.
void check_serving(const std::string& spec, const ServeArgs& a) {
  const serve::ServeSpec sp = serve::load_spec(spec, a.spec_sets);
  const std::string rack = resolve_preset(a.rack.empty() ? sp.rack : a.rack);
  const config::LoadedConfig l = config::load_config(rack, a.rack_sets);
  if (!l.config.rack) throw ConfigError(fmt::format("{}: is not a rack preset (a serving run needs a rack)", rack));
  resolve::plan(l, resolve::Purpose::config);
}

int cpus_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

struct SweepOpts {
  std::string file, out, shard = "1/1";
  Overrides overrides;
  int jobs = 0;  // 0: the CPUs this process may use
  bool dry_run = false, estimate = false, retry_failed = false, no_merge = false, slurm = false, json = false, parsable = false;
  SlurmOptions slurm_opts;
};

void add_run_options(CLI::App* sub, SweepOpts& o) {
  sub->add_option("-j,--jobs", o.jobs, "concurrent trnsim run processes (default: the CPUs available)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--shard", o.shard, "run only the I-th of N slices of the points (I/N, 1-based)")
      ->capture_default_str();
  sub->add_flag("--retry-failed", o.retry_failed, "run points that failed again");
  sub->add_flag("--no-merge", o.no_merge, "do not write sweep.csv and sweep.json at the end");
}

// Runs the plan locally and merges; the exit code of the command.
int run_local(const Plan& plan, const SweepOpts& o) {
  RunOptions ro;
  ro.dir = o.out;
  ro.jobs = o.jobs > 0 ? o.jobs : cpus_available();
  ro.shard = parse_shard(o.shard);
  ro.retry_failed = o.retry_failed;
  ro.progress = ::isatty(2) == 1;
  ro.trnsim = self_executable();
  const RunSummary s = run_plan(plan, ro);
  if (s.interrupted) {
    fmt::print(stderr, "sweep {}: interrupted; {} resumes it\n", plan.name,
               fmt::format("trnsim sweep resume {}", o.out));
    return 130;
  }
  // A shard merges nothing by default: the other shards' points may still be running.
  const bool merge_now = !o.no_merge && ro.shard.count == 1;
  if (merge_now) write_merged(o.out, merge({o.out}));
  const DirStatus st = dir_status(o.out, plan);
  fmt::print(stderr, "sweep {}: {} points in this run ({} ran, {} already done), {} failed{}\n",
             plan.name, s.points, s.ran, s.skipped, s.failed,
             merge_now ? fmt::format("; {}/sweep.csv", o.out) : "");
  for (const auto& [id, err] : st.failures) fmt::print(stderr, "  {} failed: {}\n", id, err);
  return st.failures.empty() ? 0 : 1;
}

void print_points(const Sweep& s, const std::vector<Point>& points, std::size_t total) {
  std::vector<std::string> head{"point"};
  for (const auto& a : s.axes) head.push_back(a.name);
  std::vector<std::vector<std::string>> rows{head};
  for (const auto& p : points) {
    std::vector<std::string> r{p.id};
    for (const auto& v : p.values) r.push_back(value_text(v));
    rows.push_back(r);
  }
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) line += fmt::format("{:<{}}  ", r[i], w[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    fmt::print("{}\n", line);
  }
  std::vector<std::string> paths;
  for (const auto& a : s.axes) paths.push_back(fmt::format("{} ({} values)", a.path, a.values.size()));
  fmt::print("{} of {} points; axes {}: {}\n", points.size(), total,
             s.combine == Sweep::Combine::grid ? "as a grid" : "zipped", fmt::join(paths, ", "));
}

// sweep --dry-run --json: the points print_points() lists, by axis name.
Json points_json(const Sweep& s, const std::vector<Point>& points, std::size_t total, std::size_t kept,
                 const Shard& shard) {
  Json axes = Json::array();
  for (const auto& a : s.axes) axes.push_back({{"name", a.name}, {"path", a.path}, {"values", a.values}});
  Json ps = Json::array();
  for (const auto& p : points) {
    Json v = Json::object();
    for (std::size_t i = 0; i < s.axes.size(); ++i) v[s.axes[i].name] = p.values[i];
    ps.push_back({{"point", p.id}, {"values", v}});
  }
  return {{"name", s.name},
          {"combine", s.combine == Sweep::Combine::grid ? "grid" : "zip"},
          {"axes", axes},
          {"points_total", total},
          {"points_kept", kept},
          {"shard", fmt::format("{}/{}", shard.index, shard.count)},
          {"points", ps}};
}

// sweep status --json: what the table prints.
Json status_json(const Plan& plan, const DirStatus& st, const std::string& dir) {
  Json failures = Json::array();
  for (const auto& [id, err] : st.failures) failures.push_back({{"point", id}, {"error", err}});
  Json j = {{"name", plan.name},      {"points", plan.points.size()}, {"done", st.ok},
            {"failed", st.failed},    {"running_or_interrupted", st.started},
            {"pending", st.pending},  {"failures", failures}, {"slurm", nullptr}};
  if (const auto job = job_status(dir)) {
    j["slurm"] = {{"job_id", job->job_id}, {"array_tasks", job->array_tasks}, {"tasks", job->tasks},
                  {"merge_job_id", job->merge_job_id.empty() ? Json(nullptr) : Json(job->merge_job_id)}};
  }
  return j;
}

}  // namespace

void register_sweep_command(CLI::App& app, Registry& reg) {
  auto o = std::make_shared<SweepOpts>();
  auto* sw = app.add_subcommand("sweep", "run a design-space sweep (docs/sweeps.md); "
                                         "resume, status and merge follow one");
  sw->add_option("FILE", o->file, "sweep file (configs/sweeps/*.json)");
  sw->add_option("--out", o->out, "sweep directory (default out/sweeps/NAME)");
  sw->add_option("--config", o->overrides.config, "base config instead of the file's (a file or a preset name)");
  sw->add_option("--trace", o->overrides.trace, "workload instead of the file's (a file or a bundled trace's name)");
  add_set_option(sw, o->overrides.sets);
  add_run_options(sw, *o);
  sw->add_flag("--dry-run", o->dry_run, "list the points (with --slurm: print the sbatch script)");
  sw->add_flag("--estimate", o->estimate,
               "print each point's run estimate (events, memory, expected wall time) and the "
               "sweep's at its -j, and exit without running anything");
  sw->add_flag("--json", o->json, "with --dry-run: the points (or the sbatch script) as JSON");
  sw->add_flag("--slurm", o->slurm, "submit a Slurm job array, one array task per shard");
  sw->add_flag("--parsable", o->parsable,
               "with --slurm: print only the job ids, the array's and the merge's, a line each");
  sw->add_option("--shards", o->slurm_opts.shards, "with --slurm: array tasks (default: one per point)")
      ->check(CLI::Range(1, 100000));
  sw->add_option("--cpus-per-task", o->slurm_opts.cpus_per_task,
                 "with --slurm: CPUs of each task (its -j)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sw->add_option("--mem", o->slurm_opts.mem, "with --slurm: memory per task")->capture_default_str();
  sw->add_option("--time", o->slurm_opts.time, "with --slurm: time limit per task")->capture_default_str();
  sw->add_option("--partition", o->slurm_opts.partition, "with --slurm: partition");
  sw->add_option("--account", o->slurm_opts.account, "with --slurm: account");
  sw->add_option("--job-name", o->slurm_opts.job_name, "with --slurm: job name (default trnsim-NAME)");
  sw->add_option("--sbatch", o->slurm_opts.extra, "with --slurm: another #SBATCH option (repeatable)")
      ->allow_extra_args(false);
  sw->require_subcommand(0, 1);
  sw->fallthrough(false);

  auto* resume = sw->add_subcommand("resume", "continue a sweep from its directory (plan.json)");
  auto ro = std::make_shared<SweepOpts>();
  resume->add_option("DIR", ro->out, "sweep directory")->required();
  add_run_options(resume, *ro);

  auto* status = sw->add_subcommand("status", "points done, failed and pending (and the Slurm job)");
  auto status_dir = std::make_shared<std::string>();
  auto status_json_flag = std::make_shared<bool>(false);
  status->add_option("DIR", *status_dir, "sweep directory")->required();
  status->add_flag("--json", *status_json_flag, "print the counts, the failures and the Slurm job as JSON");

  auto* mg = sw->add_subcommand("merge", "join sweep directories (shards) into sweep.csv and sweep.json");
  auto merge_dirs = std::make_shared<std::vector<std::string>>();
  auto merge_out = std::make_shared<std::string>();
  mg->add_option("DIR", *merge_dirs, "sweep directories of one plan")->required();
  mg->add_option("--out", *merge_out, "write the merged files here (default: the first DIR)");

  reg.add(sw, Footprint::builds_models, [=]() {
    if (resume->parsed()) return run_local(read_plan(ro->out), *ro);
    if (status->parsed()) {
      const Plan plan = read_plan(*status_dir);
      const DirStatus s = dir_status(*status_dir, plan);
      if (*status_json_flag) {
        fmt::print("{}\n", status_json(plan, s, *status_dir).dump(2));
        return 0;
      }
      fmt::print("sweep {}: {} points: {} done, {} failed, {} running or interrupted, {} pending\n",
                 plan.name, plan.points.size(), s.ok, s.failed, s.started, s.pending);
      for (const auto& [id, err] : s.failures) fmt::print("  {} failed: {}\n", id, err);
      if (const std::string js = job_state(*status_dir); !js.empty()) fmt::print("{}\n", js);
      return 0;
    }
    if (mg->parsed()) {
      const std::string out = merge_out->empty() ? merge_dirs->front() : *merge_out;
      const Json m = merge(*merge_dirs);
      write_merged(out, m);
      std::size_t ok = 0, failed = 0;
      for (const auto& p : m["points"]) {
        ok += p["status"] == "ok";
        failed += p["status"] == "failed";
      }
      fmt::print("merged {} points ({} done, {} failed, {} pending) into {}/sweep.csv and sweep.json\n",
                 m["points"].size(), ok, failed, m["points"].size() - ok - failed, out);
      return 0;
    }
    if (o->file.empty()) throw SweepError("sweep: expected a sweep FILE, or resume, status or merge");
    if (o->estimate && (o->slurm || o->json || o->retry_failed || o->no_merge)) {
      throw SweepError(fmt::format("sweep --estimate: prints the estimate and runs nothing; {} is not "
                                   "taken with it",
                                   o->slurm ? "--slurm" : o->json ? "--json" : o->retry_failed ? "--retry-failed" : "--no-merge"));
    }
    if (o->json && !o->dry_run) {
      throw SweepError("sweep --json: prints the plan of --dry-run (`sweep status DIR --json` the progress of a sweep)");
    }
    // Presets and bundled traces by name, on the command line and in the sweep file.
    Overrides ov = o->overrides;
    if (!ov.config.empty()) ov.config = resolve_preset(ov.config);
    if (!ov.trace.empty()) ov.trace = resolve_trace(ov.trace);
    ov.config_by_name = resolve_preset;
    ov.trace_by_name = resolve_trace;
    ov.serving_by_name = resolve_serving;
    const Sweep s = load_sweep(o->file, ov);
    const auto all = expand(s);
    std::size_t total = 1;
    for (const auto& a : s.axes) total *= a.values.size();
    if (s.combine == Sweep::Combine::zip) total = all.size();
    // Every point passes what `trnsim config` checks before anything runs.
    registry::Registry registry;
    registry::register_builtin_models(registry);
    if (s.kind() == RunKind::serve) {
      validate_serve(s, all, check_serving);
    } else {
      validate(s, all, [&](const config::LoadedConfig& l) { registry::check(registry, l); });
    }
    if (o->out.empty()) o->out = "out/sweeps/" + s.name;
    if (o->slurm) {
      SlurmOptions so = o->slurm_opts;
      // More tasks than points would only start empty tasks.
      if (sw->count("--shards") == 0 || std::size_t(so.shards) > all.size()) so.shards = int(all.size());
      const std::string script = sbatch_script(o->out, self_executable(), s.name, so);
      // The merge runs as a job of its own once every array task succeeded (afterok).
      const std::string merge = o->no_merge ? "" : merge_script(o->out, self_executable(), s.name, so);
      if (o->dry_run) {
        if (o->json) {
          fmt::print("{}\n", Json{{"name", s.name}, {"out", o->out}, {"array_tasks", so.shards},
                                  {"points", all.size()}, {"sbatch_script", script},
                                  {"merge_script", merge.empty() ? Json(nullptr) : Json(merge)}}
                                  .dump(2));
        } else {
          fmt::print("{}{}", script, merge.empty() ? "" : "\n# then, with --dependency=afterok on it:\n" + merge);
        }
        return 0;
      }
      write_or_check_plan(o->out, make_plan(s, all));
      const Submitted id = submit(o->out, script, so.shards, merge);
      if (o->parsable) {
        fmt::print("{}\n{}", id.array_id, id.merge_id.empty() ? "" : id.merge_id + "\n");
        return 0;
      }
      fmt::print("submitted Slurm job {} ({} array tasks, {} points) for {}{}; follow it with "
                 "`trnsim sweep status {}`{}\n",
                 id.array_id, so.shards, all.size(), o->out,
                 id.merge_id.empty() ? "" : fmt::format(", and merge job {} after it", id.merge_id), o->out,
                 id.merge_id.empty() ? fmt::format(", then `trnsim sweep merge {}`", o->out) : "");
      return 0;
    }
    const Shard shard = parse_shard(o->shard);
    if (o->estimate) {
      fmt::print("{}", estimate_sweep(s, shard_points(all, shard), o->jobs > 0 ? o->jobs : cpus_available()).text);
      return 0;
    }
    if (o->dry_run) {
      if (o->json) {
        fmt::print("{}\n", points_json(s, shard_points(all, shard), total, all.size(), shard).dump(2));
        return 0;
      }
      print_points(s, shard_points(all, shard), all.size());
      if (all.size() != total) fmt::print("the filter kept {} of {} points\n", all.size(), total);
      return 0;
    }
    return run_local(make_plan(s, all), *o);
  });
}

}  // namespace trnsim::cli
