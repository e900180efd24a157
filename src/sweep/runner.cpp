// SPDX-License-Identifier: MIT
// The local runner: a pool of `trnsim run` processes over the points of one shard.
#include "trnsim/sweep/runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "files.hpp"
#include "process.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/io.hpp"
#include "trnsim/sweep/metrics.hpp"

namespace trnsim::sweep {

namespace fs = std::filesystem;
using detail::read_json;
using detail::read_text;

namespace {

constexpr int kPlanFormat = 1;

}  // namespace

Json Plan::to_json() const {
  Json j;
  j["format"] = kPlanFormat;
  j["name"] = name;
  j["description"] = description;
  j["sweep_file"] = file;
  j["config"] = config;
  j["trace"] = trace;
  if (!serving.empty()) j["serving"] = serving;
  j["axes"] = Json::array();
  for (std::size_t k = 0; k < axis_names.size(); ++k) {
    j["axes"].push_back({{"name", axis_names[k]}, {"path", axis_paths[k]}, {"seed", int(k) == seed_axis}});
  }
  j["points"] = Json::array();
  for (const auto& p : points) {
    j["points"].push_back({{"id", p.id}, {"index", p.index}, {"values", p.values}, {"set", p.sets}});
  }
  j["base_config"] = base_config;
  if (!command.empty()) j["command"] = command;
  j["run_files"] = run_files;
  return j;
}

Plan Plan::from_json(const Json& j, const std::string& origin) {
  try {
    if (j.at("format").get<int>() != kPlanFormat) {
      throw SweepError(fmt::format("{}: plan format {} is not {}", origin, j.at("format").dump(),
                                   kPlanFormat));
    }
    Plan p;
    p.name = j.at("name").get<std::string>();
    p.description = j.at("description").get<std::string>();
    p.file = j.at("sweep_file").get<std::string>();
    p.config = j.at("config").get<std::string>();
    p.trace = j.at("trace").get<std::string>();
    p.serving = j.value("serving", std::string());
    for (const auto& a : j.at("axes")) {
      if (a.at("seed").get<bool>()) p.seed_axis = int(p.axis_names.size());
      p.axis_names.push_back(a.at("name").get<std::string>());
      p.axis_paths.push_back(a.at("path").get<std::string>());
    }
    for (const auto& q : j.at("points")) {
      p.points.push_back({q.at("id").get<std::string>(), q.at("index").get<std::size_t>(),
                          q.at("values").get<std::vector<Json>>(),
                          q.at("set").get<std::vector<std::string>>()});
    }
    p.base_config = j.at("base_config");
    if (j.contains("command")) p.command = j.at("command").get<std::vector<std::string>>();
    if (j.contains("run_files")) {
      p.run_files = j.at("run_files").get<std::vector<std::string>>();
    } else {
      p.run_files.assign(kRunFiles.begin(), kRunFiles.end());
    }
    return p;
  } catch (const Json::exception& e) {
    throw SweepError(fmt::format("{}: not a sweep plan: {}", origin, e.what()));
  }
}

Plan make_plan(const Sweep& s, const std::vector<Point>& points) {
  Plan p;
  p.name = s.name;
  p.description = s.description;
  p.file = fs::absolute(s.file).lexically_normal().string();
  p.config = s.config;
  p.trace = s.trace;
  p.serving = s.serving;
  for (const auto& a : s.axes) {
    p.axis_names.push_back(a.name);
    p.axis_paths.push_back(a.path);
  }
  p.seed_axis = s.seed_axis();
  p.run_files = s.run_files;
  for (const auto& pt : points) p.points.push_back({pt.id, pt.index, pt.values, point_sets(s, pt)});
  if (s.kind() == RunKind::serve) {
    // What `trnsim compare` shows of two serving sweeps: the spec as written, the rack, the sets.
    p.base_config = {{"serving", config::parse_json<SweepError>(detail::read_text(s.serving), s.serving)},
                     {"rack", s.config},
                     {"set", s.sets}};
  } else {
    p.base_config = config::to_json(config::load_config(s.config, s.sets).config);
  }
  return p;
}

Plan read_plan(const std::string& dir) {
  const std::string path = dir + "/plan.json";
  if (!fs::exists(path)) {
    throw SweepError(fmt::format("{}: not a sweep directory (no plan.json)", dir));
  }
  return Plan::from_json(read_json(path), path);
}

void write_or_check_plan(const std::string& dir, const Plan& plan) {
  std::error_code ec;
  fs::create_directories(dir + "/points", ec);
  if (ec) throw SweepError(fmt::format("--out {}: cannot create directory: {}", dir, ec.message()));
  const std::string path = dir + "/plan.json";
  const Json want = plan.to_json();
  if (fs::exists(path)) {
    const Json have = read_json(path);
    // The points decide what a directory holds; the sweep file's path may differ (a copy).
    if (have.value("points", Json()) != want["points"] || have.value("config", Json()) != want["config"] ||
        have.value("trace", Json()) != want["trace"] ||
        have.value("serving", Json()) != want.value("serving", Json()) ||
        have.value("command", Json()) != want.value("command", Json())) {
      throw SweepError(fmt::format(
          "{}: holds another sweep ({}; its points, config or trace differ from {}): use "
          "another --out, or delete the directory to start again",
          dir, have.value("name", std::string("?")), plan.file));
    }
    return;
  }
  write_file_atomic(path, want.dump(2) + "\n");
}

std::vector<std::string> point_command(const Plan& plan, const Plan::PlannedPoint& p, const std::string& out) {
  std::vector<std::string> argv;
  if (plan.kind() == RunKind::serve) {
    const ServeArgs a = serve_args(plan.config, p.sets);
    argv.insert(argv.end(), {"serve", plan.serving});
    if (!a.rack.empty()) argv.insert(argv.end(), {"--config", a.rack});
    for (const auto& s : a.spec_sets) argv.insert(argv.end(), {"--set", s});
    for (const auto& s : a.rack_sets) argv.insert(argv.end(), {"--rack-set", s});
    // The figures; not requests.csv and timeline.json (megabytes a point at thousands of users).
    argv.insert(argv.end(), {"--out", out, "--out-files", fmt::format("{}", fmt::join(kServeRunFiles, ","))});
    return argv;
  }
  if (plan.command.empty()) {
    argv.insert(argv.end(), {"run", "--config", plan.config});
    if (!plan.trace.empty()) argv.insert(argv.end(), {"--trace", plan.trace});
  } else {
    argv.insert(argv.end(), plan.command.begin(), plan.command.end());
  }
  for (const auto& s : p.sets) argv.insert(argv.end(), {"--set", s});
  const bool is_run = plan.command.empty() || plan.command.front() == "run";
  if (is_run) argv.insert(argv.end(), {"--out", out});
  if (is_run && !plan.run_files.empty() && plan.run_files.size() < kRunFiles.size()) {
    argv.insert(argv.end(), {"--out-files", fmt::format("{}", fmt::join(plan.run_files, ","))});
  }
  return argv;
}

std::string point_dir(const std::string& dir, const std::string& id) { return dir + "/points/" + id; }
std::string run_dir(const std::string& dir, const std::string& id) { return point_dir(dir, id) + "/run"; }
std::string output_file(const std::string& dir, const std::string& id) {
  return point_dir(dir, id) + "/output.json";
}

std::string point_state(const std::string& dir, const std::string& id) {
  const std::string pd = point_dir(dir, id);
  const std::string status = pd + "/status.json";
  if (fs::exists(status)) {
    try {
      return Json::parse(read_text(status)).at("status").get<std::string>();
    } catch (const Json::exception&) {
      return "started";  // unreadable: run it again
    }
  }
  return fs::exists(pd + "/point.json") ? "started" : "pending";
}

std::string self_executable() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InternalError("cannot read /proc/self/exe: " + ec.message());
  return p.string();
}

