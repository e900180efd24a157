// SPDX-License-Identifier: MIT
// `trnsim solve`: bisection of one parameter on a monotone metric, each value tried a sweep
// directory of its own (evals/<value>/, one point per seed) run by run_plan, so that every run is
// kept and an interrupted solve resumes by running the same command again.
#include "trnsim/sweep/solve.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "files.hpp"
#include "trnsim/io.hpp"
#include "trnsim/sweep/metrics.hpp"
#include "trnsim/sweep/runner.hpp"

namespace trnsim::sweep {

namespace fs = std::filesystem;
using detail::read_json;
using detail::read_text;

namespace {

constexpr int kSolveFormat = 1;

// A directory name for a value: '/' (of "TB/s") and other unsafe bytes become '_'.
std::string dir_name(const std::string& value) {
  std::string out;
  for (const char c : value) {
    const bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
    out += safe ? c : '_';
  }
  return out;
}

// The metric of one completed point; nullopt when its output holds no number there.
std::optional<double> read_number(const std::string& file, const std::string& pointer) {
  const Json j = read_json(file);
  const Json::json_pointer ptr(pointer);
  if (!j.contains(ptr) || !j.at(ptr).is_number()) return std::nullopt;
  return j.at(ptr).get<double>();
}

std::string command_text(const SolveProblem& p) { return fmt::format("trnsim {}", fmt::join(p.command, " ")); }

}  // namespace

std::string ParamValue::text() const {
  return fmt::format("{:.9g}{}", number, unit);
}

ParamValue parse_param_value(const std::string& text, const std::string& option) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) {
    throw SweepError(fmt::format("{} {:?}: expected a number, optionally with a unit (4.9TB/s, 700W, 2)",
                                 option, text));
  }
  std::string unit(end);
  const auto first = unit.find_first_not_of(' ');
  unit = first == std::string::npos ? "" : unit.substr(first);
  return {v, unit};
}

Json SolveProblem::to_json() const {
  return {{"param", param},   {"from", from},           {"to", to},
          {"metric", metric}, {"target", target},       {"command", command},
          {"seeds", seeds},   {"log_scale", log_scale}, {"check_ends", check_ends},
          {"xtol", xtol},     {"ftol", ftol},           {"max_evals", max_evals}};
}

MetricSource metric_source(const SolveProblem& p) {
  if (p.command.empty()) throw SweepError("solve: no command after --: expected `run ...` or `bench ... --json`");
  const bool run = p.command.front() == "run";
  if (!run && p.command.front() != "bench") {
    throw SweepError(fmt::format("solve: command `{}`: expected `run ...` or `bench ... --json`",
                                 command_text(p)));
  }
  if (!run && std::find(p.command.begin(), p.command.end(), "--json") == p.command.end()) {
    throw SweepError(fmt::format("solve: command `{}`: a bench's metric is read from its JSON; add --json",
                                 command_text(p)));
  }
  if (run) {
    for (const auto& a : p.command) {
      if (a == "--out" || a.starts_with("--out=")) {
        throw SweepError(fmt::format("solve: command `{}`: solve gives each run its own --out; remove it",
                                     command_text(p)));
      }
    }
  }
  if (!p.metric.starts_with("/")) {
    if (!run) {
      throw SweepError(fmt::format(
          "--metric {}: the names of sweep/metrics.hpp are figures of `trnsim run`; a bench's metric "
          "is a JSON pointer into its --json output (/achieved_tflops)",
          p.metric));
    }
    for (const auto& m : kMetrics) {
      if (m.name == p.metric) return {true, std::string(m.pointer)};
    }
    std::vector<std::string_view> names;
    for (const auto& m : kMetrics) names.push_back(m.name);
    throw SweepError(fmt::format("--metric {}: expected one of {} or a JSON pointer into report.json",
                                 p.metric, fmt::join(names, ", ")));
  }
  try {
    (void)Json::json_pointer(p.metric);
  } catch (const Json::exception& e) {
    throw SweepError(fmt::format("--metric {}: not a JSON pointer: {}", p.metric, e.what()));
  }
  return {run, p.metric};
}

