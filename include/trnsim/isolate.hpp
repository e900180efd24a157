// SPDX-License-Identifier: MIT
// Work in forked child processes. SystemC allows one elaboration per process, so anything that
// must elaborate a model of its own (a benchmark point, the op-level calibration of a run) runs
// in a child, before or beside the parent's one simulation.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace trnsim {

// Runs each job in its own forked child, at most `parallel` (>= 1) at a time, and returns what
// each returned, in job order. An InputError in a child is rethrown here with its message (that
// of the first failing job in job order); any other failure becomes an InternalError.
std::vector<std::string> run_forked(const std::vector<std::function<std::string()>>& jobs,
                                    int parallel);

}  // namespace trnsim
