// SPDX-License-Identifier: MIT
// Sweep files: parsing (every problem names the file and JSON pointer), expansion into points,
// validation through the config loader, and sharding.
#include "trnsim/sweep/sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "files.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/config/file_reader.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/sweep/filter.hpp"
#include "trnsim/sweep/metrics.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::sweep {

namespace fs = std::filesystem;

bool Axis::is_seed() const {
  return path == kSeedPath || path == "/sim/seed" || path == kServeSeedPath || path == "/arrivals/seed";
}

int Sweep::seed_axis() const {
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i].is_seed()) return int(i);
  }
  return -1;
}

namespace {

// Upper bound on the points of one sweep: a typo such as "step": 0.001 must not expand into
// millions of runs.
constexpr std::size_t kMaxPoints = 100000;

using Reader = config::FileReader<SweepError>;

// A number as the shortest text that reads back the same: 128, 0.5, 1e-05.
std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", std::int64_t(v));
  return fmt::format("{}", v);
}

// A generated number as a sweep value: with a unit it becomes "<number><unit>" for --set.
Json generated(double v, const std::string& unit, bool integers) {
  if (unit.empty()) return integers ? Json(std::int64_t(std::llround(v))) : Json(v);
  return number_text(v) + unit;
}

// Rounds to `digits` significant digits, so that sampled values stay readable and reproducible
// in decimal text.
double significant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits - 1 - int(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}

std::vector<Json> read_range(const Reader& r, const Json& range, const std::string& ptr,
                             const std::string& unit) {
  r.check_keys(range, ptr, {"from", "to", "step", "count", "scale"});
  const double from = r.number(range, ptr, "from"), to = r.number(range, ptr, "to");
  const std::string scale = range.value("scale", std::string("linear"));
  if (scale != "linear" && scale != "log") {
    r.fail(ptr + "/scale", fmt::format("expected \"linear\" or \"log\", got {}", range["scale"].dump()));
  }
  const bool has_step = range.contains("step"), has_count = range.contains("count");
  if (has_step == has_count) r.fail(ptr, "expected exactly one of \"step\" and \"count\"");
  std::vector<double> xs;
  if (has_step) {
    if (scale == "log") r.fail(ptr + "/scale", "a log range takes \"count\", not \"step\"");
    const double step = r.number(range, ptr, "step");
    if (step <= 0) r.fail(ptr + "/step", fmt::format("expected a number > 0, got {}", step));
    if (to < from) r.fail(ptr + "/to", fmt::format("expected to >= from ({}), got {}", from, to));
    const double n = std::floor((to - from) / step * (1 + 1e-12)) + 1;
    if (n > double(kMaxPoints)) {
      r.fail(ptr + "/step", fmt::format("gives {} values; at most {} are allowed", n, kMaxPoints));
    }
    // from + i*step (not repeated addition), so 0.1 steps do not drift.
    for (std::size_t i = 0; i < std::size_t(n); ++i) xs.push_back(from + double(i) * step);
  } else {
    const std::size_t n = r.count(range, ptr, "count", kMaxPoints);
    if (scale == "log" && (from <= 0 || to <= 0)) r.fail(ptr, "a log range needs from > 0 and to > 0");
    for (std::size_t i = 0; i < n; ++i) {
      const double f = n == 1 ? 0.0 : double(i) / double(n - 1);
      xs.push_back(scale == "log" ? significant(from * std::pow(to / from, f), 12)
                                  : significant(from + (to - from) * f, 12));
    }
  }
  const bool integers = std::all_of(xs.begin(), xs.end(), [](double x) { return x == std::floor(x); }) &&
                        (!has_step || range["step"].is_number_integer());
  std::vector<Json> out;
  for (double x : xs) out.push_back(generated(x, unit, integers));
  return out;
}

