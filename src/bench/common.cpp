// SPDX-License-Identifier: MIT
#include "trnsim/bench/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "internal.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"
#include "trnsim/isolate.hpp"

namespace trnsim::bench {

std::string data_dir() {
  if (const char* d = std::getenv("TRNSIM_DATA_DIR"); d && *d) return d;
  return TRNSIM_SOURCE_DIR;
}

std::string data_path(const std::string& name) { return data_dir() + "/" + name; }

config::LoadedConfig ConfigSource::load() const {
  std::optional<resolve::RackPlan> rack;
  return load(rack);
}

config::LoadedConfig ConfigSource::load(std::optional<resolve::RackPlan>& rack) const {
  auto loaded = config::load_config(path.empty() ? data_path(kDefaultRack) : path, sets);
  // The resolve step, as `trnsim config` runs it: every command accepts the same configs.
  registry::Registry registry;
  registry::register_builtin_models(registry);
  rack = std::move(registry::check(registry, loaded).rack);
  return loaded;
}

const config::ChipParams& chip_of(const config::LoadedConfig& c, const std::string& file) {
  if (!c.config.chip) {
    throw ConfigError(fmt::format("{}:/chip: missing: this benchmark needs a chip or rack preset",
                                  file.empty() ? c.path : file));
  }
  return *c.config.chip;
}

std::unique_ptr<model::PowerModel> power_of(const config::LoadedConfig& c) {
  registry::Registry registry;
  registry::register_builtin_models(registry);
  return registry::make_power(
      registry, *resolve::plan(c, resolve::Purpose::bench_chip).chip, &c.provenance);
}

std::uint64_t parse_size(const std::string& s, const char* option, std::uint64_t min) {
  const auto bad = [&] {
    return InputError(fmt::format(
        "{}: expected a byte count >= {} such as 268435456 or \"256MiB\", got \"{}\"", option,
        min, s));
  };
  std::uint64_t v = 0;
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
    try {
      v = std::stoull(s);
    } catch (const std::exception&) {
      throw bad();
    }
  } else {
    try {
      v = whole_bytes(parse_bytes(s));
    } catch (const InputError& e) {
      // The parser's reason names what it did not understand (an unknown unit: "1PiB").
      throw InputError(fmt::format("{}: {}", bad().what(), e.what()));
    }
  }
  if (v < min) throw bad();
  return v;
}

Json run_isolated(const std::function<Json()>& measure) {
  const std::string text = run_forked({[&] { return measure().dump(); }}, 1).front();
  const auto j = Json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InternalError("benchmark child process wrote no JSON");
  return j;
}

}  // namespace trnsim::bench
