// SPDX-License-Identifier: MIT
// Running the measurements of a claims file: each a `trnsim ... --json` child process, at most
// `jobs` at a time (run_forked's pool; each job execs trnsim and returns what it printed).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "../sweep/process.hpp"
#include "trnsim/claims/claims.hpp"
#include "trnsim/isolate.hpp"

namespace trnsim::claims {

namespace fs = std::filesystem;

std::map<std::string, RunResult> execute(const ClaimsFile& f, bool quick, const ExecOptions& o) {
  const std::vector<std::string> names = needed_runs(f, quick);
  std::error_code ec;
  fs::create_directories(o.log_dir, ec);
  if (ec)
    throw ClaimsError(fmt::format("{}: cannot create directory: {}", o.log_dir, ec.message()));
  std::vector<std::function<std::string()>> jobs;
  std::vector<std::string> to_run;
  for (const auto& name : names) {
    const auto it = o.reuse.find(name);
    if (it == o.reuse.end() || it->second.args != run_args(f, f.runs.at(name), quick)) to_run.push_back(name);
  }
  for (const auto& name : to_run) {
    std::vector<std::string> argv{o.trnsim};
    for (auto& a : run_args(f, f.runs.at(name), quick)) argv.push_back(std::move(a));
    const std::string log = o.log_dir + "/" + name + ".log";
    // The job's result: "<exit code> <wait status> <wall seconds>\n" and the standard output.
    jobs.emplace_back([argv, log] {
      const auto t0 = std::chrono::steady_clock::now();
      const sweep::detail::Captured c = sweep::detail::capture(argv, log);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return fmt::format("{} {} {:.6f}\n", c.code, c.status, wall) + c.out;
    });
  }
  const std::vector<std::string> texts = run_forked(jobs, o.jobs);
  std::map<std::string, RunResult> out;
  for (const auto& name : names) {
    if (std::find(to_run.begin(), to_run.end(), name) == to_run.end()) out[name] = o.reuse.at(name);
  }
  for (std::size_t i = 0; i < to_run.size(); ++i) {
    const std::string& name = to_run[i];
    RunResult r;
    r.args = run_args(f, f.runs.at(name), quick);
    const std::string& t = texts[i];
    const std::size_t eol = t.find('\n');
    int code = -1, status = 0;
    if (eol == std::string::npos ||
        std::sscanf(t.c_str(), "%d %d %lf", &code, &status, &r.wall_s) != 3) {
      throw InternalError(fmt::format("measurement {}: malformed result from its child", name));
    }
    const std::string log = o.log_dir + "/" + name + ".log";
    const std::string command = fmt::format("trnsim {}", fmt::join(r.args, " "));
    if (code == 2) {
      throw ClaimsError(fmt::format("{}:/runs/{}: `{}` rejected its input: {}", f.path, name,
                                    command, sweep::detail::error_of(log)));
    }
    if (code != 0) {
      r.error = fmt::format(
          "`{}` ended with {}: {} (log {})", command,
          code < 0 ? sweep::detail::describe_status(status) : fmt::format("exit code {}", code),
          sweep::detail::error_of(log), log);
    } else {
      try {
        r.output = Json::parse(t.substr(eol + 1));
        if (!r.output->is_object()) throw std::invalid_argument("not an object");
      } catch (const std::exception&) {
        r.output.reset();
        r.error = fmt::format("`{}` printed no JSON object (log {})", command, log);
      }
    }
    out[name] = std::move(r);
  }
  return out;
}

void solve_gaps(const ClaimsFile& f, Json& results, bool quick, const ExecOptions& o,
                const std::string& solve_dir) {
  struct Job {
    std::size_t row;
    const Claim* claim;
    std::vector<std::string> argv;
    std::string log;
  };
  std::vector<Job> todo;
  for (std::size_t i = 0; i < results["rows"].size(); ++i) {
    const Json& row = results["rows"][i];
    const auto it = std::find_if(f.claims.begin(), f.claims.end(), [&](const Claim& c) { return c.id == row["id"]; });
    if (it == f.claims.end() || !it->solve || row["measured"].is_null()) continue;
    if (row["verdict"] != "known gap" && row["verdict"] != "fail") continue;
    const GapSolve& gs = *it->solve;
    // The metric is a product of terms, each to the power +1 (numerator) or -1: the term of
    // `gs.run` must change by (claimed / measured) to the same power.
    const double ratio = *it->claimed / row["measured"].get<double>();
    std::optional<double> target;
    std::string pointer;
    for (const Json& in : row["inputs"]) {
      if (in["run"] != gs.run || (!gs.term.empty() && in["value"] != gs.term)) continue;
      pointer = in["value"];
      target = in["number"].get<double>() * (in["side"] == "numerator" ? ratio : 1 / ratio);
      break;
    }
    if (!target) continue;
    const std::string dir = solve_dir + "/" + it->id;
    std::vector<std::string> argv{o.trnsim, "solve", "--param", gs.param, "--from", gs.from, "--to", gs.to,
                                  "--metric", pointer, "--target", fmt::format("{:.17g}", *target),
                                  "--xtol", "0.01", "--out", dir, "--json", "--"};
    for (auto& a : run_args(f, f.runs.at(gs.run), quick)) argv.push_back(std::move(a));
    todo.push_back({i, &*it, argv, solve_dir + "/" + it->id + ".log"});
  }
  if (todo.empty()) return;
  std::error_code ec;
  fs::create_directories(solve_dir, ec);
  if (ec) throw ClaimsError(fmt::format("{}: cannot create directory: {}", solve_dir, ec.message()));
  std::vector<std::function<std::string()>> jobs;
  for (const auto& j : todo) {
    jobs.emplace_back([argv = j.argv, log = j.log] {
      const sweep::detail::Captured c = sweep::detail::capture(argv, log);
      return fmt::format("{}\n", c.code) + c.out;
    });
  }
  const std::vector<std::string> texts = run_forked(jobs, o.jobs);
  for (std::size_t k = 0; k < todo.size(); ++k) {
    const Job& j = todo[k];
    const GapSolve& gs = *j.claim->solve;
    Json out{{"param", gs.param}, {"from", gs.from}, {"to", gs.to}, {"cited", gs.cited},
             {"sources", gs.sources}, {"run", gs.run}, {"dir", solve_dir + "/" + j.claim->id},
             {"command", std::vector<std::string>(j.argv.begin() + 1, j.argv.end())}};
    const std::string& t = texts[k];
    const std::size_t eol = t.find('\n');
    const int code = std::atoi(t.substr(0, eol).c_str());
    if (code == 0 || code == 3) {
      try {
        const Json sj = Json::parse(t.substr(eol + 1));
        out["value"] = sj["answer"]["value"];
        out["bracket"] = sj["answer"]["bracket"];
        out["converged"] = sj["answer"]["converged"];
        out["target"] = sj["problem"]["target"];
        out["metric"] = sj["problem"]["metric"];
      } catch (const std::exception&) {
        out["why"] = fmt::format("trnsim solve printed no result (log {})", j.log);
      }
    } else {
      // A range that does not bracket the target, or a metric that turns back: the answer is
      // that no value in the range closes the gap, and the message says what the metric does.
      std::string why = sweep::detail::error_of(j.log);
      const std::string prefix = "trnsim: error: ";
      if (why.starts_with(prefix)) why = why.substr(prefix.size());
      if (code == 2 && why.find("does not bracket") == std::string::npos &&
          why.find("not monotone") == std::string::npos) {
        throw ClaimsError(fmt::format("{}:{}/solve: `trnsim solve` rejected its input: {}", f.path,
                                      j.claim->pointer, why));
      }
      out["why"] = why;
    }
    results["rows"][j.row]["solve"] = out;
  }
}

}  // namespace trnsim::claims
