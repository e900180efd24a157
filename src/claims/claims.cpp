// SPDX-License-Identifier: MIT
// Claims files: parsing (every problem names the file and JSON pointer), the metrics and their
// verdicts, the comparison with a baseline results file.
#include "trnsim/claims/claims.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "trnsim/config/file_reader.hpp"
#include "trnsim/io.hpp"

namespace trnsim::claims {

namespace fs = std::filesystem;

namespace {

using Reader = config::FileReader<ClaimsError>;
using config::json_pointer_append;

constexpr int kFormat = 1;
constexpr const char* kResultsKind = "trnsim-claims-results";
constexpr std::size_t kMaxClaims = 10000;
// The commands a measurement may run: each prints one JSON object with --json.
const std::vector<std::string> kCommands{"bench", "run", "topo", "serve"};

Tolerance read_tolerance(const Reader& r, const Json& t, const std::string& ptr) {
  r.check_keys(t, ptr, {"relative", "absolute"});
  if (t.empty()) r.fail(ptr, "expected \"relative\" and/or \"absolute\"");
  Tolerance tol;
  if (t.contains("relative")) tol.relative = r.number(t, ptr, "relative");
  if (t.contains("absolute")) tol.absolute = r.number(t, ptr, "absolute");
  if (tol.relative < 0) r.fail(ptr + "/relative", "expected a number >= 0");
  if (tol.absolute < 0) r.fail(ptr + "/absolute", "expected a number >= 0");
  return tol;
}

std::vector<std::string> read_strings(const Reader& r, const Json& obj, const std::string& ptr,
                                      const std::string& key) {
  const std::string p = json_pointer_append(ptr, key);
  if (!obj.contains(key)) r.fail(p, "missing: expected an array of strings");
  const Json& a = obj[key];
  if (!a.is_array() || a.empty())
    r.fail(p, fmt::format("expected a non-empty array of strings, got {}", a.dump()));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string() || a[i].get<std::string>().empty()) {
      r.fail(fmt::format("{}/{}", p, i),
             fmt::format("expected a non-empty string, got {}", a[i].dump()));
    }
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

std::vector<std::string> read_args(const Reader& r, const Json& obj, const std::string& ptr,
                                   const std::string& key) {
  auto args = read_strings(r, obj, ptr, key);
  const std::string p = json_pointer_append(ptr, key);
  if (std::find(kCommands.begin(), kCommands.end(), args[0]) == kCommands.end()) {
    r.fail(p + "/0", fmt::format("expected one of \"{}\", got \"{}\"",
                                 fmt::join(kCommands, "\", \""), args[0]));
  }
  if (std::find(args.begin(), args.end(), "--json") == args.end()) {
    r.fail(p, "expected \"--json\" among the arguments: a measurement prints one JSON object");
  }
  return args;
}

Run read_run(const Reader& r, const Json& j, const std::string& ptr, const std::string& name,
             const std::map<std::string, std::string>& configs) {
  r.check_keys(j, ptr, {"config", "args", "quick_args"});
  Run run;
  run.name = name;
  run.config = r.string(j, ptr, "config", true);
  if (!configs.contains(run.config)) {
    r.fail(ptr + "/config", fmt::format("\"{}\" is not a name of /configs", run.config));
  }
  run.args = read_args(r, j, ptr, "args");
  if (j.contains("quick_args")) run.quick_args = read_args(r, j, ptr, "quick_args");
  return run;
}

std::vector<Term> read_terms(const Reader& r, const Json& m, const std::string& ptr,
                             const std::string& key, const ClaimsFile& f) {
  const std::string p = json_pointer_append(ptr, key);
  if (!m.contains(key)) return {};
  if (!m[key].is_array())
    r.fail(p, fmt::format("expected an array of terms, got {}", m[key].dump()));
  std::vector<Term> out;
  for (std::size_t i = 0; i < m[key].size(); ++i) {
    const std::string tp = fmt::format("{}/{}", p, i);
    const Json& t = m[key][i];
    r.check_keys(t, tp, {"run", "value"});
    Term term{r.string(t, tp, "run", true), r.string(t, tp, "value", true)};
    if (!f.runs.contains(term.run)) {
      r.fail(tp + "/run", fmt::format("\"{}\" is not a name of /runs", term.run));
    }
    try {
      if (!term.pointer.starts_with("/")) throw std::invalid_argument("does not start with /");
      (void)Json::json_pointer(term.pointer);
    } catch (const std::exception&) {
      r.fail(tp + "/value", fmt::format("expected a JSON pointer into the run's output, got \"{}\"",
                                        term.pointer));
    }
    out.push_back(term);
  }
  return out;
}

Claim read_claim(const Reader& r, const Json& j, const std::string& ptr, const ClaimsFile& f) {
  r.check_keys(
      j, ptr,
      {"id", "title", "claim", "baseline", "candidate", "kind", "check", "claimed", "tolerance",
       "regression_tolerance", "metric", "sources", "known_gap", "note", "quick", "decomposition",
       "solve"});
  Claim c;
  c.pointer = ptr;
  c.id = r.string(j, ptr, "id", true);
  c.title = r.string(j, ptr, "title", true);
  c.statement = r.string(j, ptr, "claim", true);
  for (const char* side : {"baseline", "candidate"}) {
    const std::string v = r.string(j, ptr, side, true);
    if (!f.configs.contains(v)) {
      r.fail(json_pointer_append(ptr, side), fmt::format("\"{}\" is not a name of /configs", v));
    }
    (std::string(side) == "baseline" ? c.baseline : c.candidate) = v;
  }
  const std::string kind = j.contains("kind") ? r.string(j, ptr, "kind", true) : "check";
  if (kind == "projection")
    c.kind = Kind::projection;
  else if (kind != "check")
    r.fail(ptr + "/kind", fmt::format("expected \"check\" or \"projection\", got \"{}\"", kind));
  const std::string check = j.contains("check") ? r.string(j, ptr, "check", true) : "equal";
  if (check == "at_most")
    c.check = Check::at_most;
  else if (check == "at_least")
    c.check = Check::at_least;
  else if (check != "equal") {
    r.fail(ptr + "/check",
           fmt::format("expected \"equal\", \"at_most\" or \"at_least\", got \"{}\"", check));
  }
  if (c.kind == Kind::check || j.contains("claimed")) c.claimed = r.number(j, ptr, "claimed");
  if (c.kind == Kind::check) {
    if (!j.contains("tolerance")) r.fail(ptr + "/tolerance", "missing: a check needs a tolerance");
    c.tolerance = read_tolerance(r, j["tolerance"], ptr + "/tolerance");
  } else if (j.contains("tolerance") || j.contains("known_gap")) {
    r.fail(ptr + (j.contains("tolerance") ? "/tolerance" : "/known_gap"),
           "a projection is reported, not checked: it takes no tolerance and no known gap");
  }
  if (j.contains("regression_tolerance")) {
    c.regression = read_tolerance(r, j["regression_tolerance"], ptr + "/regression_tolerance");
  }
  const std::string mp = ptr + "/metric";
  if (!j.contains("metric")) r.fail(mp, "missing: expected an object");
  const Json& m = j["metric"];
  r.check_keys(m, mp, {"description", "unit", "numerator", "denominator", "scale"});
  c.metric.description = r.string(m, mp, "description", true);
  c.metric.unit = r.string(m, mp, "unit", true);
  c.metric.numerator = read_terms(r, m, mp, "numerator", f);
  c.metric.denominator = read_terms(r, m, mp, "denominator", f);
  if (c.metric.numerator.empty()) r.fail(mp + "/numerator", "expected at least one term");
  if (m.contains("scale")) {
    c.metric.scale = r.number(m, mp, "scale");
    if (c.metric.scale == 0) r.fail(mp + "/scale", "expected a number other than 0");
  }
  c.sources = read_strings(r, j, ptr, "sources");
  c.known_gap = r.string(j, ptr, "known_gap", false);
  c.note = r.string(j, ptr, "note", false);
  if (j.contains("quick")) {
    if (!j["quick"].is_boolean())
      r.fail(ptr + "/quick", fmt::format("expected true or false, got {}", j["quick"].dump()));
    c.quick = j["quick"].get<bool>();
  }
  if (j.contains("decomposition")) {
    const std::string dp = ptr + "/decomposition";
    const Json& d = j["decomposition"];
    r.check_keys(d, dp, {"description", "unit", "baseline", "candidate", "total", "components", "each", "per"});
    Decomposition dc;
    dc.description = r.string(d, dp, "description", true);
    dc.unit = r.string(d, dp, "unit", true);
    dc.baseline_run = r.string(d, dp, "baseline", true);
    dc.candidate_run = r.string(d, dp, "candidate", true);
    for (const auto* run : {&dc.baseline_run, &dc.candidate_run}) {
      if (!f.runs.contains(*run)) {
        r.fail(dp + (run == &dc.baseline_run ? "/baseline" : "/candidate"),
               fmt::format("\"{}\" is not a name of /runs", *run));
      }
    }
    dc.total = r.string(d, dp, "total", true);
    dc.each = r.string(d, dp, "each", false);
    dc.per = r.string(d, dp, "per", false);
    if (d.contains("per") && !dc.per.starts_with("/")) {
      r.fail(dp + "/per", fmt::format("expected a JSON pointer to a number of each run, got \"{}\"", dc.per));
    }
    if (d.contains("components")) {
      if (!d["components"].is_object()) r.fail(dp + "/components", "expected an object of names and JSON pointers");
      for (const auto& [name, v] : d["components"].items()) {
        dc.components.emplace_back(name, r.string(d["components"], dp + "/components", name, true));
      }
    }
    if (dc.components.empty() && dc.each.empty()) {
      r.fail(dp, "expected \"components\" or \"each\": the parts of the total");
    }
    if (!c.claimed || c.kind != Kind::check) r.fail(dp, "a decomposition needs a checked claim with a claimed ratio");
    c.decomposition = std::move(dc);
  }
  if (j.contains("solve")) {
    const std::string sp = ptr + "/solve";
    const Json& sj = j["solve"];
    r.check_keys(sj, sp, {"run", "term", "param", "from", "to", "cited", "sources"});
    GapSolve gs;
    gs.run = r.string(sj, sp, "run", true);
    gs.term = r.string(sj, sp, "term", false);
    bool in_metric = false, term_found = false;
    for (const auto* side : {&c.metric.numerator, &c.metric.denominator}) {
      for (const auto& t : *side) {
        in_metric = in_metric || t.run == gs.run;
        term_found = term_found || (t.run == gs.run && t.pointer == gs.term);
      }
    }
    if (!in_metric) r.fail(sp + "/run", fmt::format("\"{}\" is not a run of the claim's metric", gs.run));
    if (!gs.term.empty() && !term_found) {
      r.fail(sp + "/term", fmt::format("\"{}\" is not a value of {} in the claim's metric", gs.term, gs.run));
    }
    const std::string cmd = f.runs.at(gs.run).args.front();
    if (cmd != "run" && cmd != "bench") {
      r.fail(sp + "/run", fmt::format("\"{}\" is a `{}` measurement: solve takes run and bench", gs.run, cmd));
    }
    gs.param = r.string(sj, sp, "param", true);
    gs.from = r.string(sj, sp, "from", true);
    gs.to = r.string(sj, sp, "to", true);
    gs.cited = r.string(sj, sp, "cited", true);
    gs.sources = read_strings(r, sj, sp, "sources");
    if (!c.claimed || c.kind != Kind::check) r.fail(sp, "a solve needs a checked claim with a claimed value");
    c.solve = std::move(gs);
  }
  return c;
}

// A number as short text: 4.4, 362.4, 1960, 10000.
std::string num(double v) {
  if (std::fabs(v) >= 1e4) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string term_text(const Term& t) { return t.run + ":" + t.pointer; }

std::string formula(const Metric& m) {
  std::vector<std::string> num_t, den_t;
  for (const auto& t : m.numerator) num_t.push_back(term_text(t));
  for (const auto& t : m.denominator) den_t.push_back(term_text(t));
  std::string s = m.scale == 1 ? "" : num(m.scale) + " x ";
  s += fmt::format("{}", fmt::join(num_t, " x "));
  if (!den_t.empty()) s += fmt::format(" / ({})", fmt::join(den_t, " x "));
  return s;
}

const char* check_name(Check c) {
  switch (c) {
    case Check::equal:
      return "equal";
    case Check::at_most:
      return "at_most";
    case Check::at_least:
      return "at_least";
  }
  return "?";
}

}  // namespace

double Tolerance::of(double value) const { return relative * std::fabs(value) + absolute; }

Json Tolerance::to_json() const { return {{"relative", relative}, {"absolute", absolute}}; }

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass:
      return "pass";
    case Verdict::fail:
      return "fail";
    case Verdict::known_gap:
      return "known gap";
    case Verdict::projection:
      return "projection";
  }
  return "?";
}