namespace {

volatile std::sig_atomic_t g_stop = 0;  // set by SIGINT/SIGTERM; the only global, for the handler
extern "C" void on_stop(int) { g_stop = 1; }

// Holds an exclusive lock on one shard of a directory, so that two runners never run the same
// points; released when the process ends, however it ends.
class ShardLock {
 public:
  ShardLock(const std::string& dir, Shard sh) {
    const std::string path = fmt::format("{}/.lock-{}-of-{}", dir, sh.index, sh.count);
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw SweepError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      throw SweepError(fmt::format("{}: shard {}/{} is being run by another trnsim sweep", dir,
                                   sh.index, sh.count));
    }
  }
  ~ShardLock() { ::close(fd_); }
  ShardLock(const ShardLock&) = delete;
  ShardLock& operator=(const ShardLock&) = delete;

 private:
  int fd_ = -1;
};

std::string duration_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02}m", int(s) / 3600, (int(s) % 3600) / 60);
}

// A point whose run was killed by a signal: it runs again on resume.
bool retryable(const std::string& dir, const std::string& id) {
  try {
    return Json::parse(read_text(point_dir(dir, id) + "/status.json")).value("retry", false);
  } catch (const Json::exception&) {
    return true;
  }
}

struct Running {
  const Plan::PlannedPoint* point;
  std::chrono::steady_clock::time_point start;
};

}  // namespace

