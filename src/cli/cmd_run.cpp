// SPDX-License-Identifier: MIT
// `trnsim run`: the main job. With no arguments it simulates the default rack (Trn3 Gen2
// UltraServer, 144 chips) on the bundled DeepSeek-V3-shaped MoE training step.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "bench_common.hpp"
#include "commands.hpp"
#include "presets.hpp"
#include "sweep_estimate.hpp"
#include "trace_input.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/log.hpp"
#include "trnsim/report/report.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/units.hpp"

namespace trnsim::cli {

namespace {

// A whole DeepSeek-V3 training step (61 layers, 8 micro-batches, docs/moe-generator.md).
inline constexpr const char* kDefaultTrace = kDefaultRunTrace;

struct RunOpts {
  BenchOptions common;
  TraceInput trace;
  std::string out;
  report::TimelineOptions timeline;
  std::string timeline_ranks;   // "0-3,7"
  std::string timeline_window;  // "FROM:TO"
  std::vector<std::string> out_files;  // --out-files: some of report::output_file_names()
  bool no_progress = false;
  bool estimate = false;
  bool no_cache = false;
};

// --timeline-ranks 0-3,7: ranks and inclusive ranges of ranks, each below `ranks`.
std::vector<int> parse_rank_list(const std::string& text, int ranks) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--timeline-ranks {:?}: {}; expected ranks and ranges such as 0-3,7", text, why));
  };
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const std::size_t dash = item.find('-');
    const auto number = [&](const std::string& n) {
      if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos) {
        throw bad(fmt::format("{:?} is not a rank", n));
      }
      const int r = std::stoi(n);
      if (r >= ranks) throw bad(fmt::format("rank {} is not in the trace, which has {} ranks (0 to {})", r, ranks, ranks - 1));
      return r;
    };
    const int lo = number(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) throw bad(fmt::format("the range {} runs backwards", item));
    for (int r = lo; r <= hi; ++r) out.push_back(r);
    at = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// --timeline-window FROM:TO in simulated time ("1ms:1.5ms"; an empty side is the start or the end).
void parse_window(const std::string& text, report::TimelineOptions& tl) {
  const std::size_t colon = text.find(':');
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--timeline-window {:?}: {}; expected FROM:TO in simulated time such "
                                  "as 1ms:1.5ms (an empty side is the start or the end)", text, why));
  };
  if (colon == std::string::npos) throw bad("no colon");
  const auto side = [&](const std::string& v, double empty) {
    if (v.empty()) return empty;
    try {
      // Through whole picoseconds, as the report's times (100us is 100000 ns, not 99999.99...).
      return std::round(parse_duration(v).si * 1e12) / 1e3;
    } catch (const UnitError& e) {
      throw bad(e.what());
    }
  };
  tl.window_from_ns = side(text.substr(0, colon), 0.0);
  tl.window_to_ns = side(text.substr(colon + 1), std::numeric_limits<double>::infinity());
  if (!(tl.window_to_ns > tl.window_from_ns)) throw bad("the window ends before it starts");
}

// When the process started, as near as static initialisation gets (after the loader): the wall
// time `run` prints is the whole command's, from here to its last line.
const std::chrono::steady_clock::time_point g_run_process_start = std::chrono::steady_clock::now();

