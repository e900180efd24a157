// SPDX-License-Identifier: MIT
// What the resolve step's files share and its callers do not see.
#pragma once

#include <cstddef>

#include "trnsim/config/config.hpp"
#include "trnsim/resolve/resolve.hpp"

namespace trnsim::resolve {

// Rules over the raw config that every purpose applies first: time steps derived from a size and
// a rate (whole picoseconds, far below the kernel's range) and the chip's layout over its dies.
void check_config(const config::LoadedConfig& loaded);

// /replay/placement on `chips` chips (a replica's, in a cluster): the LNC rule and the placement
// file, read through the config layer and checked against the chips.
PlacementPlan plan_placement(const config::LoadedConfig& loaded, std::size_t chips);

}  // namespace trnsim::resolve