ClaimsFile parse_claims(const Json& j, const std::string& path) {
  const Reader r(path);
  r.check_keys(
      j, "",
      {"format", "name", "description", "configs", "readings", "runs", "regression_tolerance",
       "claims"});
  if (!j.contains("format") || j["format"] != kFormat) {
    r.fail("/format",
           fmt::format("expected {}, got {}", kFormat, j.value("format", Json()).dump()));
  }
  ClaimsFile f;
  f.path = path;
  // Absolute, so that the measurements' command lines in the results can be run from anywhere.
  const fs::path parent = fs::path(path).parent_path();
  f.dir = fs::absolute(parent.empty() ? fs::path(".") : parent).lexically_normal().string();
  if (f.dir.size() > 1 && f.dir.back() == '/') f.dir.pop_back();
  f.name = r.string(j, "", "name", true);
  f.description = r.string(j, "", "description", false);
  if (!j.contains("configs") || !j["configs"].is_object() || j["configs"].empty()) {
    r.fail("/configs", "expected an object of configuration names and files");
  }
  for (const auto& [name, file] : j["configs"].items()) {
    f.configs[name] = r.string(j["configs"], "/configs", name, true);
  }
  if (j.contains("readings")) {
    if (!j["readings"].is_object()) r.fail("/readings", "expected an object of readings by name");
    for (const auto& [name, rj] : j["readings"].items()) {
      const std::string ptr = json_pointer_append("/readings", name);
      if (name == kPresetsReading) {
        r.fail(ptr, fmt::format("\"{}\" is the file's own configurations; name the reading otherwise",
                                kPresetsReading));
      }
      if (name.empty() || name.find(',') != std::string::npos) {
        r.fail(ptr, "expected a non-empty name without commas (--readings takes a comma list)");
      }
      r.check_keys(rj, ptr, {"description", "configs", "sources"});
      Reading rd;
      rd.name = name;
      rd.description = r.string(rj, ptr, "description", true);
      const std::string cp = ptr + "/configs";
      if (!rj.contains("configs") || !rj["configs"].is_object() || rj["configs"].empty()) {
        r.fail(cp, "expected an object of configuration names and the files that replace them");
      }
      for (const auto& [cname, file] : rj["configs"].items()) {
        if (!f.configs.contains(cname)) {
          r.fail(json_pointer_append(cp, cname), fmt::format("\"{}\" is not a name of /configs", cname));
        }
        rd.configs[cname] = r.string(rj["configs"], cp, cname, true);
        if (!fs::exists(fs::path(f.dir) / rd.configs[cname])) {
          r.fail(json_pointer_append(cp, cname),
                 fmt::format("{}: no such file (relative to the claims file)", rd.configs[cname]));
        }
      }
      rd.sources = read_strings(r, rj, ptr, "sources");
      f.readings.push_back(std::move(rd));
    }
  }
  if (!j.contains("runs") || !j["runs"].is_object() || j["runs"].empty()) {
    r.fail("/runs", "expected an object of measurements by name");
  }
  for (const auto& [name, run] : j["runs"].items()) {
    f.runs[name] = read_run(r, run, json_pointer_append("/runs", name), name, f.configs);
  }
  if (j.contains("regression_tolerance")) {
    f.regression = read_tolerance(r, j["regression_tolerance"], "/regression_tolerance");
  }
  if (!j.contains("claims") || !j["claims"].is_array() || j["claims"].empty() ||
      j["claims"].size() > kMaxClaims) {
    r.fail("/claims", fmt::format("expected an array of 1 to {} claims", kMaxClaims));
  }
  std::set<std::string> ids;
  for (std::size_t i = 0; i < j["claims"].size(); ++i) {
    const std::string ptr = fmt::format("/claims/{}", i);
    Claim c = read_claim(r, j["claims"][i], ptr, f);
    if (!ids.insert(c.id).second)
      r.fail(ptr + "/id", fmt::format("\"{}\" is the id of an earlier claim", c.id));
    f.claims.push_back(std::move(c));
  }
  return f;
}