// Uniform in [0, 1) from the top 53 bits: the same on every standard library (unlike
// std::uniform_real_distribution, whose algorithm is unspecified).
double unit_uniform(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

std::vector<Json> read_samples(const Reader& r, const Json& s, const std::string& ptr,
                               const std::string& unit) {
  r.check_keys(s, ptr, {"distribution", "min", "max", "mean", "stddev", "count", "seed",
                        "integer", "digits"});
  const std::string dist = r.string(s, ptr, "distribution", true);
  const std::size_t n = r.count(s, ptr, "count", kMaxPoints);
  if (!s.contains("seed") || !s["seed"].is_number_unsigned()) {
    r.fail(ptr + "/seed", "missing: expected an integer >= 0 (samples are reproducible)");
  }
  std::mt19937_64 rng(s["seed"].get<std::uint64_t>());
  const bool integer = s.value("integer", false);
  int digits = 4;
  if (s.contains("digits")) {
    if (!s["digits"].is_number_integer() || s["digits"].get<int>() < 1 || s["digits"].get<int>() > 17) {
      r.fail(ptr + "/digits", fmt::format("expected an integer from 1 to 17, got {}", s["digits"].dump()));
    }
    digits = s["digits"].get<int>();
  }
  std::vector<double> xs;
  if (dist == "uniform" || dist == "log_uniform") {
    const double lo = r.number(s, ptr, "min"), hi = r.number(s, ptr, "max");
    if (hi < lo) r.fail(ptr + "/max", fmt::format("expected max >= min ({}), got {}", lo, hi));
    if (dist == "log_uniform" && lo <= 0) r.fail(ptr + "/min", "log_uniform needs min > 0");
    for (std::size_t i = 0; i < n; ++i) {
      const double u = unit_uniform(rng);
      xs.push_back(dist == "uniform" ? lo + (hi - lo) * u : lo * std::pow(hi / lo, u));
    }
  } else if (dist == "normal") {
    const double mean = r.number(s, ptr, "mean"), sd = r.number(s, ptr, "stddev");
    if (sd < 0) r.fail(ptr + "/stddev", "expected a number >= 0");
    for (std::size_t i = 0; i < n; ++i) {
      // Box-Muller, spelled out for the same reason as unit_uniform.
      const double u1 = 1.0 - unit_uniform(rng), u2 = unit_uniform(rng);
      xs.push_back(mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
    }
  } else {
    r.fail(ptr + "/distribution",
           fmt::format("expected \"uniform\", \"log_uniform\" or \"normal\", got \"{}\"", dist));
  }
  std::vector<Json> out;
  for (double x : xs) out.push_back(generated(integer ? std::round(x) : significant(x, digits), unit, integer));
  return out;
}

Axis read_axis(const Reader& r, const Json& a, const std::string& ptr) {
  r.check_keys(a, ptr, {"path", "name", "values", "range", "samples", "unit"});
  Axis axis;
  axis.pointer = ptr;
  axis.path = r.string(a, ptr, "path", true);
  if (axis.path.find('=') != std::string::npos) {
    r.fail(ptr + "/path", fmt::format("\"{}\": expected a path without \"=\" (the values are "
                                      "the axis's values)", axis.path));
  }
  std::string last = axis.path.substr(axis.path.find_last_of("./") == std::string::npos
                                          ? 0
                                          : axis.path.find_last_of("./") + 1);
  axis.name = a.contains("name") ? r.string(a, ptr, "name", true) : last;
  for (char c : axis.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      r.fail(ptr + (a.contains("name") ? "/name" : "/path"),
             fmt::format("axis name \"{}\": expected letters, digits and \"_\" (set \"name\")",
                         axis.name));
    }
  }
  const std::string unit = a.contains("unit") ? r.string(a, ptr, "unit", true) : "";
  const int forms = int(a.contains("values")) + int(a.contains("range")) + int(a.contains("samples"));
  if (forms != 1) r.fail(ptr, "expected exactly one of \"values\", \"range\" and \"samples\"");
  if (a.contains("values")) {
    const Json& v = a["values"];
    if (!v.is_array() || v.empty()) r.fail(ptr + "/values", "expected a non-empty array");
    if (a.contains("unit")) r.fail(ptr + "/unit", "\"unit\" applies to \"range\" and \"samples\"; write units into the values");
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_object() || v[i].is_null()) {
        r.fail(fmt::format("{}/values/{}", ptr, i),
               fmt::format("expected a number, string, boolean or array, got {}", v[i].dump()));
      }
      axis.values.push_back(v[i]);
    }
  } else if (a.contains("range")) {
    axis.values = read_range(r, a["range"], ptr + "/range", unit);
  } else {
    axis.values = read_samples(r, a["samples"], ptr + "/samples", unit);
  }
  return axis;
}

std::string absolute_from(const std::string& base_dir, const std::string& p) {
  if (p.empty()) return p;
  const fs::path path(p);
  return (path.is_absolute() ? path : fs::path(base_dir) / path).lexically_normal().string();
}

}  // namespace

