// SPDX-License-Identifier: MIT
// One simulation in phases (trnsim/run/simulation.hpp): what every workload shares.
#include "trnsim/run/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "calibrate.hpp"
#include "flow_calibration.hpp"
#include "chip/chip.hpp"
#include "common/activity.hpp"
#include "rack.hpp"
#include "trnsim/resolve/peaks.hpp"
#include "trnsim/run/peak_power.hpp"
#include "trnsim/error.hpp"
#include "trnsim/log.hpp"

namespace trnsim::run {

namespace {

using Clock = std::chrono::steady_clock;

// The SystemC object of a network (each implementation is a module).
const sc_core::sc_object* as_object(const model::Network* n) {
  const auto* o = dynamic_cast<const sc_core::sc_object*>(n);
  if (!o) throw InternalError("a network that is not a SystemC object");
  return o;
}

void add_totals(model::NetworkTotals& a, const model::NetworkTotals& b) {
  a.transfers_started += b.transfers_started;
  a.transfers_completed += b.transfers_completed;
  a.bytes_requested += b.bytes_requested;
  a.bytes_injected += b.bytes_injected;
  a.bytes_delivered += b.bytes_delivered;
  a.packets_injected += b.packets_injected;
  a.packets_delivered += b.packets_delivered;
  a.wire_bytes += b.wire_bytes;
  a.credit_stall_ns += b.credit_stall_ns;
  a.packets_in_flight += b.packets_in_flight;
  a.events += b.events;
}

// Link capacity of a topology, both directions of every link.
double capacity(const topo::Topology& t) {
  double c = 0;
  for (const auto& l : t.links()) c += 2 * l.bandwidth.si;
  return c;
}

// The most dynamic power a topology's links and switches can draw: every link direction busy
// at its bandwidth, its bytes priced by the link and by the node it enters (a switch, or a chip
// that forwards them).
double max_dynamic_power(const topo::Topology& t) {
  double w = 0;
  for (const auto& l : t.links()) {
    const double link = l.energy.si * 8.0;
    w += l.bandwidth.si * (link + t.node(l.b).energy.si * 8.0);
    w += l.bandwidth.si * (link + t.node(l.a).energy.si * 8.0);
  }
  return w;
}

}  // namespace

// Outside the anonymous namespace: State holds one, and a member of a type with internal linkage
// is refused (-Wsubobject-linkage) when this file is compiled in a unity batch.
enum class SimulationPhase { created, planned, calibrated, elaborated, probed, simulated, collected };
using Phase = SimulationPhase;

// Samples of cumulative energy and traffic, taken when an op or transfer completes at least
// `interval` after the last one (a sampling process of its own would add timed events, and their
// order among simultaneous events moves results), and every packet the network delivers.
struct Probes {
  std::vector<Sample> samples;
  std::vector<std::string> link_names;
  std::vector<const model::Stat*> link_busy;  // read in place at each sample
  // The blocks whose energy each sample adds up, per used chip and per network (their meters
  // listed flat once, not walked in each block's map at every sample).
  std::vector<model::MeterList> chip_blocks, net_blocks;
  std::vector<PacketSample> packets;
  sc_core::sc_time interval{1, sc_core::SC_US};
  sc_core::sc_time last_sample = sc_core::SC_ZERO_TIME;
  // The peak power over /sim/peak_power_window: the dynamic energy of the used chips and the
  // fabric at every sample above and, between them, at op and transfer ends at least
  // 1/kPeakSamplesPerWindow of the window apart (so that the window is resolved however far the
  // series' interval has grown).
  std::optional<PeakWindow> peak;
  sc_core::sc_time peak_spacing = sc_core::SC_ZERO_TIME;
  sc_core::sc_time last_peak_sample = sc_core::SC_ZERO_TIME;
};

struct Simulation::State {
  const config::LoadedConfig& loaded;
  Driver& driver;
  resolve::Purpose purpose;
  Phase phase = Phase::created;
  registry::Registry registry;
  std::unique_ptr<resolve::RackPlan> plan;
  Models models;
  std::unique_ptr<model::PowerModel> power;  // prices every block's energy
  std::shared_ptr<const model::OpTable> calibration;
  CacheSettings cache;
  CalibrationOrigin origin;
  std::optional<std::array<double, 16>> flow_efficiency;  // set_flow_efficiency()
  std::optional<FlowCalibrationResult> flow_calibration;
  std::unique_ptr<model::Simulation> sim;
  std::unique_ptr<Rack> rack;
  std::vector<model::Network*> nets;
  Probes probes;
  ProgressFn progress;
  Clock::time_point t0, tc, t1, t2;
  bool sampling = true;  // set_samples()
  int calibration_jobs = kCalibrationJobs;  // set_calibration_jobs()