ClaimsFile load_claims(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, kMaxConfigFileBytes);
  } catch (const InputError& e) {
    throw ClaimsError(e.what());
  }
  return parse_claims(config::parse_json<ClaimsError>(text, path), path);
}

std::vector<const Claim*> selected_claims(const ClaimsFile& f, bool quick) {
  std::vector<const Claim*> out;
  for (const auto& c : f.claims) {
    if (!quick || c.quick) out.push_back(&c);
  }
  return out;
}

std::vector<std::string> needed_runs(const ClaimsFile& f, bool quick) {
  std::set<std::string> names;
  for (const Claim* c : selected_claims(f, quick)) {
    for (const auto* side : {&c->metric.numerator, &c->metric.denominator}) {
      for (const auto& t : *side) names.insert(t.run);
    }
  }
  return {names.begin(), names.end()};
}

std::vector<std::string> run_args(const ClaimsFile& f, const Run& r, bool quick) {
  std::vector<std::string> out = quick && r.quick_args ? *r.quick_args : r.args;
  // A file relative to the claims file, or a preset by name (no slash, no .json, no such file
  // beside it), which every command the runs call takes as it is.
  const std::string& given = f.configs.at(r.config);
  const fs::path beside = fs::path(f.dir) / given;
  std::error_code ec;
  const bool preset = given.find('/') == std::string::npos && !given.ends_with(".json") && !fs::exists(beside, ec);
  const std::string config = preset ? given : beside.lexically_normal().string();
  for (auto& a : out) {
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"{config}", config}, {"{dir}", f.dir}}) {
      for (std::size_t at = a.find(key); at != std::string::npos;
           at = a.find(key, at + value.size())) {
        a.replace(at, key.size(), value);
      }
    }
  }
  return out;
}

