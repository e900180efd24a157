// SPDX-License-Identifier: MIT
// `trnsim serve [SPEC]`: a serving run (docs/serving.md). With no spec it serves the default:
// DeepSeek-V3 on the Trn3 Gen2 UltraServer with requests from the Azure conversation trace.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "bench_common.hpp"
#include "commands.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/serve/estimate.hpp"
#include "trnsim/serve/serve.hpp"

namespace trnsim::cli {

namespace {

inline constexpr const char* kDefaultSpec = "configs/serving/deepseek-v3-trn3-azure-conv.json";

struct ServeOpts {
  std::string spec;
  std::vector<std::string> sets, rack_sets;
  std::string rack, out;
  std::vector<std::string> out_files;  // --out-files: some of kFiles
  bool json = false, estimate = false, no_cache = false;
  std::uint64_t held_back = 0;
  double solve_users = 0;
  std::uint64_t solve_max_users = 65536, solve_requests_per_user = 4;
};

const std::vector<std::string> kFiles = {"report.json", "summary.csv", "requests.csv", "timeline.json"};

std::string spec_path(const std::string& given) {
  if (given.empty()) return data_path(kDefaultSpec);
  if (given.find('/') != std::string::npos || given.ends_with(".json")) return given;
  return data_path("configs/serving/" + given + ".json");
}

}  // namespace

void register_serve_command(CLI::App& app, Registry& reg) {
  auto o = std::make_shared<ServeOpts>();
  auto* sub = app.add_subcommand(
      "serve", "simulate serving requests on a rack (default: DeepSeek-V3 on the Trn3 Gen2 "
               "UltraServer, Azure conversation trace)");
  sub->add_option("spec", o->spec,
                  fmt::format("serving spec: a name under configs/serving/ or a file (default {})",
                              kDefaultSpec));
  sub->add_option("--set", o->sets, "override a spec value: arrivals.rate_per_s=4 or /run/requests=100")
      ->allow_extra_args(false);
  sub->add_option("--config", o->rack, "rack preset name or file (replaces the spec's rack)");
  sub->add_option("--rack-set", o->rack_sets, "override a rack value: sim.fidelity=detailed")
      ->allow_extra_args(false);
  auto* out_opt = sub->add_option("--out", o->out,
                                  "write report.json, summary.csv, requests.csv and timeline.json here");
  sub->add_option("--out-files", o->out_files,
                  "with --out: write only these of report.json, summary.csv, requests.csv, timeline.json "
                  "(comma-separated; a sweep's points keep report.json and summary.csv)")
      ->delimiter(',')
      ->allow_extra_args(false);
  sub->add_flag("--json", o->json, "print report.json instead of the summary");
  sub->add_flag("--estimate", o->estimate,
                "print the requests, the iterations and shapes they bound, one iteration's run "
                "estimate, the memory and the expected wall time, and exit without simulating");
  sub->add_option("--solve-users", o->solve_users,
                  "find the largest number of closed-loop users whose p50 tokens/s per user is at "
                  "least this (doubling, then bisection; one shape cache for all points)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--solve-max-users", o->solve_max_users, "--solve-users: the search's upper end (65536)")
      ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1) << 24));
  sub->add_option("--solve-requests-per-user", o->solve_requests_per_user,
                  "--solve-users: measured requests per user at each point (4), after one warm-up "
                  "request per user")
      ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1000)));
  sub->add_flag("--no-cache", o->no_cache,
                "simulate every shape, neither reading nor keeping shape costs on disk (also "
                "TRNSIM_NO_CACHE=1; docs/serving.md#shape-cache)");
  sub->add_option("--held-back", o->held_back,
                  "grid timing: after the run, simulate this many of the shapes it interpolated "
                  "exactly and report each one's interpolation error (report.json timing.held_back)")
      ->check(CLI::Range(std::uint64_t(0), std::uint64_t(1000)));
  reg.add(sub, Footprint::builds_models, [o, out_opt, &reg]() {
    for (const auto& f : o->out_files) {
      if (std::find(kFiles.begin(), kFiles.end(), f) == kFiles.end()) {
        throw InputError(fmt::format("--out-files {}: not a file serve writes; expected some of report.json, "
                                     "summary.csv, requests.csv, timeline.json", f));
      }
    }
    if (!o->out_files.empty() && out_opt->count() == 0) throw InputError("--out-files: needs --out");
    const auto wanted = [&](const std::string& f) {
      return o->out_files.empty() || std::find(o->out_files.begin(), o->out_files.end(), f) != o->out_files.end();
    };
    if (o->estimate && (out_opt->count() > 0 || o->json || o->solve_users > 0)) {
      throw InputError(fmt::format("serve --estimate: prints the estimate and simulates nothing; {} is "
                                   "not taken with it",
                                   out_opt->count() > 0 ? "--out" : o->json ? "--json" : "--solve-users"));
    }
    if (out_opt->count() > 0) OutputDir::check_writable(o->out, kFiles);
    serve::ServeOptions so;
    so.spec_path = spec_path(o->spec);
    so.spec_sets = o->sets;
    so.rack = o->rack;
    so.rack_sets = o->rack_sets;
    so.command_line = reg.argv;
    so.solve_users_target = o->solve_users;
    so.solve_max_users = o->solve_max_users;
    so.solve_requests_per_user = o->solve_requests_per_user;
    so.timeline = out_opt->count() > 0 && wanted("timeline.json");
    so.no_cache = o->no_cache;
    so.held_back = o->held_back;
    if (o->estimate) {
      fmt::print("{}", serve::estimate(so).text);
      return 0;
    }
    const serve::ServeResult r = serve::serve(so);
    if (out_opt->count() > 0) {
      OutputDir dir(o->out);
      dir.also_replaces(kFiles);  // an earlier result with more of them
      if (wanted("report.json")) dir.add("report.json", r.report.dump(2) + "\n");
      // RFC 4180: a field with a comma or a quote is quoted (the layout is "tp=1,dp=1,...").
      const auto field = [](const std::string& v) {
        if (v.find_first_of(",\"\n") == std::string::npos) return v;
        std::string q = "\"";
        for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
      };
      std::string head, row;
      for (const auto& [k, v] : r.summary_csv) {
        head += (head.empty() ? "" : ",") + k;
        row += (row.empty() ? "" : ",") + field(v);
      }
      if (wanted("summary.csv")) dir.add("summary.csv", head + "\n" + row + "\n");
      if (wanted("requests.csv")) dir.add("requests.csv", r.requests_csv);
      if (wanted("timeline.json")) dir.add("timeline.json", r.timeline);
      dir.commit();
    }
    if (o->json) {
      fmt::print("{}\n", r.report.dump(2));
    } else {
      fmt::print("{}  wall time {:.1f} s\n", r.text, r.wall_s);
    }
    return 0;
  });
}

}  // namespace trnsim::cli
