// SPDX-License-Identifier: MIT
// Preset files -> merged JSON (extends, --set) -> typed Config.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "trnsim/config/config.hpp"
#include "trnsim/config/set.hpp"
#include "trnsim/io.hpp"

namespace trnsim::config {
namespace fs = std::filesystem;

namespace {

// Objects merge key by key; anything else in `over` replaces what `base` had.
void deep_merge(Json& base, const Json& over) {
  if (!base.is_object() || !over.is_object()) {
    base = over;
    return;
  }
  for (const auto& [k, v] : over.items()) {
    if (base.contains(k)) {
      deep_merge(base[k], v);
    } else {
      base[k] = v;
    }
  }
}

Json parse_text(const std::string& text, const std::string& origin) {
  return parse_json<ConfigError>(text, origin);
}

std::string read_file(const fs::path& path) {
  try {
    return read_input_file(path.string(), kMaxConfigFileBytes);
  } catch (const InputError& e) {
    throw ConfigError(e.what());
  }
}

class TreeLoader {
 public:
  explicit TreeLoader(Provenance& prov) : prov_(prov) {}

  Json load_file(const fs::path& path) {
    const std::string shown = path.lexically_normal().string();
    // Kind and size first: a symlink loop, a directory or /dev/zero must not reach the parser.
    if (const auto why = input_file_problem(path.string(), kMaxConfigFileBytes); !why.empty()) {
      const std::string from =
          stack_.empty() ? "" : fmt::format(" (named by {}:/extends)", stack_.back().second);
      throw ConfigError(why == std::strerror(ENOENT)
                            ? fmt::format("{}: no such file{}", shown, from)
                            : fmt::format("{}: cannot read: {}{}", shown, why, from));
    }
    std::error_code ec;
    fs::path key = fs::weakly_canonical(path, ec);
    if (ec) key = path.lexically_normal();
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i].first == key) {
        std::string chain;
        for (std::size_t k = i; k < stack_.size(); ++k) chain += stack_[k].second + " -> ";
        throw ConfigError(fmt::format("{}:/extends: cyclic extends: {}{}",
                                      stack_.back().second, chain, shown));
      }
    }
    stack_.emplace_back(key, shown);
    Json result = load_json(parse_text(read_file(path), shown), shown, path.parent_path());
    stack_.pop_back();
    return result;
  }

  Json load_json(Json own, const std::string& shown, const fs::path& dir) {
    if (!own.is_object()) {
      throw ConfigError(fmt::format("{}:/: expected a JSON object at the top level, got {}", shown,
                                    own.type_name()));
    }
    Json merged = Json::object();
    if (own.contains("extends")) {
      const Json ext = own["extends"];
      own.erase("extends");
      std::vector<std::string> bases;
      if (ext.is_string()) {
        bases.push_back(ext.get<std::string>());
      } else if (ext.is_array() && std::all_of(ext.begin(), ext.end(),
                                               [](const Json& e) { return e.is_string(); })) {
        for (const auto& e : ext) bases.push_back(e.get<std::string>());
      } else {
        throw ConfigError(fmt::format(
            "{}:/extends: expected a file name or an array of file names, got {}", shown,
            ext.dump()));
      }
      for (std::size_t i = 0; i < bases.size(); ++i) {
        // A file name cannot hold a NUL: the system would read the name cut at it.
        if (bases[i].find('\0') != std::string::npos || bases[i].empty()) {
          throw ConfigError(fmt::format("{}:/extends{}: expected a file name, got {}", shown,
                                        ext.is_array() ? fmt::format("/{}", i) : "",
                                        Json(bases[i]).dump()));
        }
      }
      for (const auto& b : bases) deep_merge(merged, load_file(dir / b));
    }
    prov_.record_tree(own, "", shown);
    deep_merge(merged, own);
    return merged;
  }

 private:
  Provenance& prov_;
  std::vector<std::pair<fs::path, std::string>> stack_;
};

// "a.b.0.c" or "/a/b/0/c" -> pointer tokens.
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  const char sep = (!path.empty() && path[0] == '/') ? '/' : '.';
  std::string cur;
  for (std::size_t i = (sep == '/' ? 1 : 0); i <= path.size(); ++i) {
    if (i == path.size() || path[i] == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += path[i];
    }
  }
  return parts;
}