std::vector<const Reading*> select_readings(const ClaimsFile& f, const std::string& spec) {
  std::vector<const Reading*> out;
  if (spec == "all") {
    for (const auto& r : f.readings) out.push_back(&r);
    return out;
  }
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t end = std::min(spec.find(',', start), spec.size());
    const std::string name = spec.substr(start, end - start);
    start = end + 1;
    if (name == kPresetsReading) continue;
    const auto it = std::find_if(f.readings.begin(), f.readings.end(),
                                 [&](const Reading& r) { return r.name == name; });
    if (it == f.readings.end()) {
      std::vector<std::string> names{kPresetsReading};
      for (const auto& r : f.readings) names.push_back(r.name);
      throw ClaimsError(fmt::format("--readings {}: \"{}\" is not a reading of {} (expected \"all\" or "
                                    "a comma list of {})",
                                    spec, name, f.path, fmt::join(names, ", ")));
    }
    if (std::find(out.begin(), out.end(), &*it) == out.end()) out.push_back(&*it);
  }
  return out;
}

ClaimsFile with_reading(const ClaimsFile& f, const Reading& r) {
  ClaimsFile g = f;
  for (const auto& [name, file] : r.configs) g.configs[name] = file;
  return g;
}

void add_readings(Json& results, const ClaimsFile& f, const std::vector<const Reading*>& readings,
                  const std::vector<Json>& per_reading) {
  Json rd = Json::array();
  rd.push_back({{"name", kPresetsReading},
                {"description", "the file's configurations"},
                {"configs", f.configs}});
  for (const Reading* r : readings) {
    rd.push_back({{"name", r->name}, {"description", r->description}, {"configs", r->configs},
                  {"sources", r->sources}});
  }
  Json matrix = Json::array();
  for (std::size_t i = 0; i < results["rows"].size(); ++i) {
    const Json& row = results["rows"][i];
    Json cells = Json::object();
    cells[kPresetsReading] = {{"measured", row["measured"]}, {"verdict", row["verdict"]}};
    for (std::size_t k = 0; k < readings.size(); ++k) {
      const Json& other = per_reading[k]["rows"][i];
      cells[readings[k]->name] = {{"measured", other["measured"]}, {"verdict", other["verdict"]}};
      if (other.contains("detail")) cells[readings[k]->name]["detail"] = other["detail"];
    }
    matrix.push_back({{"id", row["id"]}, {"unit", row["unit"]}, {"claimed", row["claimed"]},
                      {"cells", cells}});
  }
  Json runs = Json::object();
  for (std::size_t k = 0; k < readings.size(); ++k) runs[readings[k]->name] = per_reading[k]["runs"];
  results["readings"] = {{"readings", rd}, {"matrix", matrix}, {"runs", runs}};
}

Verdict judge(const Claim& c, double measured) {
  if (c.kind == Kind::projection) return Verdict::projection;
  const double claimed = c.claimed.value_or(0), band = c.tolerance.of(claimed);
  bool ok = false;
  switch (c.check) {
    case Check::equal:
      ok = std::fabs(measured - claimed) <= band;
      break;
    case Check::at_most:
      ok = measured <= claimed + band;
      break;
    case Check::at_least:
      ok = measured >= claimed - band;
      break;
  }
  if (ok) return Verdict::pass;
  return c.known_gap.empty() ? Verdict::fail : Verdict::known_gap;
}

