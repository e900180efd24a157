// SPDX-License-Identifier: MIT
// The whole resolved configuration of a run, and how it is loaded from preset files.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnsim/config/schema.hpp"
#include "trnsim/params/chip.hpp"
#include "trnsim/params/cluster.hpp"
#include "trnsim/params/fabric.hpp"
#include "trnsim/params/replay.hpp"
#include "trnsim/params/sim.hpp"
#include "trnsim/params/topology.hpp"

namespace trnsim::config {

struct RackParams {
  std::string name;
  topo::TopologySpec topology{};
  FabricParams fabric{};
  template <class V>
  void visit(V& v) {
    v.field("name", name, "rack (scale-up domain) name", Required{});
    v.field("topology", topology, "the rack's chips, switches and links", Required{});
    v.field("fabric", fabric, "packets, flow control and arbitration of the fabric model");
  }
};

// /sim/memory_budget in bytes, the machine's default share when it is 0.
std::uint64_t memory_budget(const SimParams& sim);

struct Config {
  std::string name;
  std::string description;
  std::optional<ChipParams> chip;
  std::optional<RackParams> rack;
  SimParams sim{};
  ReplayParams replay{};
  std::optional<ClusterParams> cluster;
  template <class V>
  void visit(V& v) {
    v.field("name", name, "preset name");
    v.field("description", description, "what the preset describes");
    v.field("chip", chip, "the chip (every chip of a rack is alike)");
    v.field("rack", rack, "the rack: topology of chips, switches and links");
    v.field("sim", sim, "simulation settings");
    v.field("replay", replay, "workload replay: collectives");
    v.field("cluster", cluster, "UltraServers joined by the scale-out network (docs/scaling.md)");
  }
};

// A loaded configuration: the typed values, the merged JSON they came from, and where each value
// was set (for error messages that name the file).
struct LoadedConfig {
  Config config;
  Json merged;
  Provenance provenance;
  std::string path;
};

// Loads `path`, following "extends" (a file name or an array of them, relative to the file that
// names them), applies `sets` ("chip.hbm.stacks=4" or "/chip/hbm/stacks=4"; the value is JSON
// when it parses as JSON, else a string), and resolves the result into typed parameters.
// Throws ConfigError naming the file and JSON pointer of the first problem.
LoadedConfig load_config(const std::string& path, const std::vector<std::string>& sets = {});

// The same from JSON text held in memory (tests); `origin` names it in errors.
LoadedConfig load_config_text(const std::string& text, const std::string& origin,
                              const std::vector<std::string>& sets = {});

// The fully resolved configuration, defaults included, with units.
Json to_json(const Config& config);

// Every field of the schema: pointer, type, default and description (for docs and list-types).
std::vector<FieldDoc> schema_fields();

// A placement file (/replay/placement_file), read as a config file is: ConfigError naming the
// file and JSON pointer for bad JSON, an unknown key or a wrong type. Its rule over the rack's
// chips is the resolve step's (resolve::plan).
PlacementFileParams load_placement_file(const std::string& path);

}  // namespace trnsim::config