LoadedConfig resolve(Json merged, Provenance prov, std::string path,
                     const std::vector<std::string>& sets) {
  for (const auto& s : sets) apply_set(merged, s, prov);
  LoadedConfig out{Config{}, std::move(merged), std::move(prov), std::move(path)};
  JsonReader::read(out.merged, "", out.provenance, out.config);
  return out;  // rules over several fields: the resolve step's (resolve::plan)
}

}  // namespace

void apply_set(Json& root, const std::string& assignment, Provenance& prov) {
  // Config values are JSON text: a byte that is not UTF-8 could not be written back (report,
  // config.json), so it is refused here, not found later as an internal error.
  if (const std::size_t bad = invalid_utf8(assignment); bad != std::string::npos) {
    throw ConfigError(fmt::format("--set {}...: byte {} (0x{:02X}) is not valid UTF-8; expected "
                                  "path=value in UTF-8 text",
                                  Json(assignment.substr(0, bad)).dump(), bad,
                                  static_cast<unsigned char>(assignment[bad])));
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(fmt::format(
        "--set {}: expected path=value, such as chip.hbm.stacks=4 or /chip/hbm/stacks=4",
        assignment));
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  std::string pointer;
  Json* node = &root;
  const auto parts = split_path(path);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p.empty()) throw ConfigError(fmt::format("--set {}: empty path component", assignment));
    pointer = json_pointer_append(pointer, p);
    Json* next = nullptr;
    if (node->is_array()) {
      std::size_t idx = 0;
      const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), idx);
      if (ec != std::errc() || end != p.data() + p.size() || idx >= node->size()) {
        throw ConfigError(fmt::format("--set {}: {} is an array of {} elements; \"{}\" is not an "
                                      "index in it",
                                      assignment, pointer.substr(0, pointer.rfind('/')),
                                      node->size(), p));
      }
      next = &(*node)[idx];
    } else {
      if (!node->is_object()) {
        // A value replaced by an object: the --set, not the file, made what is there now.
        if (!node->is_null()) prov.record(pointer.substr(0, pointer.rfind('/')), "--set " + path);
        *node = Json::object();
      }
      next = &(*node)[p];
    }
    node = next;
  }
  // Text that is JSON is read as JSON, refusing what a file would refuse (1e400, a key twice);
  // "4.7TB/s" and other bare words are strings.
  Json value;
  try {
    value = parse_json_checked(text, "--set " + path);
  } catch (const InputError& e) {
    std::string why = e.what();
    why = why.substr(why.find(": ", ("--set " + path).size()) + 2);
    if (why.starts_with("invalid JSON: parse error")) {
      value = text;
    } else {
      throw ConfigError(fmt::format("--set {}:{}: {}", path, pointer, why));
    }
  }
  *node = value;
  prov.record_tree(value, pointer, "--set " + path);
}


LoadedConfig load_config(const std::string& path, const std::vector<std::string>& sets) {
  Provenance prov;
  TreeLoader loader(prov);
  Json merged = loader.load_file(path);
  return resolve(std::move(merged), std::move(prov), path, sets);
}

LoadedConfig load_config_text(const std::string& text, const std::string& origin,
                              const std::vector<std::string>& sets) {
  Provenance prov;
  TreeLoader loader(prov);
  Json merged = loader.load_json(parse_text(text, origin), origin, fs::current_path());
  return resolve(std::move(merged), std::move(prov), origin, sets);
}

Json to_json(const Config& config) { return JsonWriter::to_json(config); }

std::vector<FieldDoc> schema_fields() {
  std::vector<FieldDoc> out;
  Config c;
  c.chip.emplace();
  c.rack.emplace();
  SchemaCollector collector("", out);
  c.visit(collector);
  return out;
}

std::uint64_t memory_budget(const SimParams& sim) {
  return sim.memory_budget.si > 0 ? std::uint64_t(sim.memory_budget.si) : default_memory_budget();
}

PlacementFileParams load_placement_file(const std::string& path) {
  const Json j = parse_text(read_file(path), path);
  Provenance prov;
  prov.record_tree(j, "", path);
  PlacementFileParams out;
  JsonReader::read(j, "", prov, out);
  return out;
}

}  // namespace trnsim::config
