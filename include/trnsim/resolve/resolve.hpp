// SPDX-License-Identifier: MIT
// The resolve step: between the typed config and the models. plan() is the one way from a loaded
// config to what models are built from. It applies every cross-field rule (time steps, HBM
// geometry, DMA limits, chip layout, fabric packet and VC sizing, rank placement), applies the
// replay layer's overrides of chip and fabric fields while remembering which key the user wrote,
// turns the fidelity into model names, and derives the plans. Every error names the file and the
// JSON pointer of that key. No SystemC here: `trnsim config` (Purpose::config) runs every rule
// of every command, so what it accepts every command accepts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/resolve/where.hpp"

namespace trnsim::resolve {

// "fast for run, detailed for benches": the one place that says it.
config::Fidelity default_fidelity(Purpose purpose);

// The one way from a loaded config to what models are built from: applies every cross-field rule
// the purpose's parts are subject to (Purpose::config: every rule of every purpose). Throws
// ConfigError naming the file and JSON pointer (TopologyError for a bad topology) when `loaded`
// lacks what the purpose needs or breaks a rule.
Plan plan(const config::LoadedConfig& loaded, Purpose purpose);

// The chip of each of `ranks` ranks on `chips` chips under a placement. TraceError when the ranks
// do not fit; ConfigError naming the placement file when it places fewer ranks than there are.
std::vector<int> place_ranks(const PlacementPlan& placement, int ranks, std::size_t chips);

// The models a fidelity gives the parts whose model the config leaves empty (registry names).
struct FidelityModels {
  const char* network;
  const char* compute;
};
FidelityModels models_for(config::Fidelity f);

// The same from parameters built by hand (tests), errors naming pointers without a file.
ChipPlan plan_chip(const config::ChipParams& params, int granularity = 1, const Where& at = Where{});
FabricPlan plan_fabric(const config::FabricParams& params, const topo::Topology& topology,
                       const config::ChipParams* chip = nullptr, const Where& at = Where{});

}  // namespace trnsim::resolve
