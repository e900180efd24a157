// SPDX-License-Identifier: MIT
// A whole-rack replay of a trace: the trace replay driver in a simulation of phases
// (trnsim/run/simulation.hpp); where the ranks go.
#include "trnsim/run/run.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "trace_replay.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/run/simulation.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::run {

std::vector<int> place_ranks(const config::LoadedConfig& loaded, int ranks, std::size_t chips) {
  const config::ReplayParams& rp = loaded.config.replay;
  using P = config::RankPlacement;
  int per_chip = 1;
  std::string how;
  switch (rp.placement) {
    case P::chip: break;
    case P::logical_core: {
      const int cores = loaded.config.chip ? loaded.config.chip->cores : 0;
      if (cores % rp.lnc != 0) {
        throw ConfigError(fmt::format("{}:/replay/lnc: {} does not divide the chip's {} cores",
                                      loaded.path, rp.lnc, cores));
      }
      per_chip = cores / rp.lnc;
      how = fmt::format("placement logical_core (LNC={}: {} ranks per chip)", rp.lnc, per_chip);
      break;
    }
    case P::block:
      per_chip = rp.ranks_per_chip;
      how = fmt::format("placement block ({} ranks per chip)", per_chip);
      break;
    case P::file: return read_placement(rp.placement_file, loaded.path, ranks, chips);
  }
  const std::size_t need = (std::size_t(ranks) + std::size_t(per_chip) - 1) / std::size_t(per_chip);
  if (need > chips && per_chip == 1) {
    throw TraceError(fmt::format("the workload has {} ranks but the rack has {} chips", ranks,
                                 chips));
  }
  if (need > chips) {
    throw TraceError(fmt::format("the workload has {} ranks; {} needs {} chips, the rack has {}",
                                 ranks, how, need, chips));
  }
  std::vector<int> out;
  for (int r = 0; r < ranks; ++r) out.push_back(r / per_chip);
  return out;
}

std::vector<int> read_placement(const std::string& file, const std::string& config_path,
                                int ranks, std::size_t chips) {
  if (file.empty()) {
    throw ConfigError(fmt::format("{}:/replay/placement_file: missing: placement \"file\" needs "
                                  "a placement file",
                                  config_path));
  }
  const std::string text = read_input_file(file, kMaxConfigFileBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(fmt::format("{}: not JSON: {}", file, e.what()));
  }
  if (!j.is_object() || !j.contains("chips") || !j["chips"].is_array()) {
    throw ConfigError(fmt::format("{}:/chips: expected an object with an array \"chips\" (the "
                                  "chip of each rank)",
                                  file));
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "chips") throw ConfigError(fmt::format("{}:/{}: unknown key; expected \"chips\"", file, k));
  }
  const auto& a = j["chips"];
  if (a.size() < std::size_t(ranks)) {
    throw ConfigError(fmt::format("{}:/chips: places {} ranks, the workload has {}", file,
                                  a.size(), ranks));
  }
  std::vector<int> out;
  for (std::size_t r = 0; r < std::size_t(ranks); ++r) {
    const auto& v = a[r];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
        v.get<std::int64_t>() >= std::int64_t(chips)) {
      throw ConfigError(fmt::format("{}:/chips/{}: expected a chip id from 0 to {}, got {}", file,
                                    r, chips - 1, v.dump()));
    }
    out.push_back(int(v.get<std::int64_t>()));
  }
  return out;
}

RunData run_workload(const config::LoadedConfig& loaded, const trace::Workload& workload,
                     const ProgressFn& progress) {
  TraceReplay driver(workload);
  Simulation sim(loaded, driver);
  return sim.run(progress);
}

std::size_t rack_chip_count(const config::LoadedConfig& loaded) {
  if (!loaded.config.rack) {
    throw ConfigError(fmt::format("{}:/rack: missing: expected a rack preset", loaded.path));
  }
  return topo::build_topology(loaded.config.rack->topology,
                              loaded.config.chip ? &*loaded.config.chip : nullptr,
                              {&loaded.provenance, "/rack/topology",
                               config::memory_budget(loaded.config.sim)})
      .chip_count();
}

}  // namespace trnsim::run