// A line on stderr while a phase of the command runs outside the simulation (the trace read, the
// report's building and writing), shown once it has taken a second and redrawn twice a second
// with the seconds so far; only on a terminal, cleared when the phase ends.
class PhaseLine {
 public:
  PhaseLine(bool enabled, std::string what) : what_(std::move(what)) {
    if (!enabled || ::isatty(STDERR_FILENO) != 1) return;
    thread_ = std::thread([this] {
      const auto t0 = std::chrono::steady_clock::now();
      std::unique_lock<std::mutex> lock(m_);
      if (cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) return;
      do {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print(stderr, "\r\033[K{} ({:.0f} s)", what_, s);
        std::fflush(stderr);
      } while (!cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; }));
      fmt::print(stderr, "\r\033[K");
      std::fflush(stderr);
    });
  }
  PhaseLine(const PhaseLine&) = delete;
  PhaseLine& operator=(const PhaseLine&) = delete;
  ~PhaseLine() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A progress line on stderr, redrawn in place at most five times a second; only on a terminal.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : on_(enabled && ::isatty(STDERR_FILENO) == 1) {}
  ~ProgressLine() { clear(); }
  run::ProgressFn fn() {
    if (!on_) return {};
    return [this](const run::Progress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (shown_ && now - last_ < std::chrono::milliseconds(200)) return;
      last_ = now;
      shown_ = true;
      const double frac = p.ops_total ? double(p.ops_done) / double(p.ops_total) : 0.0;
      const std::string left =
          frac > 0.02 ? fmt::format("about {:.0f} s left", p.wall_s * (1 - frac) / frac) : "estimating";
      fmt::print(stderr, "\r\033[Ksimulated {:.3f} ms, {} of {} ops ({:.0f} %), {}",
                 p.simulated_s * 1e3, p.ops_done, p.ops_total, 100 * frac, left);
      std::fflush(stderr);
    };
  }
  void clear() {
    if (shown_) fmt::print(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

void register_run_command(CLI::App& app, Registry& reg) {
  auto o = std::make_shared<RunOpts>();
  auto* run = app.add_subcommand(
      "run", "simulate a workload on a rack (default: Trn3 Gen2 UltraServer, bundled MoE step)");
  add_bench_options(run, o->common, "rack or cluster preset");
  auto* trace_opt = run->add_option("--trace", o->trace.path,
                  fmt::format("native trace (.json), Chakra prefix (PREFIX.<rank>.et) or its rank-0 "
                              "file PREFIX.0.et, PyTorch execution trace (.json[.gz]) or the "
                              "directory or prefix of one per rank; default {}",
                              kDefaultTrace));
  auto* out_opt = run->add_option("--out", o->out,
                                  "write report.json, summary.csv, host.json, config.json, stats.json, ops.csv "
                                  "and timeline.json here");
  add_chakra_options(run, o->trace);
  auto* out_files_opt = run->add_option("--out-files", o->out_files,
                                        "write only these of --out's files (report.json,config.json; "
                                        "sweeps keep report.json, summary.csv, host.json and config.json)")
                            ->delimiter(',')
                            ->type_name("NAMES");
  // The timeline's options shape timeline.json, which only --out writes.
  std::vector<CLI::Option*> timeline_opts;
  timeline_opts.push_back(run->add_option("--timeline-max-events", o->timeline.max_events,
                                          "ops drawn in timeline.json at most (the longest are kept; with --out)")
                              ->capture_default_str()
                              ->check(CLI::Range(std::size_t(1), std::size_t(100000000))));
  timeline_opts.push_back(run->add_option("--timeline-ranks", o->timeline_ranks,
                                          "draw only these ranks in timeline.json, every op of them "
                                          "(0-3,7; with --out)")
                              ->type_name("RANKS"));
  timeline_opts.push_back(run->add_option("--timeline-window", o->timeline_window,
                                          "draw only the ops that overlap this span of simulated time, "
                                          "each whole (1ms:1.5ms; an empty side is the start or the end; "
                                          "with --out)")
                              ->type_name("FROM:TO"));
  timeline_opts.push_back(run->add_flag("!--no-timeline-counters", o->timeline.counters,
                                        "leave the counter tracks out of timeline.json (with --out)"));
  timeline_opts.push_back(run->add_flag("!--no-timeline-flows", o->timeline.flows,
                                        "leave the collective flow arrows out of timeline.json (with --out)"));
  run->add_flag("--no-progress", o->no_progress, "no progress line on a terminal");
  run->add_flag("--estimate", o->estimate,
                "print the work and memory estimate, the budgets and the expected wall time, "
                "and exit without simulating");
  run->add_flag("--no-cache", o->no_cache,
                "calibrate the op-level compute model afresh and read the trace itself, neither "
                "reading nor writing the calibration or trace cache (also TRNSIM_NO_CACHE=1; the cache is in TRNSIM_CACHE_DIR, "
                "else $XDG_CACHE_HOME/trnsim or ~/.cache/trnsim)");
  timeline_opts.push_back(out_files_opt);  // also only with --out
  reg.add(run, Footprint::builds_models,
          [o, out_opt, trace_opt, timeline_opts, out_files_opt, &reg]() {
    // Refuse what would be ignored or fail only after the simulation.
    if (trace_opt->count() > 0 && o->trace.path.empty()) throw TraceError("--trace: an empty file name");
    for (const CLI::Option* t : timeline_opts) {
      if (t->count() > 0 && out_opt->count() == 0) {
        throw InputError(fmt::format("{}: {} written only with --out DIR; add --out DIR, or leave {} out",
                                     t->get_name(), t == out_files_opt ? "files are" : "timeline.json is",
                                     t->get_name()));
      }
    }
    const std::vector<std::string> all_files = report::output_file_names();
    for (const auto& f : o->out_files) {
      if (std::find(all_files.begin(), all_files.end(), f) == all_files.end()) {
        throw InputError(fmt::format("--out-files {:?}: not a file a run writes; expected some of {}", f,
                                     fmt::join(all_files, ", ")));
      }
    }
    const std::vector<std::string> out_files = o->out_files.empty() ? all_files : o->out_files;
    const auto writes = [&](const char* name) {
      return std::find(out_files.begin(), out_files.end(), name) != out_files.end();
    };
    if (out_opt->count() > 0) OutputDir::check_writable(o->out, report::output_file_names());
    if (!o->timeline_window.empty()) parse_window(o->timeline_window, o->timeline);
    // The rack the resolve step's checks resolved, taken by the run (not resolved twice).
    std::optional<resolve::RackPlan> rack;
    const auto cfg = o->common.load(rack);
    if (!cfg.config.rack) {
      throw ConfigError(fmt::format(
          "{}: a chip preset (it has /chip but no /rack): `trnsim run` needs a rack preset such as "
          "trn3-gen2-ultraserver; `trnsim presets` lists them",
          cfg.path));
    }
    // The phases' wall times, at debug level: tools/bench_run.py --compare reads them.
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    // The terminal summary prints every reader warning after the run; logged while reading as
    // well, each was printed twice. Without the summary (--json, --estimate) they are logged.
    o->trace.log_warnings = o->common.json || o->estimate;
    o->trace.cache = run::cache_settings_from_env(o->no_cache);
    const auto t_read = Clock::now();
    PhaseLine reading(!o->no_progress,
                      fmt::format("reading {}", o->trace.path.empty() ? std::string(kDefaultTrace) : o->trace.path));
    // Held by pointer, with the run's data and the report, so that their teardown is timed too.
    auto trace_ptr = std::make_unique<const LoadedTrace>(load_trace(o->trace, data_path(kDefaultTrace)));
    reading.stop();
    const LoadedTrace& trace = *trace_ptr;
    const auto t_run = Clock::now();
    if (!o->timeline_ranks.empty()) o->timeline.ranks = parse_rank_list(o->timeline_ranks, trace.workload.num_ranks());
    if (o->estimate) {
      fmt::print("{}", run::estimate_workload(cfg, trace.workload).text);
      return 0;
    }
    report::Identity id;
    id.command_line = reg.argv;
    id.config = o->common.config_given.empty() ? std::string(kDefaultRack) : o->common.config_given;
    id.config_files = preset_files(cfg.path);
    id.trace = o->trace.path.empty() ? std::string(kDefaultTrace) : o->trace.path;
    id.trace_files = trace.files;
    id.trace_sha256 = trace.sha256;
    id.trace_bytes = trace.bytes;
    ProgressLine progress(!o->no_progress);
    auto out_ptr = std::make_unique<const run::RunData>(run::run_workload(
        cfg, trace.workload, progress.fn(), resolve::Purpose::run, run::cache_settings_from_env(o->no_cache),
        std::move(rack)));
    const run::RunData& out = *out_ptr;
    progress.clear();
    // ops.csv and timeline.json take seconds for a large trace, stats.json names every block of
    // the rack: built only when written.
    const bool to_files = out_opt->count() > 0;
    const report::ReportParts parts{to_files && (writes("ops.csv") || writes("timeline.json")),
                                    to_files && writes("stats.json")};
    const auto t_report = Clock::now();
    PhaseLine reporting(!o->no_progress,
                        out_opt->count() > 0 ? fmt::format("writing the report to {}", o->out)
                                             : std::string("building the report"));
    auto rep_ptr = std::make_unique<const report::Report>(report::make_report(out, id, o->timeline, parts));
    const report::Report& rep = *rep_ptr;
    if (out_opt->count() > 0) report::write_outputs(o->out, rep, cfg, out_files);
    reporting.stop();
    const auto t_printed = Clock::now();
    if (o->common.json) {
      fmt::print("{}\n", rep.report.dump(2));
    } else {
      fmt::print("{}", rep.text);
    }
    std::fflush(stdout);
    // Wall time and kernel activity vary between runs: stderr, never the report.
    std::vector<std::string> by_kind;
    for (const auto& [k, n] : out.activations_by_kind) by_kind.push_back(fmt::format("{} {}", k, n));
    const std::string activity = fmt::format(
        "{} process activations ({:.3g} per second of simulation; {}), {} SystemC delta cycles, {} "
        "op processes at most",
        out.activations, out.simulation_seconds > 0 ? double(out.activations) / out.simulation_seconds : 0.0,
        fmt::join(by_kind, ", "), out.delta_cycles, out.peak_op_processes);
    const double simulation_s = out.simulation_seconds;
    // The teardown of the report, the run's data and the trace, timed as part of the command.
    rep_ptr.reset();
    out_ptr.reset();
    trace_ptr.reset();
    const auto t_end = Clock::now();
    // tools/bench_run.py reads this line's first four figures.
    logger("run")->debug("phases: trace read {:.2f} s, run {:.2f} s (simulation {:.2f} s), report "
                         "{:.2f} s, start-up {:.2f} s, teardown {:.2f} s",
                         seconds(t_read, t_run), seconds(t_run, t_report), simulation_s,
                         seconds(t_report, t_printed), seconds(g_run_process_start, t_read),
                         seconds(t_printed, t_end));
    // The whole command, from the process's start to this line (tools/bench_run.py and
    // bench_peer.py read its first figures), then the parts outside the run.
    fmt::print(stderr,
               "wall time {:.2f} s (simulation {:.2f} s), {}; the whole command from the process's "
               "start: start-up and configuration {:.2f} s, trace read {:.2f} s, run {:.2f} s "
               "(calibration, elaboration, simulation), report {:.2f} s{}, teardown {:.2f} s\n",
               seconds(g_run_process_start, t_end), simulation_s, activity,
               seconds(g_run_process_start, t_read), seconds(t_read, t_run), seconds(t_run, t_report),
               seconds(t_report, t_printed), out_opt->count() > 0 ? " (built and written)" : " (built)",
               seconds(t_printed, t_end));
    return 0;
  });
}

}  // namespace trnsim::cli
