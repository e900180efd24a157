// SPDX-License-Identifier: MIT
// Where ranks run (/replay/placement): the rule over placement, LNC, the chip's cores and the
// placement file, checked when the rack is resolved; the placement of a workload's ranks.
#include <fmt/format.h>

#include "internal.hpp"
#include "trnsim/error.hpp"
#include "trnsim/resolve/resolve.hpp"

namespace trnsim::resolve {

PlacementPlan plan_placement(const config::LoadedConfig& loaded, std::size_t chips) {
  const config::ReplayParams& rp = loaded.config.replay;
  const Where at(&loaded.provenance);
  using P = config::RankPlacement;
  PlacementPlan p;
  p.how = rp.placement;
  p.chips = chips;
  switch (rp.placement) {
    case P::chip: break;
    case P::logical_core: {
      const int cores = loaded.config.chip ? loaded.config.chip->cores : 0;
      if (cores % rp.lnc != 0) {
        at.fail({"/replay/lnc", "/chip/cores"},
                fmt::format("{} does not divide the chip's {} cores", rp.lnc, cores));
      }
      p.per_chip = cores / rp.lnc;
      p.description =
          fmt::format("placement logical_core (LNC={}: {} ranks per chip)", rp.lnc, p.per_chip);
      break;
    }
    case P::block:
      p.per_chip = rp.ranks_per_chip;
      p.description = fmt::format("placement block ({} ranks per chip)", p.per_chip);
      break;
    case P::file: {
      if (rp.placement_file.empty()) {
        at.fail("/replay/placement_file", "missing: placement \"file\" needs a placement file");
      }
      p.file = rp.placement_file;
      // Read through the config layer (unknown keys, types, negative ids: file and pointer).
      p.file_chips = config::load_placement_file(p.file).chips;
      for (std::size_t r = 0; r < p.file_chips.size(); ++r) {
        if (std::size_t(p.file_chips[r]) >= chips) {
          throw ConfigError(fmt::format("{}:/chips/{}: expected a chip id from 0 to {}, got {}",
                                        p.file, r, chips - 1, p.file_chips[r]));
        }
      }
      break;
    }
  }
  return p;
}

std::vector<int> place_ranks(const PlacementPlan& p, int ranks, std::size_t chips) {
  if (chips != p.chips) {
    throw InternalError(fmt::format("ranks placed on {} chips, the plan checked {}", chips,
                                    p.chips));
  }
  if (p.how == config::RankPlacement::file) {
    if (p.file_chips.size() < std::size_t(ranks)) {
      throw ConfigError(fmt::format("{}:/chips: places {} ranks, the workload has {}", p.file,
                                    p.file_chips.size(), ranks));
    }
    return {p.file_chips.begin(), p.file_chips.begin() + ranks};
  }
  const std::size_t per = std::size_t(p.per_chip);
  const std::size_t need = (std::size_t(ranks) + per - 1) / per;
  if (need > chips && per == 1) {
    throw TraceError(fmt::format("the workload has {} ranks but the rack has {} chips", ranks,
                                 chips));
  }
  if (need > chips) {
    throw TraceError(fmt::format("the workload has {} ranks; {} needs {} chips, the rack has {}",
                                 ranks, p.description, need, chips));
  }
  std::vector<int> out;
  for (int r = 0; r < ranks; ++r) out.push_back(r / p.per_chip);
  return out;
}

}  // namespace trnsim::resolve
