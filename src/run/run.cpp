// SPDX-License-Identifier: MIT
// A whole-rack replay of a trace: the trace replay driver in a simulation of phases
// (trnsim/run/simulation.hpp).
#include "trnsim/run/run.hpp"

#include <fmt/format.h>

#include "trace_replay.hpp"
#include "trnsim/run/estimate.hpp"
#include "trnsim/run/simulation.hpp"

namespace trnsim::run {

EstimateReport estimate_workload(const config::LoadedConfig& loaded, const trace::Workload& workload,
                                 resolve::Purpose purpose) {
  TraceReplay driver(workload, /*check=*/false);
  Simulation sim(loaded, driver, purpose);
  sim.plan();
  const WorkEstimate& e = driver.estimate();
  EstimateReport r;
  r.events = e.events;
  r.memory_bytes = e.memory_bytes();
  r.end_s = e.end_s;
  r.memory_budget = double(config::memory_budget(loaded.config.sim));
  r.work_budget = work_budget(loaded.config.sim);
  r.wall_s_short = e.events / kEstimatedEventsPerSecondFast;
  r.wall_s = e.events / kEstimatedEventsPerSecondSlow;
  const bool fits = r.memory_bytes <= r.memory_budget && r.events <= r.work_budget;
  r.fits = fits;
  r.text = fmt::format(
      "estimate of workload {} ({} ops on {} ranks):\n"
      "  events       {:.3g} (budget {:.3g}, /sim/work_budget): {:.4g} collective pieces and "
      "sends, {:.4g} packets, {:.4g} tile-model instructions, {:.4g} to calibrate {} distinct ops\n"
      "  memory       {:.3g} GB (budget {:.3g} GB, /sim/memory_budget): start-up {:.3g} GB, ops "
      "{:.3g} GB, messages "
      "{:.3g} GB, packets {:.3g} GB, op processes {:.3g} GB, tile-model programs {:.3g} GB, rack "
      "({} chips, {} links) {:.3g} GB\n"
      "  step         at least {:.4g} ms (rank {}'s longest chain at peak)\n"
      "  wall time    about {:.3g} to {:.3g} s (events at {:.2g} to {:.2g} per second, as measured; "
      "a guide, not a bound)\n"
      "  {}\n",
      driver.name(), e.ops, workload.num_ranks(), e.events, r.work_budget, double(e.messages),
      e.packets, e.instructions, e.calibration_instructions, e.calibration_shapes,
      r.memory_bytes / 1e9, r.memory_budget / 1e9, e.fixed_bytes / 1e9, e.op_bytes / 1e9, e.message_bytes / 1e9,
      e.packet_bytes / 1e9, e.process_bytes / 1e9, e.program_bytes / 1e9, e.chips,
      e.links, e.rack_bytes / 1e9, e.end_s * 1e3, e.end_rank, r.wall_s_short, r.wall_s,
      kEstimatedEventsPerSecondFast, kEstimatedEventsPerSecondSlow,
      fits ? "within the budgets: the run would start"
           : "beyond the budgets: the run would be refused");
  return r;
}

RunData run_workload(const config::LoadedConfig& loaded, const trace::Workload& workload,
                     const ProgressFn& progress, resolve::Purpose purpose,
                     const CacheSettings& cache, std::optional<resolve::RackPlan> rack) {
  TraceReplay driver(workload);
  Simulation sim(loaded, driver, purpose);
  sim.set_cache(cache);
  if (rack) sim.set_rack_plan(std::move(*rack));
  return sim.run(progress);
}

}  // namespace trnsim::run
