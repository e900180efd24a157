// SPDX-License-Identifier: MIT
// The microbenchmarks behind `trnsim bench ...` (docs/bench.md): one function per benchmark in
// chip.hpp, hbm.hpp, fabric.hpp, collective.hpp and kernel.hpp, each taking a plain argument
// struct and returning what it measured as JSON. This header holds what they share: where the
// config comes from, where the default presets live, and running a measurement in a child
// process (SystemC allows one elaboration per process, so every measurement, and every point of
// a sweep, forks its own child).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/resolve/plan.hpp"

namespace trnsim::bench {

using Json = nlohmann::json;

// Directory holding configs/ and traces/: $TRNSIM_DATA_DIR, else the source tree trnsim was
// built from.
std::string data_dir();
// `name` relative to data_dir() ("configs/racks/trn3-gen2-ultraserver.json").
std::string data_path(const std::string& name);
// The default rack preset of every command that takes --config.
inline constexpr const char* kDefaultRack = "configs/racks/trn3-gen2-ultraserver.json";

// A chip or rack preset and its --set overrides. The benchmarks load it where they use it: some
// in the parent, some in each forked child.
struct ConfigSource {
  std::string path;  // empty: the default rack preset
  std::vector<std::string> sets;
  // Loads the preset, applies the overrides and runs the resolve step's checks.
  config::LoadedConfig load() const;
  // The same, and the rack those checks resolved (registry::check), when the preset has one:
  // what resolve::plan gives a run (Purpose::run), for `trnsim run` to take instead of resolving
  // the rack a second time.
  config::LoadedConfig load(std::optional<resolve::RackPlan>& rack) const;
};

// A byte count given to `option`: a plain integer ("268435456") or a size with a unit
// ("256MiB"); at least `min`. InputError naming the option otherwise.
std::uint64_t parse_size(const std::string& s, const char* option, std::uint64_t min = 1);

// Runs `measure` in a forked child process and returns the JSON it produced. An InputError in
// the child is rethrown here with its message; any other failure becomes an InternalError.
Json run_isolated(const std::function<Json()>& measure);

}  // namespace trnsim::bench