namespace {

class Solver {
 public:
  Solver(const SolveProblem& p, const SolveOptions& o)
      : p_(p), o_(o), src_(metric_source(p)), lo_(parse_param_value(p.from, "--from")),
        hi_(parse_param_value(p.to, "--to")) {
    if (lo_.unit != hi_.unit) {
      throw SweepError(fmt::format("--from {} --to {}: the two ends have different units ({:?} and {:?})",
                                   p.from, p.to, lo_.unit, hi_.unit));
    }
    if (!(lo_.number < hi_.number)) {
      throw SweepError(fmt::format("--from {} --to {}: expected from < to", p.from, p.to));
    }
    if (p.log_scale && lo_.number <= 0) {
      throw SweepError(fmt::format("--from {}: a log-scale range must be positive", p.from));
    }
    if (p.seeds < 0 || p.seeds > 1000) throw SweepError(fmt::format("--seeds {}: expected 0 to 1000", p.seeds));
    if (p.max_evals < 2) throw SweepError(fmt::format("--max-evals {}: expected at least 2", p.max_evals));
    if (!(p.xtol > 0 && p.xtol < 1)) throw SweepError(fmt::format("--xtol {}: expected 0 < xtol < 1", p.xtol));
    if (!(p.ftol >= 0)) throw SweepError(fmt::format("--ftol {}: expected >= 0", p.ftol));
    if (!std::isfinite(p.target)) throw SweepError("--target: expected a finite number");
  }

  SolveResult run() {
    check_directory();
    SolveResult r;
    const std::size_t a0 = eval(lo_.number, "end", r);
    const std::size_t b0 = eval(hi_.number, "end", r);
    const Evaluation &ea = r.evaluations[a0], &eb = r.evaluations[b0];
    const double fa = ea.mean, fb = eb.mean;
    if (fa == fb || (fa - p_.target) * (fb - p_.target) > 0) {
      throw SweepError(fmt::format(
          "--from {} --to {}: the range does not bracket the target: {} is {:.6g} at {}={} and "
          "{:.6g} at {}={}, and the target {:.6g} is not between them (widen the range, or the "
          "metric does not reach the target on it). Runs kept in {}",
          p_.from, p_.to, p_.metric, fa, p_.param, ea.value, fb, p_.param, eb.value, p_.target,
          o_.dir));
    }
    r.increasing = fb > fa;
    std::size_t a = a0, b = b0;
    if (p_.check_ends) {
      // The metric must move the same way just inside each end as over the whole range: a
      // metric that turns back near an end may cross the target twice.
      const double w = from_x(hi_.number) - from_x(lo_.number);
      const std::size_t pa = eval(to_x(from_x(lo_.number) + w / 64), "end probe", r);
      const std::size_t pb = eval(to_x(from_x(hi_.number) - w / 64), "end probe", r);
      check_order(r, a0, pa, b0);
      check_order(r, a0, pb, b0);
      check_order(r, a0, pa, pb);
      check_order(r, pa, pb, b0);
      // Narrow the bracket with the probes (pa below pb): a is the highest value on the low
      // end's side of the target, b the lowest on the other.
      if (side(r, pa)) {
        a = pa;
        if (side(r, pb)) a = pb; else b = pb;
      } else {
        b = pa;
      }
    }
    int evals = int(r.evaluations.size());
    while (true) {
      const Evaluation &ea2 = r.evaluations[a], &eb2 = r.evaluations[b];
      if (a == b || std::abs(ea2.mean - p_.target) <= p_.ftol * std::abs(p_.target) ||
          std::abs(eb2.mean - p_.target) <= p_.ftol * std::abs(p_.target)) {
        r.converged = true;
        r.note = "the metric met the target within --ftol";
        break;
      }
      const double width = std::abs(from_x(eb2.x) - from_x(ea2.x)) / (from_x(hi_.number) - from_x(lo_.number));
      if (width <= p_.xtol) {
        r.converged = true;
        r.note = fmt::format("the bracket is {:.3g} of the range wide (--xtol {})", width, p_.xtol);
        break;
      }
      if (evals >= p_.max_evals) {
        r.note = fmt::format("stopped after --max-evals {}: the bracket is {:.3g} of the range wide", p_.max_evals, width);
        break;
      }
      const double m = to_x((from_x(ea2.x) + from_x(eb2.x)) / 2);
      if (ParamValue{m, lo_.unit}.text() == ea2.value || ParamValue{m, lo_.unit}.text() == eb2.value) {
        r.converged = true;
        r.note = "the bracket is as narrow as the value's text (9 significant digits)";
        break;
      }
      const std::size_t c = eval(m, "bisection", r);
      ++evals;
      check_order(r, a, c, b);
      side(r, c) ? a = c : b = c;
    }
    r.lo = a;
    r.hi = b;
    if (r.evaluations[r.lo].x > r.evaluations[r.hi].x) std::swap(r.lo, r.hi);
    const Evaluation &l = r.evaluations[r.lo], &h = r.evaluations[r.hi];
    if (l.mean == h.mean) {
      r.answer = l.x;
    } else {
      const double t = (p_.target - l.mean) / (h.mean - l.mean);
      r.answer = to_x(from_x(l.x) + t * (from_x(h.x) - from_x(l.x)));
    }
    r.answer_text = ParamValue{r.answer, lo_.unit}.text();
    for (const std::size_t k : {r.lo, r.hi}) {
      const Evaluation& e = r.evaluations[k];
      if (e.values.size() > 1 && std::abs(e.mean - p_.target) <= e.stddev) {
        r.note += fmt::format("; at {} the target is within one standard deviation of the seeds' "
                              "mean ({:.6g} +- {:.3g}): the noise decides the last digits",
                              e.value, e.mean, e.stddev);
      }
    }
    write_record(r);
    return r;
  }