namespace {

// The number at `pointer` of a measurement's output; ClaimsError naming the claim's pointer.
double number_at(const ClaimsFile& f, const Claim& c, const RunResult& run, const std::string& run_name,
                 const std::string& pointer) {
  Json found;
  if (run.output) {
    try {
      found = run.output->at(Json::json_pointer(pointer));
    } catch (const Json::exception&) {
    }
  }
  if (!found.is_number()) {
    throw ClaimsError(fmt::format("{}:{}/decomposition: measurement {} printed no number at {}", f.path,
                                  c.pointer, run_name, pointer));
  }
  return found.get<double>();
}

Json decompose(const ClaimsFile& f, const Claim& c, const std::map<std::string, RunResult>& runs) {
  const Decomposition& d = *c.decomposition;
  const double claimed = *c.claimed;
  const RunResult &b = runs.at(d.baseline_run), &k = runs.at(d.candidate_run);
  std::vector<std::pair<std::string, std::string>> parts = d.components;
  // The numbers of an `each` object, in either output (a component only one side has, such as
  // MXFP8 MACs, is 0 on the other).
  std::set<std::string> optional;
  if (!d.each.empty()) {
    std::set<std::string> names;
    for (const auto& [run, name] : {std::pair{&b, d.baseline_run}, {&k, d.candidate_run}}) {
      Json obj;
      try {
        obj = run->output->at(Json::json_pointer(d.each));
      } catch (const Json::exception&) {
      }
      if (!obj.is_object()) {
        throw ClaimsError(fmt::format("{}:{}/decomposition/each: measurement {} printed no object at {}", f.path,
                                      c.pointer, name, d.each));
      }
      for (const auto& [key, v] : obj.items()) {
        if (v.is_number()) names.insert(key);
      }
    }
    for (const auto& key : names) {
      parts.emplace_back(key, d.each + "/" + key);
      optional.insert(d.each + "/" + key);
    }
  }
  // Each side's multiplier (its chips, for chip-time), 1 without `per`.
  const double bper = d.per.empty() ? 1.0 : number_at(f, c, b, d.baseline_run, d.per);
  const double kper = d.per.empty() ? 1.0 : number_at(f, c, k, d.candidate_run, d.per);
  const auto value = [&](const RunResult& run, const std::string& name, const std::string& ptr) {
    const double m = &run == &b ? bper : kper;
    if (optional.contains(ptr)) {
      const Json::json_pointer jp(ptr);
      if (!run.output->contains(jp)) return 0.0;
    }
    return m * number_at(f, c, run, name, ptr);
  };
  const double bt = value(b, d.baseline_run, d.total);
  const double kt = value(k, d.candidate_run, d.total);
  const double shortfall = kt - bt / claimed;
  Json rows = Json::array();
  double bs = 0, ks = 0;
  const auto add = [&](const std::string& name, double bv, double kv) {
    const double excess = kv - bv / claimed;
    rows.push_back({{"name", name}, {"baseline", bv}, {"candidate", kv}, {"at_claim", bv / claimed},
                    {"excess", excess}, {"share_of_shortfall", shortfall != 0 ? excess / shortfall : 0.0}});
  };
  for (const auto& [name, ptr] : parts) {
    const double bv = value(b, d.baseline_run, ptr), kv = value(k, d.candidate_run, ptr);
    bs += bv;
    ks += kv;
    add(name, bv, kv);
  }
  // What the components leave out of the total (overheads the report does not split).
  if (std::fabs(bt - bs) > 1e-9 * std::fabs(bt) || std::fabs(kt - ks) > 1e-9 * std::fabs(kt)) {
    add("rest of the total", bt - bs, kt - ks);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Json& x, const Json& y) {
    return x["excess"].get<double>() > y["excess"].get<double>();
  });
  Json out{{"description", d.description},
          {"unit", d.unit},
          {"baseline_run", d.baseline_run},
          {"candidate_run", d.candidate_run},
          {"baseline_total", bt},
          {"candidate_total", kt},
          {"candidate_at_claim", bt / claimed},
          {"ratio_of_totals", kt != 0 ? bt / kt : 0.0},
          {"shortfall", shortfall},
          {"components", rows}};
  if (!d.per.empty()) out["per"] = {{"pointer", d.per}, {"baseline", bper}, {"candidate", kper}};
  return out;
}

}  // namespace

Json evaluate(const ClaimsFile& f, const std::map<std::string, RunResult>& runs, bool quick) {
  const Reader r(f.path);
  Json rows = Json::array();
  std::map<std::string, int> counts{{"pass", 0}, {"fail", 0}, {"known gap", 0}, {"projection", 0}};
  for (const Claim* c : selected_claims(f, quick)) {
    Json row{{"id", c->id},
             {"title", c->title},
             {"claim", c->statement},
             {"kind", c->kind == Kind::projection ? "projection" : "check"},
             {"baseline", c->baseline},
             {"candidate", c->candidate},
             {"check", check_name(c->check)},
             {"claimed", c->claimed ? Json(*c->claimed) : Json()},
             {"unit", c->metric.unit},
             {"metric", c->metric.description},
             {"formula", formula(c->metric)},
             {"sources", c->sources},
             {"regression_tolerance", c->regression.value_or(f.regression).to_json()},
             {"measured", nullptr},
             {"inputs", Json::array()}};
    if (c->kind == Kind::check) {
      row["tolerance"] = c->tolerance.to_json();
      row["band"] = c->tolerance.of(*c->claimed);
    }
    if (!c->known_gap.empty()) row["known_gap"] = c->known_gap;
    if (!c->note.empty()) row["note"] = c->note;
    double value = c->metric.scale;
    std::string error;
    for (const auto* side : {&c->metric.numerator, &c->metric.denominator}) {
      const bool over = side == &c->metric.denominator;
      for (std::size_t i = 0; i < side->size(); ++i) {
        const Term& t = (*side)[i];
        const RunResult& run = runs.at(t.run);
        if (!run.output) {
          error = fmt::format("measurement {} failed: {}", t.run, run.error);
          continue;
        }
        Json found;  // null when the output has nothing there
        try {
          found = run.output->at(Json::json_pointer(t.pointer));
        } catch (const Json::exception&) {
        }
        if (!found.is_number()) {
          r.fail(fmt::format("{}/metric/{}/{}/value", c->pointer,
                             over ? "denominator" : "numerator", i),
                 fmt::format("measurement {} (trnsim {}) printed no number at {} (got {})", t.run,
                             fmt::join(run.args, " "), t.pointer,
                             found.is_null() ? "null or nothing" : found.dump()));
        }
        const double x = found.get<double>();
        row["inputs"].push_back({{"run", t.run},
                                 {"value", t.pointer},
                                 {"number", x},
                                 {"side", over ? "denominator" : "numerator"}});
        value = over ? value / x : value * x;
      }
    }
    Verdict v = Verdict::fail;
    if (error.empty() && !std::isfinite(value))
      error = "the metric is not a finite number (a zero denominator)";
    if (error.empty()) {
      row["measured"] = value;
      v = judge(*c, value);
      if (v == Verdict::pass && !c->known_gap.empty()) {
        row["detail"] =
            "within tolerance: the known gap no longer applies; remove it from the claims file";
      }
    } else {
      row["detail"] = error;
    }
    if (c->decomposition && error.empty()) row["decomposition"] = decompose(f, *c, runs);
    row["verdict"] = verdict_name(v);
    ++counts[verdict_name(v)];
    rows.push_back(std::move(row));
  }
  Json run_j = Json::object();
  for (const auto& [name, run] : runs) {
    run_j[name] = {{"args", run.args}, {"wall_s", run.wall_s}};
    if (!run.output) run_j[name]["error"] = run.error;
  }
  return {{"kind", kResultsKind}, {"format", kFormat}, {"file", f.path}, {"name", f.name},
          {"quick", quick},       {"rows", rows},      {"runs", run_j},  {"summary", counts}};
}