Sweep parse_sweep(const std::string& text, const std::string& origin, const std::string& base_dir,
                  const Overrides& ov) {
  const Json j = config::parse_json<SweepError>(text, origin);
  const Reader r(origin);
  r.check_keys(j, "", {"name", "description", "command", "serving", "config", "trace", "set", "combine",
                       "axes", "filter", "run_files"});
  Sweep s;
  const std::string command = j.contains("command") ? r.string(j, "", "command", true) : "run";
  if (command != "run" && command != "serve") {
    r.fail("/command", fmt::format("expected \"run\" (the default: training steps) or \"serve\" (serving "
                                   "runs of the spec in \"serving\"), got \"{}\"", command));
  }
  const bool serving = command == "serve";
  if (serving && !j.contains("serving")) {
    r.fail("/serving", "missing: \"command\": \"serve\" needs a serving spec (a file or a name under "
                       "configs/serving/)");
  }
  if (!serving && j.contains("serving")) {
    r.fail("/serving", "a serving spec needs \"command\": \"serve\" (training points run `trnsim run`)");
  }
  if (serving) {
    for (const char* k : {"trace", "run_files"}) {
      if (j.contains(k)) {
        r.fail(std::string("/") + k, fmt::format("a serving sweep takes no \"{}\" (its points run `trnsim "
                                                 "serve`, whose spec names the requests, and keep "
                                                 "what `serve --out` writes)", k));
      }
    }
  }
  s.file = origin;
  s.name = r.string(j, "", "name", true);
  s.description = r.string(j, "", "description", false);
  // A path relative to the sweep file, or a preset or bundled trace by name.
  const auto file_or_name = [&](const char* key, bool required,
                                const std::function<std::string(const std::string&)>& by_name) {
    const std::string given = r.string(j, "", key, required);
    const std::string path = absolute_from(base_dir, given);
    std::error_code ec;
    if (!by_name || given.empty() || given.find('/') != std::string::npos || fs::exists(path, ec) ||
        fs::exists(path + ".0.et", ec) || fs::exists(path + ".0.json", ec)) {
      return path;
    }
    std::string found;
    try {
      found = by_name(given);
    } catch (const InputError& e) {
      r.fail(std::string("/") + key, e.what());
    }
    return found == given ? path : fs::absolute(found).lexically_normal().string();
  };
  if (serving) s.serving = file_or_name("serving", true, ov.serving_by_name);
  if (serving && !ov.trace.empty()) {
    throw SweepError(fmt::format("--trace {}: {} is a serving sweep; its spec names the requests", ov.trace, origin));
  }
  // A serving sweep's "config" is its rack, optional (the spec names one).
  s.config = ov.config.empty() ? file_or_name("config", !serving, ov.config_by_name)
                               : fs::absolute(ov.config).lexically_normal().string();
  s.trace = ov.trace.empty() ? file_or_name("trace", false, ov.trace_by_name)
                             : fs::absolute(ov.trace).lexically_normal().string();
  if (j.contains("set")) {
    if (!j["set"].is_array()) r.fail("/set", "expected an array of \"path=value\" strings");
    for (std::size_t i = 0; i < j["set"].size(); ++i) {
      if (!j["set"][i].is_string()) r.fail(fmt::format("/set/{}", i), "expected a \"path=value\" string");
      s.sets.push_back(j["set"][i].get<std::string>());
    }
  }
  for (const auto& x : ov.sets) s.sets.push_back(x);
  if (j.contains("combine")) {
    const Json& c = j["combine"];
    if (c == "grid") s.combine = Sweep::Combine::grid;
    else if (c == "zip") s.combine = Sweep::Combine::zip;
    else r.fail("/combine", fmt::format("expected \"grid\" or \"zip\", got {}", c.dump()));
  }
  if (!j.contains("axes") || !j["axes"].is_array() || j["axes"].empty()) {
    r.fail("/axes", "expected a non-empty array of axes");
  }
  std::set<std::string> names, paths;
  for (std::size_t i = 0; i < j["axes"].size(); ++i) {
    Axis a = read_axis(r, j["axes"][i], fmt::format("/axes/{}", i));
    if (!names.insert(a.name).second) {
      r.fail(a.pointer, fmt::format("a second axis named \"{}\": give one a \"name\"", a.name));
    }
    if (!paths.insert(a.path).second) r.fail(a.pointer + "/path", fmt::format("a second axis on \"{}\"", a.path));
    s.axes.push_back(std::move(a));
  }
  if (s.combine == Sweep::Combine::zip) {
    const Axis* first = nullptr;
    for (const auto& a : s.axes) {
      if (a.is_seed()) continue;  // seeds cross the zipped points (docs/sweeps.md)
      if (first && a.values.size() != first->values.size()) {
        r.fail(a.pointer, fmt::format("zip needs axes of equal length: {} has {} values, {} has {}",
                                      a.name, a.values.size(), first->name, first->values.size()));
      }
      if (!first) first = &a;
    }
  }
  if (j.contains("filter")) {
    s.filter = r.string(j, "", "filter", true);
    std::vector<std::string> ns;
    for (const auto& a : s.axes) ns.push_back(a.name);
    Filter f(s.filter, ns, origin + ":/filter");  // parse errors now, not at expansion
  }
  // "all", or a list of run files that holds at least what merge and compare read.
  s.run_files.assign(kDefaultRunFiles.begin(), kDefaultRunFiles.end());
  if (j.contains("run_files")) {
    const Json& f = j["run_files"];
    const std::string expected = fmt::format("expected \"all\" or a list of some of {}, with {} and {}",
                                             fmt::join(kRunFiles, ", "), kReportFile, kConfigFile);
    if (f.is_string() && f.get<std::string>() == "all") {
      s.run_files.assign(kRunFiles.begin(), kRunFiles.end());
    } else if (f.is_array()) {
      s.run_files.clear();
      for (std::size_t i = 0; i < f.size(); ++i) {
        if (!f[i].is_string() ||
            std::find(kRunFiles.begin(), kRunFiles.end(), f[i].get<std::string>()) == kRunFiles.end()) {
          r.fail(fmt::format("/run_files/{}", i), fmt::format("{} is not a file a run writes; {}", f[i].dump(), expected));
        }
        s.run_files.push_back(f[i].get<std::string>());
      }
      for (const std::string_view need : {kReportFile, kConfigFile}) {
        if (std::find(s.run_files.begin(), s.run_files.end(), need) == s.run_files.end()) {
          r.fail("/run_files", fmt::format("{} is missing (the sweep's figures and `compare` read it); {}", need, expected));
        }
      }
    } else {
      r.fail("/run_files", fmt::format("got {}; {}", f.dump(), expected));
    }
  }
  return s;
}

