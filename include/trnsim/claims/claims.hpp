// SPDX-License-Identifier: MIT
// `trnsim claims` (docs/claims.md): a claims file names configurations, the measurements to run
// on them (each a `trnsim bench|run|topo ... --json` command, run once however many claims read
// it) and the claims, each a metric computed from those measurements' JSON, a claimed value, a
// tolerance and its sources. This library parses the file, judges the measured values, compares
// them with a previous run's results and writes the table, results JSON and JUnit XML. No
// SystemC here: every measurement is its own trnsim process.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/error.hpp"

namespace trnsim::claims {

using Json = nlohmann::json;

// A bad claims file, results file or option: exit code 2.
class ClaimsError : public InputError {
 public:
  using InputError::InputError;
};

// The exit code of `trnsim claims` when a claim fails or a metric moved beyond its tolerance
// from the baseline (0 success, 1 internal error and 2 bad input as everywhere).
inline constexpr int kExitFailed = 3;

// A band around a value: `relative` x |value| + `absolute`.
struct Tolerance {
  double relative = 0;
  double absolute = 0;
  double of(double value) const;
  Json to_json() const;
};

// One factor of a metric: the number at `pointer` in the JSON a measurement printed.
struct Term {
  std::string run;
  std::string pointer;
};

// metric = scale x product(numerator) / product(denominator)
struct Metric {
  std::string description;
  std::string unit;
  std::vector<Term> numerator, denominator;
  double scale = 1;
};

enum class Check { equal, at_most, at_least };
enum class Kind { check, projection };
enum class Verdict { pass, fail, known_gap, projection };
const char* verdict_name(Verdict v);  // "pass", "fail", "known gap", "projection"

// A claim's metric taken apart on its two sides: a cost (a time, an energy) that the claimed
// ratio divides, read component by component from the baseline's and the candidate's output.
// The candidate meets the claim when its cost is baseline / claimed; each component's excess
// over its share of that (candidate_i - baseline_i / claimed) says how much of the shortfall it
// accounts for.
struct Decomposition {
  std::string description, unit;
  std::string baseline_run, candidate_run;
  std::string total;  // pointer to the whole cost
  std::vector<std::pair<std::string, std::string>> components;  // name, pointer
  std::string each;   // pointer to an object: every number in it is a component too
  // Pointer to a number each side's values are multiplied by (its own run's): the chips, so that
  // a time becomes chip-time when the racks differ in size. Empty: 1.
  std::string per;
};

// The parameter that would close a claim's gap: `trnsim solve` on one measurement of the
// candidate, for the value of one of the metric's terms at which the metric equals the claim.
struct GapSolve {
  std::string run;            // a measurement whose number is a term of the metric
  std::string term;           // that term's pointer when the run has several; empty: its first
  std::string param;          // its --set path
  std::string from, to;       // the range searched
  std::string cited;          // the range the sources give for the parameter, as text
  std::vector<std::string> sources;
};

struct Claim {
  std::string id, title;
  std::string statement;            // the claim as published
  std::string baseline, candidate;  // configuration names
  Kind kind = Kind::check;
  Check check = Check::equal;
  std::optional<double> claimed;        // a check's claimed value; a projection's target, if any
  Tolerance tolerance;                  // of the claim
  std::optional<Tolerance> regression;  // against --baseline; the file's default when unset
  Metric metric;
  std::vector<std::string> sources;  // keys of ../shared/specs/trainium.md
  std::string known_gap;             // reason; empty: none
  std::string note;
  bool quick = false;   // part of the --quick set
  std::optional<Decomposition> decomposition;
  std::optional<GapSolve> solve;
  std::string pointer;  // "/claims/3", for errors
};

// One measurement: a trnsim command whose standard output is one JSON object. In `args`,
// "{config}" stands for the configuration's file and "{dir}" for the claims file's directory.
struct Run {
  std::string name;
  std::string config;  // a name of ClaimsFile::configs
  std::vector<std::string> args;
  std::optional<std::vector<std::string>> quick_args;  // instead of args under --quick
};

// One reading of specs that sources disagree on: the configurations it replaces with variant
// presets. The file's own configurations are the reading named kPresetsReading.
struct Reading {
  std::string name, description;
  std::map<std::string, std::string> configs;  // a name of ClaimsFile::configs -> file
  std::vector<std::string> sources;            // keys of ../shared/specs/trainium.md
};
inline constexpr const char* kPresetsReading = "presets";

struct ClaimsFile {
  std::string path, dir;  // as given; its directory
  std::string name, description;
  std::map<std::string, std::string> configs;  // name -> file (relative to dir)
  std::vector<Reading> readings;               // by name, without kPresetsReading
  std::map<std::string, Run> runs;
  std::vector<Claim> claims;
  Tolerance regression{0.01, 0};  // default band against --baseline
};

// Parses a claims file; ClaimsError naming the file and the JSON pointer of the first problem.
ClaimsFile parse_claims(const Json& j, const std::string& path);
ClaimsFile load_claims(const std::string& path);

// The claims of a run (all, or the --quick set) and the measurements they read, by name.
std::vector<const Claim*> selected_claims(const ClaimsFile& f, bool quick);
std::vector<std::string> needed_runs(const ClaimsFile& f, bool quick);
// The command line of a measurement, after `trnsim`.
std::vector<std::string> run_args(const ClaimsFile& f, const Run& r, bool quick);

// What a measurement gave: its JSON, or why it has none.
struct RunResult {
  std::vector<std::string> args;
  double wall_s = 0;
  std::optional<Json> output;
  std::string error;  // when there is no output
};

struct ExecOptions {
  std::string trnsim;   // the executable that runs the measurements
  int jobs = 2;         // measurements at once
  std::string log_dir;  // each measurement's standard error: <log_dir>/<run>.log
  // Measurements already made with the same command line (another reading's, on configurations
  // this reading does not replace): taken as they are, not run again.
  std::map<std::string, RunResult> reuse;
};
// Runs the measurements the selected claims read, each once, each as its own trnsim process
// (SystemC allows one simulation per process), at most `jobs` at a time. A measurement that
// rejects its input (exit code 2) is a ClaimsError naming the claims file and the run; one that
// fails otherwise is recorded, and the claims that read it fail.
std::map<std::string, RunResult> execute(const ClaimsFile& f, bool quick, const ExecOptions& o);

// The readings `spec` names: "all", or a comma-separated list of names of /readings
// (kPresetsReading may be listed and is always run first). ClaimsError naming --readings and the
// file for an unknown name.
std::vector<const Reading*> select_readings(const ClaimsFile& f, const std::string& spec);
// The file with a reading's configurations in place of its own.
ClaimsFile with_reading(const ClaimsFile& f, const Reading& r);
// Adds results["readings"] to the presets' results: the readings in order (kPresetsReading
// first), and for each claim its measured value and verdict under each reading. Verdicts under
// other readings are reported, and do not fail the run: the known gaps are written for the
// presets.
void add_readings(Json& results, const ClaimsFile& f, const std::vector<const Reading*>& readings,
                  const std::vector<Json>& per_reading);

// `trnsim claims --solve`: for each row of `results` that misses its claim (known gap or fail)
// and whose claim has a `solve`, runs `trnsim solve` on that measurement (in <o.log_dir>/../solve/
// <id>) for the value of the parameter that brings the metric to the claimed value, and adds
// row["solve"]: the value, its bracket and the cited range, or why no value in the range does.
void solve_gaps(const ClaimsFile& f, Json& results, bool quick, const ExecOptions& o,
                const std::string& solve_dir);

// Pass or fail of `measured` against a claim's check and tolerance (projections: projection; a
// failed check with a known gap: known gap).
Verdict judge(const Claim& c, double measured);

// The results of a claims run: one row per selected claim (claim, claimed, measured, tolerance,
// verdict, the numbers the metric read), the measurements' command lines and wall times.
// A metric that reads a pointer the measurement's JSON lacks is a ClaimsError naming the claims
// file and the term's pointer.
Json evaluate(const ClaimsFile& f, const std::map<std::string, RunResult>& runs, bool quick);

// ClaimsError naming `origin` and the JSON pointer when `baseline` is not a results file, or
// was a --quick run where this one (`quick`) is not, or the other way round: called before
// anything runs, so that a bad baseline costs no measurement.
void check_baseline(const Json& baseline, bool quick, const std::string& origin);
// Compares every row's measured value of `results` with that of `baseline` (a previous results
// file, read from `origin`): a change beyond the row's regression tolerance fails. Adds
// results["baseline"] and returns whether anything regressed. ClaimsError as check_baseline().
bool compare_baseline(Json& results, const Json& baseline, const std::string& origin);

// Sets results["full"]: each row of this --quick run beside the same claim's value in `full`, the
// results of a full run (how far the cut measurements are from the whole ones). ClaimsError naming
// `origin` and the JSON pointer when `full` is not a full run's results, or when this run is full.
void compare_full(Json& results, const Json& full, const std::string& origin);

// Whether anything failed: a claim's verdict or a baseline comparison.
bool failed(const Json& results);

std::string table_text(const Json& results);
std::string junit_xml(const Json& results);

}  // namespace trnsim::claims