void check_baseline(const Json& baseline, bool quick, const std::string& origin) {
  const Reader r(origin);
  if (!baseline.is_object() || baseline.value("kind", Json()) != kResultsKind ||
      !baseline.contains("rows") || !baseline["rows"].is_array()) {
    r.fail(
        "/kind",
        fmt::format("not a `trnsim claims` results file (expected \"kind\": \"{}\" and \"rows\")",
                    kResultsKind));
  }
  if (!baseline.contains("quick") || !baseline["quick"].is_boolean()) {
    r.fail("/quick", "expected true or false (whether the baseline was a --quick run)");
  }
  if (baseline["quick"].get<bool>() != quick) {
    const auto kind = [](bool q) { return q ? "a --quick run" : "a full run (without --quick)"; };
    r.fail("/quick", fmt::format("the baseline is {} and this one would be {}: their measurements "
                                 "differ, so compare like with like",
                                 kind(baseline["quick"].get<bool>()), kind(quick)));
  }
  for (std::size_t i = 0; i < baseline["rows"].size(); ++i) {
    const Json& row = baseline["rows"][i];
    if (!row.is_object() || !row.contains("id") || !row["id"].is_string() ||
        !row.contains("measured") || !(row["measured"].is_number() || row["measured"].is_null())) {
      r.fail(fmt::format("/rows/{}", i),
             "expected an object with \"id\" and \"measured\" (a number or null)");
    }
  }
}

bool compare_baseline(Json& results, const Json& baseline, const std::string& origin) {
  check_baseline(baseline, results["quick"].get<bool>(), origin);
  std::map<std::string, const Json*> old;
  for (const Json& row : baseline["rows"]) old[row["id"].get<std::string>()] = &row;
  Json cmp = Json::array();
  int regressed = 0;
  for (const Json& row : results["rows"]) {
    const std::string id = row["id"];
    Json e{{"id", id}, {"measured", row["measured"]}};
    const auto it = old.find(id);
    if (it == old.end()) {
      e["status"] = "new";
      cmp.push_back(std::move(e));
      continue;
    }
    const Json& before = (*it->second)["measured"];
    e["baseline"] = before;
    if (before.is_null()) {
      e["status"] = row["measured"].is_null() ? "same" : "new";
    } else if (row["measured"].is_null()) {
      e["status"] = "regressed";
      e["detail"] = "no value now";
    } else {
      const double b = before.get<double>(), m = row["measured"].get<double>();
      const Tolerance tol{row["regression_tolerance"]["relative"].get<double>(),
                          row["regression_tolerance"]["absolute"].get<double>()};
      e["allowed"] = tol.of(b);
      e["change"] = m - b;
      if (b != 0) e["change_relative"] = (m - b) / std::fabs(b);
      e["status"] = m == b ? "same" : std::fabs(m - b) <= tol.of(b) ? "within" : "regressed";
    }
    if (e["status"] == "regressed") ++regressed;
    cmp.push_back(std::move(e));
  }
  results["baseline"] = {{"file", origin}, {"rows", cmp}, {"regressed", regressed}};
  return regressed > 0;
}

void compare_full(Json& results, const Json& full, const std::string& origin) {
  const Reader r(origin);
  if (!results["quick"].get<bool>()) {
    throw ClaimsError(fmt::format("--full {}: compares a --quick run with a full one; this run is not --quick", origin));
  }
  if (!full.is_object() || full.value("kind", Json()) != kResultsKind || !full.contains("rows") ||
      !full["rows"].is_array()) {
    r.fail("/kind", fmt::format("not a `trnsim claims` results file (expected \"kind\": \"{}\" and \"rows\")",
                                kResultsKind));
  }
  if (full.value("quick", true) != false) {
    r.fail("/quick", "expected false: --full takes the results of a full run (without --quick)");
  }
  std::map<std::string, Json> by_id;
  for (std::size_t i = 0; i < full["rows"].size(); ++i) {
    const Json& row = full["rows"][i];
    if (!row.is_object() || !row.contains("id") || !row["id"].is_string() || !row.contains("measured") ||
        !(row["measured"].is_number() || row["measured"].is_null())) {
      r.fail(fmt::format("/rows/{}", i), "expected an object with \"id\" and \"measured\" (a number or null)");
    }
    by_id[row["id"].get<std::string>()] = row["measured"];
  }
  Json rows = Json::array();
  for (const Json& row : results["rows"]) {
    const auto it = by_id.find(row["id"].get<std::string>());
    if (it == by_id.end() || it->second.is_null() || row["measured"].is_null()) continue;
    const double q = row["measured"].get<double>(), f = it->second.get<double>();
    Json e{{"id", row["id"]}, {"quick", q}, {"full", f}};
    if (f != 0) e["quick_over_full"] = q / f - 1;
    rows.push_back(std::move(e));
  }
  results["full"] = {{"file", origin}, {"rows", rows}};
}

bool failed(const Json& results) {
  for (const Json& row : results["rows"]) {
    if (row["verdict"] == "fail") return true;
  }
  return results.contains("baseline") && results["baseline"]["regressed"].get<int>() > 0;
}

