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

#include "trnsim/config/chip_params.hpp"
#include "trnsim/config/cluster_params.hpp"
#include "trnsim/config/fabric_params.hpp"
#include "trnsim/config/replay_params.hpp"
#include "trnsim/config/schema.hpp"
#include "trnsim/config/topology_params.hpp"

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

// How finely the parts whose model the config does not name are simulated (docs/models/fidelity.md).
enum class Fidelity { fast, detailed };
constexpr auto enum_names(Fidelity) {
  return std::array{std::pair{Fidelity::fast, std::string_view("fast")},
                    std::pair{Fidelity::detailed, std::string_view("detailed")}};
}

struct SimParams {
  std::uint64_t seed = 1;
  // Unset: fast for `trnsim run`, detailed for the microbenchmarks (which measure the detailed
  // models). /rack/fabric/model and /chip/compute/model, when set, win over it.
  std::optional<Fidelity> fidelity;
  // Fast-forward of repeated micro-batches (replay::FastForward); unset: on at the fast
  // fidelity, off at the detailed one.
  std::optional<bool> fast_forward;
  double fast_forward_tolerance = 0.02;
  double fast_forward_size_tolerance = 0.10;
  // With fast-forward on and tile compute: the share of each op's repeated work that is simulated
  // (model::op_head()); the rest is timed from the op's calibrated profile. 1: every tile.
  double fast_forward_op_head = 0.0625;
  int compute_granularity = 1;
  Bytes memory_budget{};  // 0: default_memory_budget() (io.hpp)
  std::uint64_t work_budget = 0;  // simulation events; 0: run::kDefaultWorkBudget
  template <class V>
  void visit(V& v) {
    v.field("seed", seed, "seed of every random choice of a run");
    v.field("fidelity", fidelity,
            "fast (flow network, op-level compute) or detailed (packet network, tile compute), "
            "for the parts whose model is not set; default: fast for run, detailed for bench");
    v.field("fast_forward", fast_forward,
            "time the compute and communication of repeated micro-batches from earlier ones "
            "once steady (docs/models/fidelity.md); default: on at fast fidelity, off at detailed");
    v.field("fast_forward_tolerance", fast_forward_tolerance,
            "steady: two repetitions in a row within this fraction of each other", InRange{0, 1});
    v.field("fast_forward_size_tolerance", fast_forward_size_tolerance,
            "a micro-batch repeats the previous one when every op's sizes are within this "
            "fraction",
            InRange{0, 1});
    v.field("fast_forward_op_head", fast_forward_op_head,
            "with fast-forward on, the tile compute model simulates this share of each op's "
            "repeated work (batch instances, heads, rows or elements; a minimum each) and times "
            "the rest from the op's calibrated profile; 1 = every tile (docs/models/fidelity.md)",
            Positive{}, InRange{0, 1});
    v.field("compute_granularity", compute_granularity,
            "chip model event granularity: matmuls per instruction and DMA windows per wake-up "
            "(1 = fine; see docs/models/chip.md)",
            AtLeast{1});
    v.field("memory_budget", memory_budget,
            "most memory that work estimated from the inputs may take (route tables, per-op "
            "state, collective schedules, statistics); a larger estimate is refused before the "
            "run (0: a quarter of the machine's memory)",
            AtLeast{0});
    v.field("work_budget", work_budget,
            "most simulation events a run's inputs may be estimated to need; a larger estimate is "
            "refused before the run (0: 10^12, about a day of simulation)");
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