  State(const config::LoadedConfig& l, Driver& d, resolve::Purpose p)
      : loaded(l), driver(d), purpose(p) {}

  void enter(Phase from, Phase to) {
    if (phase != from) throw InternalError("simulation phases called out of order");
    phase = to;
  }
  Setup setup() const { return {loaded, *plan, registry, models}; }
  void take_sample();
  void take_peak_sample();
  // The dynamic energy (J) of the used chips and of the networks now.
  double used_chips_dynamic_j(const sc_core::sc_time& now);
  double fabric_dynamic_j(const sc_core::sc_time& now);
};

Simulation::Simulation(const config::LoadedConfig& loaded, Driver& driver,
                       resolve::Purpose purpose)
    : s_(std::make_unique<State>(loaded, driver, purpose)) {
  registry::register_builtin_models(s_->registry);
}

Simulation::~Simulation() = default;

void Simulation::set_cache(const CacheSettings& cache) {
  if (s_->phase != Phase::created) throw InternalError("Simulation::set_cache after plan()");
  s_->cache = cache;
}

void Simulation::set_rack_plan(resolve::RackPlan rack) {
  if (s_->phase != Phase::created) throw InternalError("Simulation::set_rack_plan after plan()");
  if (s_->purpose != resolve::Purpose::run) {
    throw InternalError("Simulation::set_rack_plan: a rack resolved for a run, given to another purpose");
  }
  s_->plan = std::make_unique<resolve::RackPlan>(std::move(rack));
}

void Simulation::set_samples(bool on) {
  if (s_->phase >= Phase::probed) throw InternalError("Simulation::set_samples after attach_probes()");
  s_->sampling = on;
}

void Simulation::set_calibration_jobs(int jobs) {
  if (s_->phase >= Phase::calibrated) {
    throw InternalError("Simulation::set_calibration_jobs after calibrate()");
  }
  s_->calibration_jobs = std::max(1, jobs);
}

void Simulation::set_flow_efficiency(const std::array<double, 16>& efficiency) {
  if (s_->phase != Phase::created && s_->phase != Phase::planned) {
    throw InternalError("Simulation::set_flow_efficiency after calibrate()");
  }
  s_->flow_efficiency = efficiency;
}

const resolve::RackPlan& Simulation::rack_plan() const { return *s_->plan; }
const Models& Simulation::models() const { return s_->models; }

RunData Simulation::run(const ProgressFn& progress) {
  plan();
  calibrate();
  elaborate();
  attach_probes(progress);
  simulate();
  return collect();
}

void Simulation::plan() {
  State& s = *s_;
  s.enter(Phase::created, Phase::planned);
  if (!s.plan) {
    s.plan = std::make_unique<resolve::RackPlan>(std::move(*resolve::plan(s.loaded, s.purpose).rack));
  }
  const auto* prov = &s.loaded.provenance;
  // A rack replay's chips take their memory from /replay/chip_memory (resolve's override).
  s.models.memory = &s.registry.get(registry::Role::memory, s.plan->chip.memory_model,
                                    "/replay/chip_memory", prov);
  s.models.compute = &s.registry.get(registry::Role::compute, s.plan->chip.compute_model,
                                     "/chip/compute/model", prov);
  s.models.network =
      &s.registry.get(registry::Role::network, s.plan->fabric.model, "/rack/fabric/model", prov);
  s.driver.plan(s.setup());
  // What prices the energy of every block, chosen before anything is calibrated or built.
  s.power = registry::make_power(s.registry, s.plan->chip, prov);
}

void Simulation::calibrate() {
  State& s = *s_;
  s.enter(Phase::planned, Phase::calibrated);
  s.t0 = Clock::now();
  // The op-level model's calibration elaborates tile chips in child processes: before the rack.
  // Fast-forward counts the energy and traffic of the compute ops it skips from the same
  // profiles, so a run of any compute model with it calibrates too.
  const auto& compute = s.models.compute->capabilities;
  if (compute.needs_calibration || s.plan->fast_forward) {
    s.calibration = calibrate_workload(s.plan->chip, s.driver.source(), s.calibration_jobs,
                                       compute.times_op_heads, &s.cache, &s.origin);
  }
  s.tc = Clock::now();
  // The flow network's efficiency per traffic pattern, from the packet fabric of the same rack
  // (child processes too, so before the rack). Its cache lives with the op-level one's; a
  // library caller without one still keeps it (it costs seconds of packet simulation).
  if (s.flow_efficiency) {
    s.plan->fabric.flow_efficiency = *s.flow_efficiency;
  } else if (s.plan->fabric.model == "flow" &&
             s.plan->fabric.params.flow_calibration != config::FlowCalibration::none) {
    const CacheSettings cache = s.cache.enabled ? s.cache : cache_settings_from_env(false);
    s.flow_calibration =
        calibrate_flow(s.loaded, *s.plan, cache, s.calibration_jobs, &s.driver.source());
    if (s.flow_calibration) s.plan->fabric.flow_efficiency = s.flow_calibration->efficiency;
  }
}

void Simulation::elaborate() {
  State& s = *s_;
  s.enter(Phase::calibrated, Phase::elaborated);
  s.sim = std::make_unique<model::Simulation>();
  // Only the chips that host a rank are built (and one idle chip standing for the others).
  s.rack = std::make_unique<Rack>("rack", *s.plan, s.loaded.config.replay, s.registry,
                                  &s.loaded.provenance, s.calibration, s.driver.used_chips());
  logger("run")->debug("{} of {} chip models elaborated", s.rack->chips_built(),
                       s.rack->chip_count());
  s.nets = s.rack->networks();
  s.driver.elaborate(s.setup(), *s.rack);
}

double Simulation::State::used_chips_dynamic_j(const sc_core::sc_time& now) {
  double j = 0;
  for (auto& blocks : probes.chip_blocks) j += blocks.dynamic_at(*power, now).si;
  return j;
}

double Simulation::State::fabric_dynamic_j(const sc_core::sc_time& now) {
  double j = 0;
  for (auto& blocks : probes.net_blocks) j += blocks.dynamic_at(*power, now).si;
  return j;
}

void Simulation::State::take_peak_sample() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  probes.last_peak_sample = now;
  probes.peak->add(now.to_seconds(), used_chips_dynamic_j(now) + fabric_dynamic_j(now));
}