namespace {

std::string claimed_text(const Json& row) {
  const std::string u = row["unit"];
  if (row["claimed"].is_null()) return "-";
  const std::string v = num(row["claimed"].get<double>()) + " " + u;
  if (row["kind"] == "projection") return "target " + v;
  if (row["check"] == "at_most") return "<= " + v;
  if (row["check"] == "at_least") return ">= " + v;
  return v;
}

std::string tolerance_text(const Json& row) {
  if (!row.contains("tolerance")) return "-";
  const double rel = row["tolerance"]["relative"], abs = row["tolerance"]["absolute"];
  std::vector<std::string> parts;
  if (rel > 0) parts.push_back(fmt::format("{}%", num(100 * rel)));
  if (abs > 0) parts.push_back(num(abs) + " " + row["unit"].get<std::string>());
  if (parts.empty()) return "0";
  return "+-" + fmt::format("{}", fmt::join(parts, " + "));
}

std::string xml(const std::string& s) {
  std::string o;
  for (const char ch : s) {
    switch (ch) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\n':
        o += "&#10;";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t')
          o += ' ';
        else
          o += ch;
    }
  }
  return o;
}

std::string measured_text(const Json& row) {
  return row["measured"].is_null()
             ? std::string("-")
             : num(row["measured"].get<double>()) + " " + row["unit"].get<std::string>();
}

// A claim's cost side by side on baseline and candidate, the components by their excess over
// the claim.
std::string decomposition_text(const Json& row) {
  const Json& d = row["decomposition"];
  const std::string u = d["unit"];
  std::string out = fmt::format(
      "\n{} ({}): {}. Claimed {}: the candidate would need {} {}; it has {} {} (ratio of totals {}), "
      "{} {} {} the claim\n",
      row["id"].get<std::string>(), row["verdict"].get<std::string>(), d["description"].get<std::string>(),
      claimed_text(row), num(d["candidate_at_claim"].get<double>()), u, num(d["candidate_total"].get<double>()), u,
      num(d["ratio_of_totals"].get<double>()), num(std::fabs(d["shortfall"].get<double>())), u,
      d["shortfall"].get<double>() >= 0 ? "beyond" : "within");
  if (d.contains("per")) {
    out += fmt::format("  every value is the run's own times its {} ({} and {})\n", d["per"]["pointer"].get<std::string>(),
                       num(d["per"]["baseline"].get<double>()), num(d["per"]["candidate"].get<double>()));
  }
  out += fmt::format("  {:<34} {:>12} {:>12} {:>12} {:>12} {:>9}\n", "component", d["baseline_run"].get<std::string>(),
                     d["candidate_run"].get<std::string>(), "at claim", "excess", "share");
  for (const Json& c : d["components"]) {
    out += fmt::format("  {:<34} {:>12} {:>12} {:>12} {:>12} {:>8.0f}%\n", c["name"].get<std::string>(),
                       num(c["baseline"].get<double>()), num(c["candidate"].get<double>()),
                       num(c["at_claim"].get<double>()), num(c["excess"].get<double>()),
                       100 * c["share_of_shortfall"].get<double>());
  }
  return out;
}

// The value of the parameter that would close a gap, beside its cited range.
std::string solve_text(const Json& row) {
  const Json& s = row["solve"];
  std::string out = fmt::format("{}: solve {}: ", row["id"].get<std::string>(), s["param"].get<std::string>());
  if (s.contains("value")) {
    out += fmt::format("{} closes the gap (bracket {} .. {}{}); cited: {}", s["value"].get<std::string>(),
                       s["bracket"][0].get<std::string>(), s["bracket"][1].get<std::string>(),
                       s.value("converged", true) ? "" : ", not converged", s["cited"].get<std::string>());
  } else {
    out += fmt::format("no value in {} .. {} closes the gap ({}); cited: {}", s["from"].get<std::string>(),
                       s["to"].get<std::string>(), s["why"].get<std::string>(), s["cited"].get<std::string>());
  }
  return out;
}

// The matrix claim x reading: each cell the measured value and its verdict.
std::string readings_text(const Json& rd) {
  std::vector<std::string> names;
  for (const Json& r : rd["readings"]) names.push_back(r["name"]);
  std::string out = "\nreadings (claim x reading: measured, verdict; only the presets decide the exit code)\n";
  out += fmt::format("{:<34}", "claim");
  for (const auto& n : names) out += fmt::format(" {:>22}", n);
  out += "\n";
  for (const Json& m : rd["matrix"]) {
    out += fmt::format("{:<34}", m["id"].get<std::string>());
    for (const auto& n : names) {
      const Json& c = m["cells"][n];
      std::string v = c["verdict"];
      if (v == "known gap") v = "gap";
      if (v == "projection") v = "proj";
      if (v == "fail") v = "FAIL";
      const std::string meas = c["measured"].is_null() ? "-" : num(c["measured"].get<double>());
      out += fmt::format(" {:>22}", fmt::format("{} {}", meas, v));
    }
    out += "\n";
  }
  for (const Json& r : rd["readings"]) {
    if (r["name"] == kPresetsReading) continue;
    std::vector<std::string> cs;
    for (const auto& [k, v] : r["configs"].items()) cs.push_back(k + " = " + v.get<std::string>());
    out += fmt::format("  {}: {} ({})\n", r["name"].get<std::string>(), r["description"].get<std::string>(),
                       fmt::join(cs, "; "));
  }
  return out;
}

}  // namespace

