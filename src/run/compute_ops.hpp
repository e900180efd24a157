// SPDX-License-Identifier: MIT
// Trace ops as the chips run them: the one conversion that the rack (at run time) and the
// op-level calibration (before elaboration) share, so that both see the same model::ComputeOp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chip/compute_op.hpp"
#include "trnsim/params/chip.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

// The compute op that `op` (a compute or memory op of a trace) runs as on `chip`; nullopt for an
// op with no work. A dtype the chip lacks runs as the nearest one it has, and `notes` gets a
// line saying so (once per substitution).
std::optional<model::ComputeOp> to_compute_op(const trace::Op& op, const config::ChipParams& chip,
                                              std::vector<std::string>& notes);


}  // namespace trnsim::run
