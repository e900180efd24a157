// SPDX-License-Identifier: MIT
#include "trnsim/sweep/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "files.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/sweep/merge.hpp"
#include "trnsim/sweep/metrics.hpp"
#include "trnsim/sweep/runner.hpp"

namespace trnsim::sweep {

namespace fs = std::filesystem;
using detail::read_json;

namespace {

enum class Kind { run, sweep };

Kind kind_of(const std::string& dir) {
  if (fs::exists(dir + "/plan.json")) return Kind::sweep;
  if (fs::exists(dir + "/" + std::string(kReportFile))) return Kind::run;
  throw SweepError(fmt::format("{}: neither a run directory (no {}) nor a sweep directory (no "
                               "plan.json)",
                               dir, kReportFile));
}

// Leaves of a JSON tree by pointer; arrays of scalars count as one leaf.
void flatten(const Json& j, const std::string& ptr, std::map<std::string, Json>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, config::json_pointer_append(ptr, k), out);
  } else if (j.is_array() && std::any_of(j.begin(), j.end(), [](const Json& e) { return e.is_structured(); })) {
    for (std::size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}/{}", ptr, i), out);
  } else {
    out[ptr] = j;
  }
}

Json config_differences(const Json& a, const Json& b) {
  std::map<std::string, Json> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::map<std::string, std::pair<Json, Json>> both;
  for (const auto& [k, v] : fa) both[k].first = v;
  for (const auto& [k, v] : fb) both[k].second = v;
  Json out = Json::array();
  for (const auto& [k, v] : both) {
    if (fa.count(k) && fb.count(k) && v.first == v.second) continue;
    out.push_back({{"pointer", k}, {"a", fa.count(k) ? v.first : Json("(absent)")},
                   {"b", fb.count(k) ? v.second : Json("(absent)")}});
  }
  return out;
}

Json row(const std::string& metric, const std::string& unit, const Json& a, const Json& b) {
  Json r{{"metric", metric}, {"unit", unit}, {"a", a}, {"b", b}, {"diff", nullptr}, {"ratio", nullptr}};
  if (a.is_number() && b.is_number()) {
    r["diff"] = b.get<double>() - a.get<double>();
    if (a.get<double>() != 0) r["ratio"] = b.get<double>() / a.get<double>();
  }
  return r;
}

// The rows of two runs' "figures" (report.json, figures.hpp in the report layer): one per figure
// of A, in A's order, then those only B has. A figure one run's tier does not have is null there
// with "only_at" (the tier that has it), which the row keeps as that side's note.
Json compare_figure_rows(const Json& fa, const Json& fb) {
  std::map<std::string, const Json*> in_b;
  for (const auto& f : fb) in_b[f["name"].get<std::string>()] = &f;
  std::vector<std::string> names;
  std::map<std::string, std::pair<const Json*, const Json*>> both;
  for (const auto& f : fa) {
    const std::string n = f["name"].get<std::string>();
    names.push_back(n);
    both[n].first = &f;
  }
  for (const auto& f : fb) {
    const std::string n = f["name"].get<std::string>();
    if (!both.count(n)) names.push_back(n);
    both[n].second = &f;
  }
  Json rows = Json::array();
  for (const auto& n : names) {
    const auto [x, y] = both[n];
    const Json none;
    const Json& va = x ? (*x)["value"] : none;
    const Json& vb = y ? (*y)["value"] : none;
    const Json& any = x ? *x : *y;
    Json r = row(n, any.value("unit", std::string()), va.is_number() ? va : Json(),
                 vb.is_number() ? vb : Json());
    const auto note = [](const Json* f) -> Json {
      if (!f) return "(absent)";
      if (!(*f)["value"].is_null() || !f->contains("only_at")) return Json();
      return fmt::format("\u2014 ({} tier only)", (*f)["only_at"].get<std::string>());
    };
    if (const Json na = note(x); !na.is_null()) r["a_note"] = na;
    if (const Json nb = note(y); !nb.is_null()) r["b_note"] = nb;
    rows.push_back(std::move(r));
  }
  return rows;
}

// A sweep's axes as config-like keys, so that two sweeps over different values show them.
Json axes_json(const Plan& p) {
  Json j = Json::object();
  for (std::size_t k = 0; k < p.axis_names.size(); ++k) {
    Json values = Json::array();
    for (const auto& pt : p.points) {
      if (std::find(values.begin(), values.end(), pt.values[k]) == values.end()) values.push_back(pt.values[k]);
    }
    j[p.axis_paths[k]] = values;
  }
  return j;
}