std::string table_text(const Json& results) {
  std::string out = fmt::format("claims {}{}\n", results["name"].get<std::string>(),
                                results["quick"].get<bool>() ? " (--quick: the reduced set)" : "");
  out += fmt::format("{:<34} {:>18} {:>16} {:>14}  {}\n", "claim", "claimed", "measured",
                     "tolerance", "verdict");
  std::string notes;
  for (const Json& row : results["rows"]) {
    std::string verdict = row["verdict"];
    if (verdict == "projection") verdict = "PROJECTION";
    out += fmt::format("{:<34} {:>18} {:>16} {:>14}  {}\n", row["id"].get<std::string>(),
                       claimed_text(row), measured_text(row), tolerance_text(row), verdict);
    if (row.contains("known_gap") && row["verdict"] == "known gap") {
      notes += fmt::format("  {}: known gap: {}\n", row["id"].get<std::string>(),
                           row["known_gap"].get<std::string>());
    }
    if (row.contains("detail"))
      notes +=
          fmt::format("  {}: {}\n", row["id"].get<std::string>(), row["detail"].get<std::string>());
    if (row["verdict"] == "projection") {
      notes += fmt::format("  {}: projection, not a check: {}\n", row["id"].get<std::string>(),
                           row.value("note", row["metric"].get<std::string>()));
    }
  }
  out += notes;
  for (const Json& row : results["rows"]) {
    if (row.contains("decomposition")) out += decomposition_text(row);
    if (row.contains("solve")) out += "  " + solve_text(row) + "\n";
  }
  const Json& s = results["summary"];
  out += fmt::format("{} pass, {} fail, {} known gap, {} projection\n", s["pass"].get<int>(),
                     s["fail"].get<int>(), s["known gap"].get<int>(), s["projection"].get<int>());
  if (results.contains("baseline")) {
    const Json& b = results["baseline"];
    for (const Json& e : b["rows"]) {
      if (e["status"] != "regressed" && e["status"] != "new") continue;
      out += fmt::format("  baseline {}: {} (was {}, now {}{})\n", e["id"].get<std::string>(),
                         e["status"].get<std::string>(), e.value("baseline", Json()).dump(),
                         e["measured"].dump(),
                         e.contains("allowed")
                             ? fmt::format(", allowed change {}", num(e["allowed"].get<double>()))
                             : "");
    }
    out += fmt::format("against {}: {} of {} metrics moved beyond their tolerance\n",
                       b["file"].get<std::string>(), b["regressed"].get<int>(), b["rows"].size());
  }
  if (results.contains("full")) {
    const Json& fr = results["full"];
    out += fmt::format("\nthis --quick run against the full one ({})\n", fr["file"].get<std::string>());
    out += fmt::format("  {:<40} {:>12} {:>12} {:>10}\n", "claim", "quick", "full", "quick/full");
    for (const Json& e : fr["rows"]) {
      if (e["quick"] == e["full"]) continue;  // measurements that --quick does not cut
      out += fmt::format("  {:<40} {:>12} {:>12} {:>+9.1f}%\n", e["id"].get<std::string>(),
                         num(e["quick"].get<double>()), num(e["full"].get<double>()),
                         100 * e.value("quick_over_full", 0.0));
    }
  }
  if (results.contains("readings")) out += readings_text(results["readings"]);
  if (results.contains("wall_s"))
    out += fmt::format("wall time {:.1f} s\n", results["wall_s"].get<double>());
  return out;
}

std::string junit_xml(const Json& results) {
  const std::string name = results["name"];
  std::string cases;
  int tests = 0, failures = 0, skipped = 0;
  for (const Json& row : results["rows"]) {
    ++tests;
    const std::string v = row["verdict"];
    const std::string summary = fmt::format(
        "{}: claimed {}, measured {}, tolerance {}; metric: {}; formula: {}",
        row["claim"].get<std::string>(), claimed_text(row), measured_text(row), tolerance_text(row),
        row["metric"].get<std::string>(), row["formula"].get<std::string>());
    cases += fmt::format("    <testcase classname=\"claims.{}\" name=\"{}\" time=\"0\">\n",
                         xml(name), xml(row["id"].get<std::string>()));
    if (v == "fail") {
      ++failures;
      cases +=
          fmt::format("      <failure type=\"claim\" message=\"{}\"/>\n",
                      xml(row.contains("detail") ? row["detail"].get<std::string>() : summary));
    } else if (v == "known gap") {
      ++skipped;
      cases += fmt::format("      <skipped message=\"known gap: {}\"/>\n",
                           xml(row["known_gap"].get<std::string>()));
    } else if (v == "projection") {
      ++skipped;
      cases += fmt::format("      <skipped message=\"projection, not a check: measured {}\"/>\n",
                           xml(measured_text(row)));
    }
    cases += fmt::format("      <system-out>{}</system-out>\n    </testcase>\n", xml(summary));
  }
  if (results.contains("readings")) {
    // Each other reading's verdicts, reported as skipped cases: the known gaps are the presets'.
    for (const Json& m : results["readings"]["matrix"]) {
      for (const auto& [reading, c] : m["cells"].items()) {
        if (reading == kPresetsReading) continue;
        ++tests;
        ++skipped;
        const std::string meas = c["measured"].is_null() ? "-" : num(c["measured"].get<double>());
        cases += fmt::format(
            "    <testcase classname=\"claims.{}.reading.{}\" name=\"{}\" time=\"0\">\n"
            "      <skipped message=\"reading {}: measured {} {}, verdict {}\"/>\n    </testcase>\n",
            xml(name), xml(reading), xml(m["id"].get<std::string>()), xml(reading), xml(meas),
            xml(m["unit"].get<std::string>()), xml(c["verdict"].get<std::string>()));
      }
    }
  }
  if (results.contains("baseline")) {
    for (const Json& e : results["baseline"]["rows"]) {
      ++tests;
      cases +=
          fmt::format("    <testcase classname=\"claims.{}.baseline\" name=\"{}\" time=\"0\">\n",
                      xml(name), xml(e["id"].get<std::string>()));
      if (e["status"] == "regressed") {
        ++failures;
        cases += fmt::format("      <failure type=\"regression\" message=\"was {}, now {}\"/>\n",
                             xml(e.value("baseline", Json()).dump()), xml(e["measured"].dump()));
      }
      cases += "    </testcase>\n";
    }
  }
  const double wall = results.value("wall_s", 0.0);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"trnsim claims\" tests=\"{0}\" failures=\"{1}\" skipped=\"{2}\" "
      "time=\"{3:.3f}\">\n"
      "  <testsuite name=\"{4}\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{2}\" "
      "time=\"{3:.3f}\">\n"
      "{5}  </testsuite>\n</testsuites>\n",
      tests, failures, skipped, wall, xml(name), cases);
}

}  // namespace trnsim::claims