Sweep load_sweep(const std::string& file, const Overrides& overrides) {
  return parse_sweep(detail::read_text(file), file, fs::absolute(file).parent_path().string(),
                     overrides);
}

std::vector<Point> expand(const Sweep& s) {
  // Each combination as value indices per axis, last axis fastest.
  std::vector<std::vector<std::size_t>> combos;
  const int seed = s.seed_axis();
  double total = 1;
  for (const auto& a : s.axes) total *= double(a.values.size());
  if (s.combine == Sweep::Combine::grid) {
    if (total > double(kMaxPoints)) {
      throw SweepError(fmt::format("{}:/axes: the grid has {} points; at most {} are allowed",
                                   s.file, total, kMaxPoints));
    }
    std::vector<std::size_t> idx(s.axes.size(), 0);
    for (std::size_t n = 0; n < std::size_t(total); ++n) {
      combos.push_back(idx);
      for (std::size_t k = s.axes.size(); k-- > 0;) {
        if (++idx[k] < s.axes[k].values.size()) break;
        idx[k] = 0;
      }
    }
  } else {
    std::size_t len = 0, seeds = 1;
    for (std::size_t k = 0; k < s.axes.size(); ++k) {
      if (int(k) == seed) seeds = s.axes[k].values.size();
      else len = s.axes[k].values.size();
    }
    if (len == 0) len = 1;  // only a seed axis
    if (double(len) * double(seeds) > double(kMaxPoints)) {
      throw SweepError(fmt::format("{}:/axes: the zip has {} points; at most {} are allowed", s.file,
                                   double(len) * double(seeds), kMaxPoints));
    }
    for (std::size_t i = 0; i < len; ++i) {
      for (std::size_t r = 0; r < seeds; ++r) {
        std::vector<std::size_t> idx(s.axes.size(), i);
        if (seed >= 0) idx[std::size_t(seed)] = r;
        combos.push_back(idx);
      }
    }
  }
  std::optional<Filter> filter;
  std::vector<std::string> names;
  for (const auto& a : s.axes) names.push_back(a.name);
  if (!s.filter.empty()) filter.emplace(s.filter, names, s.file + ":/filter");
  std::vector<Point> out;
  for (const auto& idx : combos) {
    Point p;
    std::map<std::string, Json> vars;
    for (std::size_t k = 0; k < s.axes.size(); ++k) {
      p.values.push_back(s.axes[k].values[idx[k]]);
      vars[s.axes[k].name] = p.values.back();
    }
    if (filter && !filter->keeps(vars)) continue;
    p.index = out.size();
    p.id = fmt::format("p{:04}", p.index);
    out.push_back(std::move(p));
  }
  if (out.empty()) throw SweepError(fmt::format("{}:/filter: keeps no point", s.file));
  return out;
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::vector<std::string> point_sets(const Sweep& s, const Point& p) {
  std::vector<std::string> out = s.sets;
  for (std::size_t k = 0; k < s.axes.size(); ++k) {
    out.push_back(s.axes[k].path + "=" + value_text(p.values[k]));
  }
  return out;
}

namespace {

}  // namespace

void check_config(const config::LoadedConfig& loaded) {
  resolve::plan(loaded, resolve::Purpose::config);
}

ServeArgs serve_args(const std::string& rack, const std::vector<std::string>& sets) {
  ServeArgs a;
  a.rack = rack;
  for (const auto& x : sets) {
    const std::size_t eq = x.find('=');
    const std::string key = x.substr(0, eq), value = eq == std::string::npos ? "" : x.substr(eq + 1);
    if (key == "rack" || key == "/rack") {
      a.rack = value;
    } else if (key.starts_with("rack.")) {
      a.rack_sets.push_back(x.substr(5));
    } else if (key.starts_with("/rack/")) {
      a.rack_sets.push_back(x.substr(5));
    } else {
      a.spec_sets.push_back(x);
    }
  }
  return a;
}

namespace {

// The base, then each axis value alone (so that a bad path is named as such, not as some point),
// then every point: `check` throws InputError for a set of `--set`s that does not load. `base`
// names what the base is, `what` what a point must be ("a valid config").
void validate_sets(const Sweep& s, const std::vector<Point>& points,
                   const std::function<void(const std::vector<std::string>&)>& check,
                   const char* base, const char* what) {
  try {
    check(s.sets);
  } catch (const InputError& e) {
    throw SweepError(fmt::format("{}: the {} does not load: {}", s.file, base, e.what()));
  }
  for (const auto& a : s.axes) {
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      std::vector<std::string> sets = s.sets;
      sets.push_back(a.path + "=" + value_text(a.values[i]));
      try {
        check(sets);
      } catch (const InputError& e) {
        throw SweepError(fmt::format("{}:{}: axis \"{}\" (path {}), value {}: {}", s.file,
                                     a.pointer, a.name, a.path, value_text(a.values[i]), e.what()));
      }
    }
  }
  for (const auto& p : points) {
    try {
      check(point_sets(s, p));
    } catch (const InputError& e) {
      std::vector<std::string> vs;
      for (std::size_t k = 0; k < s.axes.size(); ++k) {
        vs.push_back(s.axes[k].name + "=" + value_text(p.values[k]));
      }
      throw SweepError(fmt::format("{}: point {} ({}) is not {} (exclude it with a \"filter\"): {}",
                                   s.file, p.id, fmt::join(vs, ", "), what, e.what()));
    }
  }
}

}  // namespace