// A number as people read it: six significant digits without an exponent, thousands grouped
// (3,009,610,000 rather than 3.00961e+09); an exponent only beyond 10^15 or below 10^-4.
std::string readable(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (!std::isfinite(v) || a >= 1e15 || a < 1e-4) return fmt::format("{:.6g}", v);
  const int decimals = std::max(0, 5 - int(std::floor(std::log10(a))));
  std::string t = fmt::format("{:.{}f}", a, decimals);
  if (t.find('.') != std::string::npos) {
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
  }
  const std::size_t dot = std::min(t.find('.'), t.size());
  std::string out;
  for (std::size_t i = 0; i < dot; ++i) {
    if (i > 0 && (dot - i) % 3 == 0) out += ',';
    out += t[i];
  }
  return (v < 0 ? "-" : "") + out + t.substr(dot);
}

// Columns a UTF-8 string takes (its code points: "\u2014" is one), as fmt pads it.
std::size_t compare_display_width(const std::string& s) {
  return std::size_t(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string cell(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_number()) return readable(v.get<double>());
  return value_text(v);
}

// What names a run's trace in its report (identity.trace): the path given and its digest.
Json trace_of(const std::string& run_dir) {
  const Json r = read_json(run_dir + "/" + std::string(kReportFile));
  const Json::json_pointer at("/identity/trace");
  if (!r.contains(at)) return Json();
  const Json& t = r.at(at);
  return {{"given", t.value("given", Json())}, {"sha256", t.value("sha256", Json())}};
}

// Two serving runs (`trnsim serve --out`): a row per figure of kServeMetrics, and the keys of
// what was served that differ (the spec as resolved, the rack and its --rack-set, from the
// reports: a serving run writes no config.json).
Json compare_serving(const std::string& a, const std::string& b, const Json& ra, const Json& rb, Json out) {
  out["runs"] = std::string(kind_name(RunKind::serve));
  const Json::json_pointer fidelity("/identity/fidelity");
  out["fidelity"] = {{"a", ra.contains(fidelity) ? ra.at(fidelity) : Json()},
                     {"b", rb.contains(fidelity) ? rb.at(fidelity) : Json()}};
  const Json ma = read_metrics(a, RunKind::serve), mb = read_metrics(b, RunKind::serve);
  for (const auto& m : kServeMetrics) {
    const std::string n(m.name);
    out["rows"].push_back(row(n, std::string(m.unit), ma[n], mb[n]));
  }
  const auto served = [](const Json& r) {
    const auto at = [&](const char* p) {
      const Json::json_pointer ptr(p);
      return r.contains(ptr) ? r.at(ptr) : Json();
    };
    return Json{{"spec", at("/spec")}, {"rack", at("/machine/rack")}, {"rack_sets", at("/identity/rack_sets")}};
  };
  out["config_differences"] = config_differences(served(ra), served(rb));
  return out;
}

}  // namespace