 private:
  double from_x(double x) const { return p_.log_scale ? std::log(x) : x; }
  double to_x(double u) const { return p_.log_scale ? std::exp(u) : u; }
  // -1, 0, +1: the metric's side of the target, oriented so that -1 is the low end's side.
  int between_target(double f) const {
    if (f == p_.target) return 0;
    return ((f > p_.target) == increasing_) ? 1 : -1;
  }
  // Whether evaluation k is on the low end's side of the target (it becomes the new low end).
  bool side(const SolveResult& r, std::size_t k) const { return between_target(r.evaluations[k].mean) <= 0; }

  // A monotone metric at x_a < x_c < x_b lies between its values at x_a and x_b.
  void check_order(const SolveResult& r, std::size_t a, std::size_t c, std::size_t b) const {
    const Evaluation &ea = r.evaluations[a], &ec = r.evaluations[c], &eb = r.evaluations[b];
    const double lo = std::min(ea.mean, eb.mean), hi = std::max(ea.mean, eb.mean);
    // With seeds, allow the spread of the three means.
    const double slack = std::max({ea.stddev, eb.stddev, ec.stddev});
    if (ec.mean < lo - slack || ec.mean > hi + slack) {
      throw SweepError(fmt::format(
          "--from {} --to {}: {} is not monotone in {} on this range: {:.6g} at {}, {:.6g} at {}, "
          "{:.6g} at {} (narrow the range to one side of the turn, or add --seeds if it is noise). "
          "Runs kept in {}",
          p_.from, p_.to, p_.metric, p_.param, ea.mean, ea.value, ec.mean, ec.value, eb.mean,
          eb.value, o_.dir));
    }
  }

  void check_directory() {
    std::error_code ec;
    fs::create_directories(o_.dir + "/evals", ec);
    if (ec) throw SweepError(fmt::format("--out {}: cannot create directory: {}", o_.dir, ec.message()));
    const std::string path = o_.dir + "/solve.json";
    if (fs::exists(path)) {
      // The runs of a directory are those of one command, parameter and seed count: another
      // target, metric, tolerance or budget reuses them (each value's runs are found by value).
      const Json have = read_json(path).value("problem", Json::object());
      const Json want = p_.to_json();
      for (const char* key : {"command", "param", "seeds"}) {
        if (have.value(key, Json()) != want[key]) {
          throw SweepError(fmt::format(
              "--out {}: holds the runs of another solve (its {} is {}, not {}); use another "
              "--out, or delete the directory to start again",
              o_.dir, key, have.value(key, Json()).dump(), want[key].dump()));
        }
      }
    }
    write_file_atomic(path, Json{{"format", kSolveFormat}, {"problem", p_.to_json()}}.dump(2) + "\n");
  }

