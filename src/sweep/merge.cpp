// SPDX-License-Identifier: MIT
#include "trnsim/sweep/merge.hpp"

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
#include "trnsim/io.hpp"
#include "trnsim/sweep/metrics.hpp"

namespace trnsim::sweep {

namespace fs = std::filesystem;
using detail::read_json;

namespace {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string number_cell(const Json& v) { return v.is_number() ? fmt::format("{}", v.get<double>()) : ""; }

}  // namespace

RunKind report_kind(const Json& report) {
  return report.is_object() && report.contains("spec") && report.contains("results") ? RunKind::serve
                                                                                      : RunKind::run;
}

Json read_metrics(const std::string& run_dir, RunKind kind) {
  const Json report = read_json(run_dir + "/" + std::string(kReportFile));
  Json out = Json::object();
  for (const auto& m : metrics_of(kind)) {
    const Json::json_pointer ptr{std::string(m.pointer)};
    // A figure the report lacks (no fabric traffic: no latency) is null, never a made-up 0.
    out[std::string(m.name)] = report.contains(ptr) && report[ptr].is_number() ? report[ptr] : Json();
  }
  return out;
}

Json merge(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw SweepError("sweep merge: expected at least one directory");
  const Plan plan = read_plan(dirs[0]);
  const Json points_json = plan.to_json()["points"];
  for (std::size_t i = 1; i < dirs.size(); ++i) {
    if (read_plan(dirs[i]).to_json()["points"] != points_json) {
      throw SweepError(fmt::format("{}: holds another sweep than {} (their plan.json points differ)",
                                   dirs[i], dirs[0]));
    }
  }
  Json m;
  m["name"] = plan.name;
  m["description"] = plan.description;
  m["axes"] = Json::array();
  for (std::size_t k = 0; k < plan.axis_names.size(); ++k) {
    m["axes"].push_back({{"name", plan.axis_names[k]}, {"path", plan.axis_paths[k]},
                         {"seed", int(k) == plan.seed_axis}});
  }
  m["runs"] = std::string(kind_name(plan.kind()));  // "training" or "serving"
  m["metrics"] = Json::array();
  for (const auto& x : metrics_of(plan.kind())) {
    m["metrics"].push_back({{"name", x.name}, {"pointer", x.pointer}, {"unit", x.unit}});
  }
  m["points"] = Json::array();
  // Groups of points that differ only in their seed, in order of first appearance.
  std::vector<Json> group_keys;
  std::map<std::string, std::size_t> group_of;
  std::vector<std::vector<std::size_t>> members;
  for (const auto& p : plan.points) {
    Json pt{{"id", p.id}, {"values", Json::object()}};
    Json key = Json::object();
    for (std::size_t k = 0; k < plan.axis_names.size(); ++k) {
      pt["values"][plan.axis_names[k]] = p.values[k];
      if (int(k) != plan.seed_axis) key[plan.axis_names[k]] = p.values[k];
    }
    std::string state = "pending";
    std::string from;
    for (const auto& d : dirs) {
      const std::string s = point_state(d, p.id);
      if (s == "ok") {
        state = s;
        from = d;
        break;
      }
      if (s == "failed" && state != "failed") {
        state = s;
        from = d;
      }
    }
    pt["status"] = state;
    if (state == "ok") {
      pt["metrics"] = read_metrics(run_dir(from, p.id), plan.kind());
    } else if (state == "failed") {
      const Json st = read_json(point_dir(from, p.id) + "/status.json");
      pt["error"] = st.value("error", std::string());
      pt["exit"] = st.value("exit", std::string());
    }
    const auto [it, fresh] = group_of.try_emplace(key.dump(), group_keys.size());
    if (fresh) {
      group_keys.push_back(key);
      members.emplace_back();
    }
    members[it->second].push_back(m["points"].size());
    m["points"].push_back(std::move(pt));
  }
  m["groups"] = Json::array();
  for (std::size_t g = 0; g < group_keys.size(); ++g) {
    Json grp{{"values", group_keys[g]}, {"points", Json::array()}, {"ok", 0}, {"failed", 0}, {"pending", 0}};
    Json seeds = Json::array();
    for (std::size_t i : members[g]) {
      const Json& pt = m["points"][i];
      grp["points"].push_back(pt["id"]);
      if (plan.seed_axis >= 0) seeds.push_back(pt["values"][plan.axis_names[std::size_t(plan.seed_axis)]]);
      const std::string s = pt["status"];
      grp[s == "ok" ? "ok" : s == "failed" ? "failed" : "pending"] =
          grp[s == "ok" ? "ok" : s == "failed" ? "failed" : "pending"].get<int>() + 1;
    }
    if (plan.seed_axis >= 0) grp["seeds"] = seeds;
    Json stats = Json::object();
    for (const auto& x : metrics_of(plan.kind())) {
      std::vector<double> v;
      for (std::size_t i : members[g]) {
        const Json& pt = m["points"][i];
        if (pt["status"] == "ok" && pt["metrics"][std::string(x.name)].is_number()) {
          v.push_back(pt["metrics"][std::string(x.name)].get<double>());
        }
      }
      Json s{{"n", v.size()}};
      if (!v.empty()) {
        double sum = 0, lo = v[0], hi = v[0];
        for (double y : v) {
          sum += y;
          lo = std::min(lo, y);
          hi = std::max(hi, y);
        }
        const double mean = sum / double(v.size());
        double ss = 0;
        for (double y : v) ss += (y - mean) * (y - mean);
        // Sample standard deviation: the spread a user would estimate from these seeds.
        s["mean"] = mean;
        s["stddev"] = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0.0;
        s["min"] = lo;
        s["max"] = hi;
      }
      stats[std::string(x.name)] = s;
    }
    grp["metrics"] = stats;
    m["groups"].push_back(std::move(grp));
  }
  return m;
}

std::string merged_csv(const Json& m) {
  const bool seeds = std::any_of(m["axes"].begin(), m["axes"].end(),
                                 [](const Json& a) { return a["seed"].get<bool>(); });
  std::vector<std::string> head;
  for (const auto& a : m["axes"]) {
    if (!a["seed"].get<bool>()) head.push_back(csv_cell(a["name"].get<std::string>()));
  }
  head.insert(head.end(), {"points", "ok", "failed"});
  for (const auto& x : m["metrics"]) {
    const std::string n = x["name"];
    head.push_back(n);
    if (seeds) head.push_back(n + "_sd");
  }
  std::string out = fmt::format("{}\n", fmt::join(head, ","));
  for (const auto& g : m["groups"]) {
    std::vector<std::string> row;
    for (const auto& a : m["axes"]) {
      if (!a["seed"].get<bool>()) row.push_back(csv_cell(value_text(g["values"][a["name"].get<std::string>()])));
    }
    row.push_back(fmt::format("{}", g["points"].size()));
    row.push_back(fmt::format("{}", g["ok"].get<int>()));
    row.push_back(fmt::format("{}", g["failed"].get<int>()));
    for (const auto& x : m["metrics"]) {
      const Json& s = g["metrics"][x["name"].get<std::string>()];
      row.push_back(number_cell(s.value("mean", Json())));
      if (seeds) row.push_back(number_cell(s.value("stddev", Json())));
    }
    out += fmt::format("{}\n", fmt::join(row, ","));
  }
  return out;
}

void write_merged(const std::string& dir, const Json& merged) {
  create_parent_directories(dir + "/sweep.json");
  write_file_atomic(dir + "/sweep.json", merged.dump(2) + "\n");
  write_file_atomic(dir + "/sweep.csv", merged_csv(merged));
}

DirStatus dir_status(const std::string& dir, const Plan& plan) {
  DirStatus s;
  for (const auto& p : plan.points) {
    const std::string st = point_state(dir, p.id);
    if (st == "ok") ++s.ok;
    else if (st == "started") ++s.started;
    else if (st == "pending") ++s.pending;
    else {
      ++s.failed;
      s.failures.emplace_back(p.id, read_json(point_dir(dir, p.id) + "/status.json").value("error", std::string()));
    }
  }
  return s;
}

}  // namespace trnsim::sweep