void validate_serve(const Sweep& s, const std::vector<Point>& points, const ServeCheck& check) {
  validate_sets(
      s, points, [&](const std::vector<std::string>& sets) { check(s.serving, serve_args(s.config, sets)); },
      "base (\"serving\", \"config\" and \"set\")", "a valid serving run");
}

void validate(const Sweep& s, const std::vector<Point>& points, const ConfigCheck& check) {
  // Each config as `trnsim config` checks it: what that accepts, each point's `trnsim run` does.
  validate_sets(
      s, points, [&](const std::vector<std::string>& sets) { check(config::load_config(s.config, sets)); },
      "base config (\"config\" and \"set\")", "a valid config");
}

Shard parse_shard(const std::string& text) {
  Shard sh;
  char slash = 0;
  std::istringstream in(text);
  if (!(in >> sh.index >> slash >> sh.count) || slash != '/' || !in.eof() || sh.count < 1 ||
      sh.index < 1 || sh.index > sh.count) {
    throw SweepError(fmt::format("--shard {}: expected I/N with 1 <= I <= N, such as 2/8", text));
  }
  return sh;
}

std::vector<Point> shard_points(const std::vector<Point>& points, Shard shard) {
  std::vector<Point> out;
  for (const auto& p : points) {
    if (int(p.index % std::size_t(shard.count)) + 1 == shard.index) out.push_back(p);
  }
  return out;
}

}  // namespace trnsim::sweep