  // Runs (or reuses) the evaluation at x and appends it to r; returns its index.
  std::size_t eval(double x, const std::string& role, SolveResult& r) {
    Evaluation e;
    e.value = ParamValue{x, lo_.unit}.text();
    e.x = parse_param_value(e.value, "--param").number;  // the value the run was given
    e.role = role;
    e.dir = o_.dir + "/evals/" + dir_name(e.value);
    Plan plan;
    plan.name = "solve";
    plan.description = fmt::format("{} at {}={}", p_.metric, p_.param, e.value);
    plan.command = p_.command;
    const std::string set = fmt::format("{}={}", p_.param, e.value);
    if (p_.seeds > 0) {
      plan.axis_names = {"seed"};
      plan.axis_paths = {kSeedPath};
      plan.seed_axis = 0;
      for (int s = 1; s <= p_.seeds; ++s) {
        plan.points.push_back({fmt::format("p{:04}", s - 1), std::size_t(s - 1), {Json(s)},
                               {set, fmt::format("{}={}", kSeedPath, s)}});
      }
    } else {
      plan.points.push_back({"p0000", 0, {}, {set}});
    }
    bool complete = fs::exists(e.dir + "/plan.json");
    for (const auto& pt : plan.points) complete = complete && point_state(e.dir, pt.id) == "ok";
    e.reused = complete;
    RunOptions ro;
    ro.dir = e.dir;
    ro.jobs = o_.jobs;
    ro.trnsim = o_.trnsim;
    const RunSummary s = run_plan(plan, ro);
    if (s.interrupted) throw SolveInterrupted(o_.dir);
    for (const auto& pt : plan.points) {
      const std::string st = point_state(e.dir, pt.id);
      if (st != "ok") {
        const Json status = read_json(point_dir(e.dir, pt.id) + "/status.json");
        const std::string why = fmt::format(
            "{}={}: `{} --set {}` {}: {} (log {}/run.log; run the same solve again with the cause "
            "fixed, or delete {})",
            p_.param, e.value, command_text(p_), fmt::join(pt.sets, " --set "),
            status.value("exit", std::string("failed")), status.value("error", std::string("?")),
            point_dir(e.dir, pt.id), e.dir);
        if (status.value("exit", std::string()) == "exit code 2") throw SweepError(why);
        throw std::runtime_error(why);
      }
      const std::string file = src_.run ? run_dir(e.dir, pt.id) + "/" + std::string(kReportFile)
                                        : output_file(e.dir, pt.id);
      const auto v = read_number(file, src_.pointer);
      if (!v) {
        throw SweepError(fmt::format("--metric {}: {} holds no number at {}", p_.metric, file, src_.pointer));
      }
      e.values.push_back(*v);
    }
    const double n = double(e.values.size());
    e.mean = std::accumulate(e.values.begin(), e.values.end(), 0.0) / n;
    if (e.values.size() > 1) {
      double ss = 0;
      for (const double v : e.values) ss += (v - e.mean) * (v - e.mean);
      e.stddev = std::sqrt(ss / (n - 1));
    }
    if (o_.progress) {
      fmt::print(stderr, "solve: {}={} -> {} = {:.6g}{}{}\n", p_.param, e.value, p_.metric, e.mean,
                 e.values.size() > 1 ? fmt::format(" +- {:.3g}", e.stddev) : "",
                 e.reused ? " (reused)" : "");
    }
    r.evaluations.push_back(std::move(e));
    if (r.evaluations.size() == 2) increasing_ = r.evaluations[1].mean > r.evaluations[0].mean;
    write_record(r);
    return r.evaluations.size() - 1;
  }

  void write_record(const SolveResult& r) const {
    write_file_atomic(o_.dir + "/solve.json", r.to_json(p_).dump(2) + "\n");
  }

  const SolveProblem& p_;
  const SolveOptions& o_;
  MetricSource src_;
  ParamValue lo_, hi_;
  bool increasing_ = true;
};

}  // namespace

Json SolveResult::to_json(const SolveProblem& p) const {
  Json j{{"format", kSolveFormat}, {"problem", p.to_json()}};
  j["evaluations"] = Json::array();
  for (const auto& e : evaluations) {
    j["evaluations"].push_back({{"value", e.value}, {"x", e.x}, {"mean", e.mean}, {"stddev", e.stddev},
                                {"values", e.values}, {"dir", e.dir}, {"role", e.role},
                                {"reused", e.reused}});
  }
  if (!answer_text.empty()) {
    j["answer"] = {{"value", answer_text},
                   {"x", answer},
                   {"bracket", {evaluations[lo].value, evaluations[hi].value}},
                   {"metric_at_bracket", {evaluations[lo].mean, evaluations[hi].mean}},
                   {"converged", converged},
                   {"increasing", increasing},
                   {"note", note}};
  }
  return j;
}

std::string solve_text(const SolveProblem& p, const SolveResult& r) {
  std::string out = fmt::format("solve {} for {} = {:.6g} (`trnsim {}`)\n", p.param, p.metric, p.target,
                                fmt::join(p.command, " "));
  out += fmt::format("  {:>4}  {:<16} {:>16} {:>12}  {}\n", "#", "value", "metric", "+-", "role");
  for (std::size_t k = 0; k < r.evaluations.size(); ++k) {
    const Evaluation& e = r.evaluations[k];
    out += fmt::format("  {:>4}  {:<16} {:>16.6g} {:>12}  {}{}\n", k + 1, e.value, e.mean,
                       e.values.size() > 1 ? fmt::format("{:.3g}", e.stddev) : "-", e.role,
                       e.reused ? " (reused)" : "");
  }
  const Evaluation &l = r.evaluations[r.lo], &h = r.evaluations[r.hi];
  out += fmt::format("{} = {} (bracket {} .. {}, {} {:.6g} .. {:.6g}; {}{})\n", p.param, r.answer_text,
                     l.value, h.value, p.metric, l.mean, h.mean, r.converged ? "" : "NOT CONVERGED: ",
                     r.note);
  return out;
}

SolveResult solve(const SolveProblem& p, const SolveOptions& o) { return Solver(p, o).run(); }

}  // namespace trnsim::sweep