Json compare(const std::string& a, const std::string& b) {
  const Kind ka = kind_of(a), kb = kind_of(b);
  if (ka != kb) {
    throw SweepError(fmt::format("compare: {} is a {} directory, {} a {} directory: expected two "
                                 "of the same kind",
                                 a, ka == Kind::run ? "run" : "sweep", b,
                                 kb == Kind::run ? "run" : "sweep"));
  }
  Json out{{"a", a}, {"b", b}, {"rows", Json::array()}};
  if (ka == Kind::run) {
    out["kind"] = "run";
    const Json ra = read_json(a + "/" + std::string(kReportFile));
    const Json rb = read_json(b + "/" + std::string(kReportFile));
    const RunKind rka = report_kind(ra), rkb = report_kind(rb);
    if (rka != rkb) {
      throw SweepError(fmt::format(
          "compare: {} holds a {} run's report (`trnsim {}`), {} a {} run's (`trnsim {}`): their figures "
          "differ (a training step against serving latency and throughput); compare two of the same kind",
          a, kind_name(rka), rka == RunKind::serve ? "serve" : "run", b, kind_name(rkb),
          rkb == RunKind::serve ? "serve" : "run"));
    }
    if (rka == RunKind::serve) return compare_serving(a, b, ra, rb, std::move(out));
    const Json::json_pointer fidelity("/identity/fidelity");
    out["fidelity"] = {{"a", ra.contains(fidelity) ? ra.at(fidelity) : Json()},
                       {"b", rb.contains(fidelity) ? rb.at(fidelity) : Json()}};
    if (ra.contains("figures") && rb.contains("figures")) {
      out["rows"] = compare_figure_rows(ra["figures"], rb["figures"]);
    } else {  // a report from before the figures table: the headline metrics
      const Json ma = read_metrics(a), mb = read_metrics(b);
      for (const auto& m : kMetrics) {
        const std::string n(m.name);
        out["rows"].push_back(row(n, std::string(m.unit), ma[n], mb[n]));
      }
    }
    out["config_differences"] = config_differences(read_json(a + "/" + std::string(kConfigFile)),
                                                   read_json(b + "/" + std::string(kConfigFile)));
    // Runs of different traces differ in what they ran: the traces count as a difference.
    const Json ta = trace_of(a), tb = trace_of(b);
    out["traces"] = {{"a", ta}, {"b", tb}};
    const auto field = [](const Json& t, const char* k) {
      return t.is_object() && t.contains(k) ? t[k] : Json("(not recorded)");
    };
    if (field(ta, "sha256") != field(tb, "sha256")) {
      out["config_differences"].push_back(
          {{"pointer", "(trace)"}, {"a", field(ta, "given")}, {"b", field(tb, "given")}});
    }
    return out;
  }
  out["kind"] = "sweep";
  const Plan pa = read_plan(a), pb = read_plan(b);
  if (pa.kind() != pb.kind()) {
    throw SweepError(fmt::format("compare: {} is a {} sweep, {} a {} sweep: their figures differ; compare "
                                 "two of the same kind",
                                 a, kind_name(pa.kind()), b, kind_name(pb.kind())));
  }
  out["runs"] = std::string(kind_name(pa.kind()));
  const Json ma = merge({a}), mb = merge({b});
  std::map<std::string, const Json*> in_b;
  for (const auto& g : mb["groups"]) in_b[g["values"].dump()] = &g;
  std::size_t only_a = 0;
  std::map<std::string, bool> matched;
  for (const auto& g : ma["groups"]) {
    const auto it = in_b.find(g["values"].dump());
    if (it == in_b.end()) {
      ++only_a;
      continue;
    }
    matched[it->first] = true;
    std::vector<std::string> label;
    for (const auto& [k, v] : g["values"].items()) label.push_back(k + "=" + value_text(v));
    for (const auto& m : metrics_of(pa.kind())) {
      const std::string n(m.name);
      Json r = row(n, std::string(m.unit), g["metrics"][n].value("mean", Json()),
                   (*it->second)["metrics"][n].value("mean", Json()));
      r["point"] = fmt::format("{}", fmt::join(label, " "));
      out["rows"].push_back(std::move(r));
    }
  }
  out["only_in_a"] = only_a;
  out["only_in_b"] = mb["groups"].size() - matched.size();
  Json ca{{"base_config", pa.base_config}, {"axes", axes_json(pa)}, {"trace", pa.trace}};
  Json cb{{"base_config", pb.base_config}, {"axes", axes_json(pb)}, {"trace", pb.trace}};
  out["config_differences"] = config_differences(ca, cb);
  return out;
}

std::string compare_text(const Json& c) {
  const bool sweep = c["kind"] == "sweep";
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> head;
  if (sweep) head.push_back("point");
  head.insert(head.end(), {"metric", "unit", "A", "B", "B-A", "B/A"});
  rows.push_back(head);
  for (const auto& r : c["rows"]) {
    std::vector<std::string> line;
    if (sweep) line.push_back(r["point"]);
    const auto side = [&](const char* v, const char* note) {
      return r.contains(note) ? r[note].get<std::string>() : cell(r[v]);
    };
    line.insert(line.end(), {r["metric"].get<std::string>(), r["unit"].get<std::string>(),
                             side("a", "a_note"), side("b", "b_note"), cell(r["diff"]),
                             cell(r["ratio"])});
    rows.push_back(line);
  }
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], compare_display_width(r[i]));
  }
  const auto fid = [&](const char* k) {
    if (!c.contains("fidelity") || !c["fidelity"][k].is_string()) return std::string();
    return fmt::format(" (fidelity {})", c["fidelity"][k].get<std::string>());
  };
  std::string out = fmt::format("A: {}{}\nB: {}{}\n\n", c["a"].get<std::string>(), fid("a"),
                                c["b"].get<std::string>(), fid("b"));
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      // Text columns left-aligned, numbers right-aligned.
      const bool text = i < (sweep ? 3u : 2u);
      line += text ? fmt::format("{:<{}}", r[i], w[i]) : fmt::format("{:>{}}", r[i], w[i]);
      if (i + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (sweep) {
    out += fmt::format("\npoints only in A: {}, only in B: {}\n", c["only_in_a"].get<std::size_t>(),
                       c["only_in_b"].get<std::size_t>());
  }
  const Json& d = c["config_differences"];
  out += fmt::format("\nconfiguration keys and traces that differ: {}\n", d.size());
  for (const auto& x : d) {
    const std::string p = x["pointer"] == "(trace)" ? "trace" : x["pointer"].get<std::string>();
    out += fmt::format("  {}: {} -> {}\n", p, cell(x["a"]), cell(x["b"]));
  }
  return out;
}

}  // namespace trnsim::sweep
