// SPDX-License-Identifier: MIT
// A whole-rack replay of a trace: the trace replay driver in a simulation of phases
// (trnsim/run/simulation.hpp).
#include "trnsim/run/run.hpp"

#include "trace_replay.hpp"
#include "trnsim/run/simulation.hpp"

namespace trnsim::run {

RunData run_workload(const config::LoadedConfig& loaded, const trace::Workload& workload,
                     const ProgressFn& progress, resolve::Purpose purpose) {
  TraceReplay driver(workload);
  Simulation sim(loaded, driver, purpose);
  return sim.run(progress);
}

}  // namespace trnsim::run