void Simulation::State::take_sample() {
  probes.last_sample = sc_core::sc_time_stamp();
  probes.last_peak_sample = probes.last_sample;
  Sample x;
  x.t_s = sc_core::sc_time_stamp().to_seconds();
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  x.used_chips_dynamic_j = used_chips_dynamic_j(now);
  x.fabric_dynamic_j = fabric_dynamic_j(now);
  for (const model::Network* net : nets) x.fabric_wire_bytes += net->totals().wire_bytes;
  probes.peak->add(x.t_s, x.used_chips_dynamic_j + x.fabric_dynamic_j);
  x.hbm_bytes = rack->hbm_bytes();
  x.link_busy_s.reserve(probes.link_busy.size());
  for (const model::Stat* st : probes.link_busy) x.link_busy_s.push_back(float(st->value));
  probes.samples.push_back(std::move(x));
  if (progress) {
    progress({sc_core::sc_time_stamp().to_seconds(), driver.ops_done(), driver.ops_total(),
              std::chrono::duration<double>(Clock::now() - t0).count()});
  }
}

void Simulation::attach_probes(const ProgressFn& progress) {
  State& s = *s_;
  s.enter(Phase::elaborated, Phase::probed);
  s.progress = progress;
  Probes& p = s.probes;
  if (!s.sampling) return;
  // The busy time of every link direction.
  for (const auto& b : model::collect_stats(Duration(0.0))) {
    if (b.name.find(".link") == std::string::npos) continue;
    const auto* block = dynamic_cast<const model::Block*>(sc_core::sc_find_object(b.name.c_str()));
    if (!block) continue;
    if (const model::Stat* st = block->stats().find(model::LinkDirectionStats::busy)) {
      p.link_names.push_back(b.name);
      p.link_busy.push_back(st);
    }
  }
  for (int c : s.driver.used_chips()) {
    p.chip_blocks.emplace_back(model::blocks_under(&s.rack->chip(c)));
  }
  for (const model::Network* net : s.nets) p.net_blocks.emplace_back(model::blocks_under(as_object(net)));
  // Every packet of the networks that have packets (the packet fabric of each UltraServer).
  if (const auto& probe = s.models.network->packet_probe) {
    for (model::Network* net : s.rack->fabric_model_networks()) {
      probe(*net, [&p](const registry::PacketEvent& e) {
        p.packets.push_back({e.src, e.dst, float(e.hops_s), float(e.queueing_s)});
      });
    }
  }
  const double window = s.loaded.config.sim.peak_power_window.si;
  p.peak.emplace(window);
  p.peak_spacing = sc_core::sc_time(window / kPeakSamplesPerWindow, sc_core::SC_SEC);
  s.take_sample();
  s.rack->set_observer([&s, &p] {
    if (sc_core::sc_time_stamp() < p.last_sample + p.interval) {
      if (sc_core::sc_time_stamp() >= p.last_peak_sample + p.peak_spacing) s.take_peak_sample();
      return;
    }
    s.take_sample();
    if (p.samples.size() == 2 * kMaxSamples + 1) {
      for (std::size_t i = 1; i <= kMaxSamples; ++i) p.samples[i] = std::move(p.samples[2 * i]);
      p.samples.resize(kMaxSamples + 1);
      p.interval = p.interval * 2;
    }
  });
}

