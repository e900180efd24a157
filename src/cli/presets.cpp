// SPDX-License-Identifier: MIT
#include "presets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "trnsim/bench/bench.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::cli {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

Json read_json(const std::string& path) {
  return config::parse_json_checked(read_input_file(path, kMaxConfigFileBytes), path);
}

}  // namespace

std::vector<Preset> list_presets() {
  std::vector<Preset> out;
  for (const char* kind : {"rack", "cluster", "chip"}) {
    const fs::path dir = fs::path(bench::data_dir()) / "configs" / (std::string(kind) + "s");
    std::error_code ec;
    std::vector<Preset> here;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_regular_file() || e.path().extension() != ".json") continue;
      Preset p{e.path().stem().string(), kind, e.path().string(), ""};
      try {
        const Json j = read_json(p.path);
        if (j.contains(kind) && j[kind].is_object() && j[kind].contains("name") &&
            j[kind]["name"].is_string()) {
          p.title = j[kind]["name"].get<std::string>();
        }
        if (j.contains("description") && j["description"].is_string()) {
          p.description = j["description"].get<std::string>();
        }
        // A cluster (its /cluster has no name) by its description's first sentence.
        if (p.title.empty()) p.title = p.description.substr(0, std::min(p.description.find(". "), p.description.size()));
      } catch (const InputError&) {
        p.title = "(unreadable)";
      }
      here.push_back(std::move(p));
    }
    std::sort(here.begin(), here.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    out.insert(out.end(), here.begin(), here.end());
  }
  return out;
}

std::string resolve_preset(const std::string& given) {
  std::error_code ec;
  if (given.empty() || fs::exists(given, ec)) return given;
  const bool plain_name = given.find('/') == std::string::npos && !given.ends_with(".json");
  std::vector<std::string> names;
  for (const auto& p : list_presets()) {
    if (plain_name && p.name == given) return p.path;
    names.push_back(p.name);
  }
  const std::string near = config::nearest_key(given, names);
  throw ConfigError(fmt::format(
      "{}: no such file{}{}; `trnsim presets` lists the presets", given,
      plain_name ? " or preset" : "",
      near.empty() ? "" : fmt::format(" (did you mean {}?)", near)));
}

std::vector<Preset> list_traces() {
  std::vector<Preset> out;
  const fs::path dir = fs::path(bench::data_dir()) / "traces";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (!e.is_regular_file()) continue;
    for (const char* ext : {".json", ".json.gz"}) {
      if (!file.ends_with(ext)) continue;
      Preset p{file.substr(0, file.size() - std::string_view(ext).size()), "trace", e.path().string(), "", ""};
      p.title = p.name;
      out.push_back(std::move(p));
      break;
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::string resolve_trace(const std::string& given) {
  std::error_code ec;
  if (given.empty() || fs::exists(given, ec) || fs::exists(given + ".0.et", ec) ||
      fs::exists(given + ".0.json", ec) || given.find('/') != std::string::npos) {
    return given;
  }
  for (const auto& t : list_traces()) {
    if (t.name == given) return t.path;
  }
  return given;
}

std::string nearest_trace(const std::string& given) {
  std::vector<std::string> names;
  for (const auto& t : list_traces()) names.push_back(t.name);
  return config::nearest_key(given, names);
}

std::vector<std::string> preset_files(const std::string& path) {
  std::vector<std::string> out;
  std::vector<std::string> todo{path};
  while (!todo.empty() && out.size() < 64) {
    const std::string p = todo.back();
    todo.pop_back();
    out.push_back(p);
    Json j;
    try {
      j = read_json(p);
    } catch (const InputError&) {
      continue;  // the loader reports it
    }
    if (!j.is_object() || !j.contains("extends")) continue;
    std::vector<std::string> ext;
    if (j["extends"].is_string()) ext.push_back(j["extends"].get<std::string>());
    if (j["extends"].is_array()) {
      for (const auto& e : j["extends"]) {
        if (e.is_string()) ext.push_back(e.get<std::string>());
      }
    }
    // Depth first, in the order given.
    for (auto it = ext.rbegin(); it != ext.rend(); ++it) {
      todo.push_back((fs::path(p).parent_path() / *it).lexically_normal().string());
    }
  }
  return out;
}

void use_installed_data_dir() {
  if (const char* d = std::getenv("TRNSIM_DATA_DIR"); d && *d) return;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return;
  const fs::path share = (exe.parent_path() / ".." / "share" / "trnsim").lexically_normal();
  if (fs::is_directory(share / "configs", ec)) ::setenv("TRNSIM_DATA_DIR", share.c_str(), 1);
}

}  // namespace trnsim::cli
