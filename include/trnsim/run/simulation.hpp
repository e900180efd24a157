// SPDX-License-Identifier: MIT
// One simulation in phases: plan -> calibrate -> elaborate -> attach probes -> simulate ->
// collect. A Simulation owns what every kind of workload shares (the plan, the registry entries
// it chose, the calibration, the rack, the probes that sample energy and traffic, the collection
// of statistics); a Driver owns the workload: today's trace replay (run/trace_replay.hpp),
// tomorrow's serving engine. SystemC allows one elaboration per process: one Simulation per
// process.
#pragma once

#include <systemc>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "trnsim/config/config.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/replay/source.hpp"
#include "trnsim/resolve/resolve.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/trace/workload.hpp"

namespace trnsim::run {

// The registry entries a plan names, looked up once: what the simulation asks of its models
// comes from their capabilities, never from comparing their names.
struct Models {
  const registry::Implementation* memory = nullptr;
  const registry::Implementation* compute = nullptr;
  const registry::Implementation* network = nullptr;
};

// What a driver is given at each phase.
struct Setup {
  const config::LoadedConfig& loaded;
  const resolve::RackPlan& plan;
  const registry::Registry& registry;
  const Models& models;
};

// The workload side of a simulation. The phases call it in this order, each once.
class Driver {
 public:
  virtual ~Driver() = default;
  // plan: decides the work and where it runs, and refuses (InputError) work that cannot run or
  // would not fit the budgets (run/estimate.hpp), before anything is calibrated or built.
  virtual void plan(const Setup& s) = 0;
  // calibrate: the source of the work, whose declared ops (WorkSource::calibration_ops()) the
  // op-level tier calibrates before elaboration, since no tile chip can be elaborated after the
  // rack.
  virtual const replay::WorkSource& source() const = 0;
  // elaborate: the driver's own modules (a replay, a serving scheduler) on `machine`.
  virtual void elaborate(const Setup& s, replay::Machine& machine) = 0;
  // The chips the work runs on (sorted, unique) and its name, for the probes and the logs.
  virtual std::vector<int> used_chips() const = 0;
  virtual std::string name() const = 0;
  // How far the work is (ops done and in all), read by the progress probe.
  virtual std::size_t ops_done() const = 0;
  virtual std::size_t ops_total() const = 0;
  // After the kernel stopped: throws InputError for work that never finished (a deadlock);
  // otherwise the end of the work.
  virtual sc_core::sc_time finish() = 0;
  // collect: the driver's own figures (records, collectives, what fast-forward did).
  virtual void collect(RunData& d) const = 0;
};

class Simulation {
 public:
  // `loaded` and `driver` must outlive the simulation and the RunData it returns. `purpose` is
  // the resolve step's (resolve::plan): a run, or the collective benchmark's rack.
  Simulation(const config::LoadedConfig& loaded, Driver& driver,
             resolve::Purpose purpose = resolve::Purpose::run);
  ~Simulation();

  // The flow network's link efficiency per traffic pattern (resolve::FabricPlan::flow_efficiency)
  // instead of what the config says (the flow calibration's own runs); before calibrate().
  void set_flow_efficiency(const std::array<double, 16>& efficiency);

  // The calibration cache the calibrate phase reads and writes (default: none). Before run().
  void set_cache(const CacheSettings& cache);

  // The rack the resolve step already gave for this config (resolve::plan(loaded,
  // Purpose::run).rack, or registry::check's), which plan() then takes instead of resolving it
  // again (its topology's route tables are most of a small run's resolve step). A run only
  // (Purpose::run); before plan().
  void set_rack_plan(resolve::RackPlan rack);

  // Whether the run samples cumulative energy and traffic as it goes (RunData::samples, the
  // progress callback; default on). A caller that reads only the end's figures (a serving
  // shape's time and energy) turns it off: the samples only read the models, so every other
  // figure is the same. Before attach_probes().
  void set_samples(bool on);

  // Children of the calibrations at a time (default kCalibrationJobs, 2). A caller that already
  // runs simulations side by side (a serving run's shapes, timing.parallel at once) gives 1: the
  // ops its calibration lacks then go to one child instead of up to eight, each elaborating a
  // tile chip. Results do not depend on it (run::calibrate_ops). Before calibrate().
  void set_calibration_jobs(int jobs);

  // Every phase in order.
  RunData run(const ProgressFn& progress = {});

  // The phases, for callers that need to act between them; each once, in this order.
  void plan();
  void calibrate();
  void elaborate();
  void attach_probes(const ProgressFn& progress = {});
  void simulate();
  RunData collect();

  const resolve::RackPlan& rack_plan() const;
  const Models& models() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace trnsim::run
