// SPDX-License-Identifier: MIT
// `trnsim claims FILE`: runs what each claim of a claims file needs (docs/claims.md), prints the
// table, writes results.json and junit.xml, and exits with kExitFailed when a claim fails or,
// with --baseline, a metric moved beyond its tolerance.
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "commands.hpp"
#include "trnsim/claims/claims.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/io.hpp"
#include "trnsim/sweep/runner.hpp"

namespace trnsim::cli {

void register_claims_command(CLI::App& app, Registry& reg) {
  struct Opts {
    std::string file, out = "out/claims", baseline, readings, full;
    bool quick = false, json = false, solve = false;
    int jobs = 2;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = app.add_subcommand(
      "claims",
      "check AWS's claims (a claims file, docs/claims.md): table, results.json, junit.xml");
  sub->add_option("FILE", o->file, "claims file, e.g. configs/claims/trn3-vs-trn2.json")
      ->required();
  sub->add_flag("--quick", o->quick, "only the claims marked quick, on their reduced measurements");
  sub->add_option(
      "--baseline", o->baseline,
      "a previous results.json: fail when a metric moved beyond its regression tolerance");
  sub->add_option("--full", o->full,
                  "with --quick: a full run's results.json, to print how far each cut measurement is "
                  "from the whole one");
  sub->add_option("--out", o->out, "directory for results.json, junit.xml and logs/")
      ->capture_default_str();
  sub->add_option("-j,--jobs", o->jobs, "measurements at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sub->add_flag("--json", o->json, "print results.json instead of the table");
  sub->add_flag("--solve", o->solve,
                "for each gap, run trnsim solve for the value of the claim's parameter that closes it");
  sub->add_option("--readings", o->readings,
                  "also run under these readings of disputed specs (\"all\" or a comma list of "
                  "the file's /readings): a matrix claim x reading");
  reg.add(sub, Footprint::builds_models, [o]() {
    const auto t0 = std::chrono::steady_clock::now();
    const claims::ClaimsFile f = claims::load_claims(o->file);
    // Read the baseline before running anything: a bad one must not cost a full run.
    claims::Json baseline;
    if (!o->baseline.empty()) {
      std::string text;
      try {
        text = read_input_file(o->baseline, kMaxConfigFileBytes);
      } catch (const InputError& e) {
        throw claims::ClaimsError(fmt::format("--baseline {}", e.what()));
      }
      baseline = config::parse_json<claims::ClaimsError>(text, o->baseline);
      claims::check_baseline(baseline, o->quick, o->baseline);
    }
    claims::Json full;
    if (!o->full.empty()) {
      if (!o->quick) throw claims::ClaimsError("--full: compares a --quick run with a full one; add --quick");
      std::string text;
      try {
        text = read_input_file(o->full, kMaxConfigFileBytes);
      } catch (const InputError& e) {
        throw claims::ClaimsError(fmt::format("--full {}", e.what()));
      }
      full = config::parse_json<claims::ClaimsError>(text, o->full);
      claims::Json probe{{"quick", true}, {"rows", claims::Json::array()}};
      claims::compare_full(probe, full, o->full);  // a bad file must not cost a run
    }
    claims::ExecOptions eo;
    eo.trnsim = sweep::self_executable();
    eo.jobs = o->jobs;
    eo.log_dir = o->out + "/logs";
    const std::vector<const claims::Reading*> readings =
        o->readings.empty() ? std::vector<const claims::Reading*>{}
                            : claims::select_readings(f, o->readings);
    const auto runs = claims::execute(f, o->quick, eo);
    claims::Json results = claims::evaluate(f, runs, o->quick);
    if (o->solve) claims::solve_gaps(f, results, o->quick, eo, o->out + "/solve");
    if (!readings.empty()) {
      // Each reading runs only the measurements on the configurations it replaces.
      std::vector<claims::Json> per_reading;
      for (const claims::Reading* r : readings) {
        const claims::ClaimsFile g = claims::with_reading(f, *r);
        claims::ExecOptions ro = eo;
        ro.log_dir = o->out + "/logs/" + r->name;
        ro.reuse = runs;
        per_reading.push_back(claims::evaluate(g, claims::execute(g, o->quick, ro), o->quick));
      }
      claims::add_readings(results, f, readings, per_reading);
    }
    if (!o->baseline.empty()) claims::compare_baseline(results, baseline, o->baseline);
    if (!o->full.empty()) claims::compare_full(results, full, o->full);
    results["wall_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_file_atomic(o->out + "/results.json", results.dump(2) + "\n");
    write_file_atomic(o->out + "/junit.xml", claims::junit_xml(results));
    if (o->json) {
      fmt::print("{}\n", results.dump(2));
    } else {
      fmt::print("{}results: {}/results.json, {}/junit.xml\n", claims::table_text(results), o->out,
                 o->out);
    }
    return claims::failed(results) ? claims::kExitFailed : 0;
  });
}

}  // namespace trnsim::cli