void Simulation::simulate() {
  State& s = *s_;
  s.enter(Phase::probed, Phase::simulated);
  s.t1 = Clock::now();
  model::run_bounded();
  s.t2 = Clock::now();
  for (const model::Network* net : s.nets) net->rethrow_error();
}

RunData Simulation::collect() {
  State& s = *s_;
  s.enter(Phase::simulated, Phase::collected);
  const sc_core::sc_time end = s.driver.finish();
  if (s.sampling) s.take_sample();
  const config::Config& cfg = s.loaded.config;
  const resolve::RackPlan& plan = *s.plan;
  Rack& rack = *s.rack;

  RunData d;
  d.config = &cfg;
  d.peaks = resolve::chip_peaks(plan.chip);
  s.driver.collect(d);
  d.chips = std::size_t(rack.chip_count());
  d.memory_model = plan.chip.memory_model;
  d.network_model = plan.fabric.model;
  d.compute_model = plan.chip.compute_model;
  d.compute_calibrated = s.models.compute->capabilities.needs_calibration;
  d.fidelity = std::string(config::enum_name(plan.fidelity));
  d.end = end;
  for (model::Network* net : s.nets) net->finish(d.end);
  for (int c = 0; c < rack.chip_count(); ++c) {
    if (rack.built(c)) rack.chip(c).account_until(d.end);
  }
  d.wall_seconds = std::chrono::duration<double>(Clock::now() - s.t0).count();
  d.simulation_seconds = std::chrono::duration<double>(s.t2 - s.t1).count();
  d.delta_cycles = sc_core::sc_delta_count();
  for (int k = 0; k < model::kActivityKinds; ++k) {
    const std::uint64_t n = s.sim->activations()[std::size_t(k)];
    d.activations_by_kind[model::kActivityNames[k]] = n;
    d.activations += n;
  }
  d.fast_forward = plan.fast_forward;
  d.op_head =
      s.calibration && s.models.compute->capabilities.times_op_heads ? plan.chip.op_head : 1.0;
  d.fast_forward_charges_links = rack.network().charges_accounted();
  d.network_has_packets = bool(s.models.network->packet_probe);
  // As if every chip were built: an idle chip not built counts as the idle one that was.
  const std::vector<model::NamedBlock> blocks = rack.all_blocks();
  d.stats = model::collect_stats(Duration(d.end.to_seconds()), blocks);
  d.energy = model::collect_energy(*s.power, Duration(d.end.to_seconds()), blocks);
  d.chip_models_built = std::size_t(rack.chips_built());
  for (const model::Network* net : s.nets) add_totals(d.network, net->totals());
  d.transfer_latencies = rack.transfer_latencies();
  d.packet_latencies = rack.packet_latencies();
  d.hbm_bytes = rack.hbm_bytes();
  d.notes = rack.notes();
  if (s.calibration) {
    d.compute_shapes_simulated = s.calibration->shapes_simulated;
    for (const auto& b : d.stats) {
      if (b.name.rfind("rack.chip", 0) != 0 || b.name.find('.', 5) != std::string::npos) continue;
      if (const model::Stat* st = model::find_stat(b, model::ChipModelStats::ops)) {
        d.compute_ops += std::uint64_t(st->value);
      }
      if (const model::Stat* st = model::find_stat(b, model::ChipStats::ops_extrapolated)) {
        d.compute_ops_extrapolated += std::uint64_t(st->value);
      }
    }
    d.calibration_seconds = std::chrono::duration<double>(s.tc - s.t0).count();
    d.calibration_from = s.origin.from_cache ? "cache" : "simulated";
    d.calibration_cache_key = s.origin.key;
    d.calibration_cache_file = s.origin.file;
    d.calibration_ops_simulated = s.origin.ops_simulated;
    d.calibration_ops_from_cache = s.origin.ops_from_cache;
  }
  if (s.flow_calibration) {
    d.flow_calibration = s.flow_calibration->provenance;
    d.flow_calibration_from = s.flow_calibration->from;
    d.flow_calibration_file = s.flow_calibration->cache_file;
    d.flow_calibration_seconds = s.flow_calibration->wall_time_s;
  }
  d.transfers = rack.transfer_samples();
  d.messages_fast_forwarded = rack.messages_accounted();
  d.samples = std::move(s.probes.samples);
  d.link_names = std::move(s.probes.link_names);
  d.packets = std::move(s.probes.packets);
  d.sample_interval_s = s.probes.interval.to_seconds();
  d.peak_power_window_s = cfg.sim.peak_power_window.si;
  if (s.probes.peak) {
    d.peak_power_length_s = s.probes.peak->length_s();
    d.peak_dynamic_w = s.probes.peak->peak_watts();
  }
  // Every simulated UltraServer's fabric, and the scale-out network as simulated.
  d.fabric_capacity_bytes_per_s = capacity(plan.topology) * double(plan.simulated_ultraservers);
  if (plan.folded) d.fabric_capacity_bytes_per_s += capacity(plan.folded->topology());
  if (plan.scale_out_topology) d.fabric_capacity_bytes_per_s += capacity(*plan.scale_out_topology);
  d.chip_tdp_w = plan.chip.params.tdp.si;
  d.fabric_max_dynamic_w = max_dynamic_power(plan.topology) * double(plan.simulated_ultraservers);
  if (plan.folded) d.fabric_max_dynamic_w += max_dynamic_power(plan.folded->topology());
  if (plan.scale_out_topology) d.fabric_max_dynamic_w += max_dynamic_power(*plan.scale_out_topology);
  d.peak_helper_processes = rack.peak_helper_processes();
  for (int c = 0; c < rack.chip_count(); ++c) {
    if (const auto* tile = dynamic_cast<const model::Chip*>(&rack.chip_or_stand_in(c))) {
      d.core_workers += tile->workers();
      d.most_core_workers = std::max(d.most_core_workers, tile->most_workers_on_a_core());
      d.programs_waited_for_workers += tile->programs_waited();
    }
  }
  logger("run")->debug("core workers: {} threads, at most {} on a core, {} programs waited",
                       d.core_workers, d.most_core_workers, d.programs_waited_for_workers);
  if (d.programs_waited_for_workers > 0) {
    logger("run")->warn(
        "{} core programs waited for a worker thread of their core ({} threads in all, "
        "/sim/core_workers = {}): they started later than with more threads",
        d.programs_waited_for_workers, d.core_workers, cfg.sim.core_workers);
  }
  d.first_tier_chips = plan.topology.first_tier_chips();
  for (int c = 0; c < rack.chip_count(); ++c) {
    d.chip_energy.push_back(
        model::collect_energy(*s.power, Duration(d.end.to_seconds()), &rack.chip_or_stand_in(c)));
  }
  for (const model::Network* net : s.nets) {
    const auto e = model::collect_energy(*s.power, Duration(d.end.to_seconds()), as_object(net));
    d.fabric_energy.dynamic = d.fabric_energy.dynamic + e.dynamic;
    d.fabric_energy.static_ = d.fabric_energy.static_ + e.static_;
    for (const auto& [k, j] : e.by_category_joules) d.fabric_energy.by_category_joules[k] += j;
  }
  logger("run")->info("step {:.3f} ms simulated in {:.2f} s", d.end.to_seconds() * 1e3,
                      d.wall_seconds);
  return d;
}

}  // namespace trnsim::run