RunSummary run_plan(const Plan& plan, const RunOptions& o) {
  if (o.jobs < 1) throw SweepError(fmt::format("-j {}: expected at least 1", o.jobs));
  write_or_check_plan(o.dir, plan);
  ShardLock lock(o.dir, o.shard);

  RunSummary sum;
  std::vector<const Plan::PlannedPoint*> todo;
  for (const auto& p : plan.points) {
    if (int(p.index % std::size_t(o.shard.count)) + 1 != o.shard.index) continue;
    ++sum.points;
    const std::string st = point_state(o.dir, p.id);
    if (st == "ok" || (st == "failed" && !o.retry_failed && !retryable(o.dir, p.id))) {
      ++sum.skipped;
      continue;
    }
    todo.push_back(&p);
  }

  struct sigaction sa {}, old_int {}, old_term {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  g_stop = 0;

  std::map<pid_t, Running> running;
  std::size_t next = 0;
  double done_wall = 0;  // wall seconds of the points that ended in this run (for the ETA)
  auto last_draw = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  auto draw = [&](bool force) {
    if (!o.progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && now - last_draw < std::chrono::milliseconds(500)) return;
    last_draw = now;
    const std::size_t left = todo.size() - next + running.size();
    std::string eta = "?";
    if (sum.ran > 0) {
      const double per = done_wall / double(sum.ran);
      const double par = double(std::min<std::size_t>(std::size_t(o.jobs), std::max<std::size_t>(left, 1)));
      eta = duration_text(per * double(left) / par);
    }
    fmt::print(stderr, "\r\x1b[Ksweep {}: {}/{} done, {} failed, {} running, ETA {}", plan.name,
               sum.skipped + sum.ran - sum.failed, sum.points, sum.failed, running.size(), eta);
    std::fflush(stderr);
  };

  while ((next < todo.size() && !g_stop) || !running.empty()) {
    while (!g_stop && next < todo.size() && running.size() < std::size_t(o.jobs)) {
      const auto* p = todo[next++];
      const std::string pd = point_dir(o.dir, p->id);
      std::error_code ec;
      fs::remove_all(pd, ec);  // a run that was interrupted leaves partial outputs
      fs::create_directories(pd, ec);
      if (ec) throw SweepError(fmt::format("{}: cannot create directory: {}", pd, ec.message()));
      Json pj{{"id", p->id}, {"set", p->sets}, {"values", Json::object()}};
      for (std::size_t k = 0; k < plan.axis_names.size(); ++k) pj["values"][plan.axis_names[k]] = p->values[k];
      write_file_atomic(pd + "/point.json", pj.dump(2) + "\n");
      std::vector<std::string> argv{o.trnsim};
      const auto cmd = point_command(plan, *p, run_dir(o.dir, p->id));
      argv.insert(argv.end(), cmd.begin(), cmd.end());
      const bool is_run = plan.kind() == RunKind::serve || plan.command.empty() || plan.command.front() == "run";
      running[detail::spawn(argv, pd + "/run.log", is_run ? "" : output_file(o.dir, p->id))] = {
          p, std::chrono::steady_clock::now()};
    }
    draw(false);
    int st = 0;
    const pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      if (g_stop) {
        for (const auto& [child, r] : running) ::kill(child, SIGTERM);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (pid < 0) throw InternalError(fmt::format("waitpid: {}", std::strerror(errno)));
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const Running r = it->second;
    running.erase(it);
    if (g_stop) continue;  // stopped by us: interrupted, not failed; runs again on resume
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
    const std::string pd = point_dir(o.dir, r.point->id);
    Json status{{"id", r.point->id}, {"wall_s", wall}};
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (plan.kind() == RunKind::serve || plan.command.empty() || plan.command.front() == "run") {
      ok = ok && fs::exists(run_dir(o.dir, r.point->id) + "/" + std::string(kReportFile));
    } else if (ok) {
      // The output is the point's result: it must be one JSON object.
      try {
        ok = Json::parse(read_text(output_file(o.dir, r.point->id))).is_object();
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (ok) {
      status["status"] = "ok";
    } else {
      status["status"] = "failed";
      status["exit"] = detail::describe_status(st);
      status["error"] = detail::error_of(pd + "/run.log");
      // A run killed by a signal (out of memory, a killed worker) may succeed on resume.
      status["retry"] = WIFSIGNALED(st);
      ++sum.failed;
    }
    ++sum.ran;
    ++sum.ok;
    if (!ok) --sum.ok;
    done_wall += wall;
    write_file_atomic(pd + "/status.json", status.dump(2) + "\n");
    draw(true);
  }
  sum.interrupted = g_stop != 0;
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (o.progress) {
    draw(true);
    fmt::print(stderr, "\n");
  }
  return sum;
}

}  // namespace trnsim::sweep
