// SPDX-License-Identifier: MIT
#include "trnsim/sweep/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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

std::string cell(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_number()) return fmt::format("{:.6g}", v.get<double>());
  return value_text(v);
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
    const Json ma = read_metrics(a), mb = read_metrics(b);
    for (const auto& m : kMetrics) {
      const std::string n(m.name);
      out["rows"].push_back(row(n, std::string(m.unit), ma[n], mb[n]));
    }
    out["config_differences"] = config_differences(read_json(a + "/" + std::string(kConfigFile)),
                                                   read_json(b + "/" + std::string(kConfigFile)));
    return out;
  }
  out["kind"] = "sweep";
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
    for (const auto& m : kMetrics) {
      const std::string n(m.name);
      Json r = row(n, std::string(m.unit), g["metrics"][n].value("mean", Json()),
                   (*it->second)["metrics"][n].value("mean", Json()));
      r["point"] = fmt::format("{}", fmt::join(label, " "));
      out["rows"].push_back(std::move(r));
    }
  }
  out["only_in_a"] = only_a;
  out["only_in_b"] = mb["groups"].size() - matched.size();
  const Plan pa = read_plan(a), pb = read_plan(b);
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
    line.insert(line.end(), {r["metric"].get<std::string>(), r["unit"].get<std::string>(), cell(r["a"]),
                             cell(r["b"]), cell(r["diff"]), cell(r["ratio"])});
    rows.push_back(line);
  }
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  std::string out = fmt::format("A: {}\nB: {}\n\n", c["a"].get<std::string>(), c["b"].get<std::string>());
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
  out += fmt::format("\nconfiguration keys that differ: {}\n", d.size());
  for (const auto& x : d) {
    out += fmt::format("  {}: {} -> {}\n", x["pointer"].get<std::string>(), cell(x["a"]), cell(x["b"]));
  }
  return out;
}

}  // namespace trnsim::sweep
