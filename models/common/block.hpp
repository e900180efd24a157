// SPDX-License-Identifier: MIT
// What every SystemC hardware block shares: conversion between trnsim quantities and sc_time,
// statistics with units, the actions energy is counted by (power.hpp), and a bandwidth-reservation
// helper.
//
// Event granularity (see docs/architecture.md): blocks wake only when they have work. A resource
// that moves data (HBM pseudo-channel, DMA engine, link direction) is a Timeline: a transfer
// reserves the resource from max(now, free_at) for size/bandwidth, and the caller waits until its
// reservation ends. Requests are split into chunks (DMA packets, fabric packets) so that
// concurrent users interleave; one chunk is one reservation, not one event per byte or cycle.
#pragma once

#include <systemc>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "common/activity.hpp"
#include "common/stat_key.hpp"
#include "common/power.hpp"
#include "trnsim/units.hpp"

namespace trnsim::model {

// sc_time(double, unit) looks up the kernel's time parameters on every call, which showed in
// profiles of the DMA and fabric hot paths. With the default 1 ps resolution this is the same
// rounding (value = int64(ps + 0.5)) without the lookup.
inline sc_core::sc_time to_sc(Duration d) {
  static const bool ps_resolution =
      sc_core::sc_get_time_resolution() == sc_core::sc_time(1, sc_core::SC_PS);
  const double ps = d.si * 1e12;
  if (ps_resolution && ps > 0) {
    return sc_core::sc_time::from_value(sc_core::sc_time::value_type(std::int64_t(ps + 0.5)));
  }
  return sc_core::sc_time(ps, sc_core::SC_PS);
}
inline Duration from_sc(const sc_core::sc_time& t) { return Duration(t.to_seconds()); }
inline sc_core::sc_time now() { return sc_core::sc_time_stamp(); }

// One statistic's value, with the name, unit and description of its key (stat_key.hpp).
struct Stat {
  std::string name;
  StatUnit unit = StatUnit::count;
  std::string description;
  double value = 0;
  Stat& operator+=(double v) {
    value += v;
    return *this;
  }
  void max_with(double v) {
    if (v > value) value = v;
  }
};

class StatGroup {
 public:
  // Registers the statistic of `key`; the reference stays valid for the life of the group.
  Stat& add(const StatKey& key);
  // Registers the member `member` of the family `key` ("port{}_bytes" with "3": "port3_bytes").
  Stat& add(const StatKey& key, std::string_view member);
  const std::deque<Stat>& all() const { return stats_; }
  // The statistic of `key` (a single one, not a family), or null when the block does not count
  // it; InternalError when it counts one of that name in another unit.
  const Stat* find(const StatKey& key) const;

 private:
  std::deque<Stat> stats_;
};

// Base of every hardware block: an sc_module with statistics, its actions counted for energy and a
// rated static power. collect_stats() and collect_energy() walk the SystemC hierarchy to find them.
class Block : public sc_core::sc_module {
 public:
  explicit Block(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {}
  StatGroup& stats() { return stats_; }
  const StatGroup& stats() const { return stats_; }
  // The meter of `action`, rated at `per_unit_j` joules per unit of the action (power.hpp). Keep
  // the reference for hot paths (a map lookup per action is measurable); it is stable for the
  // life of the block. Create it on first use so idle blocks report no category.
  ActionMeter& meter(Action action, double per_unit_j) {
    auto [it, added] = meters_.try_emplace(action);
    if (added) {
      it->second.per_unit_j = per_unit_j;
      meters_added_.fetch_add(1, std::memory_order_relaxed);
    }
    return it->second;
  }
  // How many meters every block of the process has created so far: a MeterList whose count
  // differs lists its blocks' meters again.
  static std::uint64_t meters_added() { return meters_added_.load(std::memory_order_relaxed); }
  const std::map<Action, ActionMeter>& meters() const { return meters_; }
  // Sets every meter's quantity and rated energy back to zero (its rate and its place stay, so
  // references kept by hot paths stay valid): for a measurement that counts from zero, as the
  // op-level calibration counts each op (src/run/calibrate.cpp).
  void zero_meters() {
    for (auto& [action, m] : meters_) {
      m.quantity = 0;
      m.rated_j = 0;
    }
  }
  // The rated static power (leakage, idle) the `table` power model charges for all of a run.
  void set_static_power(Power p) { static_power_ = p; }
  Power static_power() const { return static_power_; }
  // Counts this block's process activations in the run's Simulation (activity.hpp).
  ActivityCounter& activity() { return activity_; }
  // The fraction of `elapsed` this block was busy, for blocks that serve one thing at a time
  // (links, engines, HBM buses); none for the others.
  virtual std::optional<double> utilisation(Duration elapsed) const {
    (void)elapsed;
    return std::nullopt;
  }
  // What the meters are behind or ahead of at `t` in dynamic energy: a block that counts a piece
  // of work's actions at one instant, though the work spans a time, returns the energy of what
  // was done by `t` and is not counted yet (positive) less what is counted for work after `t`
  // (negative). Blocks that count as the work happens return 0. The run's power samples add it
  // (dynamic_energy_at), so that power over a short interval is not a whole op's or transfer's
  // energy landing in it; the totals of a run, taken at its end, never need it.
  virtual Energy dynamic_unmetered(const PowerModel& power, const sc_core::sc_time& t) const {
    (void)power;
    (void)t;
    return Energy{};
  }
  // True for a block that overrides dynamic_unmetered() (it must say so here as well): the
  // others return 0 there, and MeterList, which adds it up at every sample, asks only these.
  virtual bool has_unmetered() const { return false; }

 private:
  ActivityCounter activity_;
  StatGroup stats_;
  std::map<Action, ActionMeter> meters_;
  Power static_power_{};
  static inline std::atomic<std::uint64_t> meters_added_{0};
};

// The statistics of one block under its hierarchical name ("rack.chip17.nc3.dma").
struct BlockStats {
  std::string name;
  std::vector<Stat> stats;
  std::optional<double> utilisation;  // over the elapsed time collect_stats() was given
};
// The statistic of `key` in `b` (as StatGroup::find).
const Stat* find_stat(const BlockStats& b, const StatKey& key);
// Every Block under `root` (or under every top-level object when root is null) that declares
// statistics, ordered by name.
std::vector<BlockStats> collect_stats(Duration elapsed, const sc_core::sc_object* root = nullptr);

struct EnergyReport {
  Energy dynamic{};
  Energy static_{};
  std::map<std::string, double> by_category_joules;  // dynamic energy by action_name()
  Energy total() const { return dynamic + static_; }
};
// The energy `power` prices for the blocks' counted actions and for `elapsed` of static power.
EnergyReport collect_energy(const PowerModel& power, Duration elapsed,
                            const sc_core::sc_object* root = nullptr);
// What the blocks under `root` counted, summed by action in the order collect_energy() sums it,
// before any power model prices it (per_unit_j unused).
std::map<Action, ActionMeter> collect_actions(const sc_core::sc_object* root);
// Block::zero_meters() of every Block under `root`.
void zero_actions(sc_core::sc_object* root);
// Every Block under `root` (or under every top-level object when root is null), in the order
// collect_stats() and collect_energy() visit them: for figures read many times during a run,
// where walking the object tree (a dynamic_cast per object) cost a tenth of a rack run.
std::vector<const Block*> blocks_under(const sc_core::sc_object* root);
// A block as a report names it: its own name, or that of a block it stands in for (a chip the
// rack did not build is reported as a copy of one idle chip it did, src/run/rack.hpp).
struct NamedBlock {
  const Block* block = nullptr;
  std::string name;
};
// collect_stats() and collect_energy() over `blocks` in the given order (under the given names),
// with the same arithmetic, so that a list in walk order gives the same figures to the bit.
std::vector<BlockStats> collect_stats(Duration elapsed, const std::vector<NamedBlock>& blocks);
EnergyReport collect_energy(const PowerModel& power, Duration elapsed,
                            const std::vector<NamedBlock>& blocks);
// The dynamic energy of `blocks` so far, summed in the order collect_energy() sums it (so the
// two agree to the bit).
Energy dynamic_energy(const PowerModel& power, const std::vector<const Block*>& blocks);
// The dynamic energy of the work `blocks` did by `t` (now, during a run): dynamic_energy() with
// each block's dynamic_unmetered(); for power over time.
Energy dynamic_energy_at(const PowerModel& power, const std::vector<const Block*>& blocks,
                         const sc_core::sc_time& t);

// dynamic_energy_at() of a fixed list of blocks, read many times (the run's power samples): the
// blocks' meters in one flat list in the order dynamic_energy() sums them, so that a sample
// does not walk each block's map of meters (with hundreds of idle link blocks, most of a
// sample). The list is made again when any block has created a meter since (meters are created
// on first use); the sums are the same, in the same order, to the bit.
class MeterList {
 public:
  MeterList() = default;
  explicit MeterList(std::vector<const Block*> blocks);
  // == dynamic_energy_at(power, blocks, t), bit for bit.
  Energy dynamic_at(const PowerModel& power, const sc_core::sc_time& t);
  const std::vector<const Block*>& blocks() const { return blocks_; }

 private:
  struct Entry {
    const Block* block;
    Action action;
    const ActionMeter* meter;  // a std::map node: stable for the life of the block
  };
  std::vector<const Block*> blocks_;
  std::vector<const Block*> unmetered_;  // those of blocks_ with has_unmetered(), in order
  std::vector<Entry> meters_;
  std::uint64_t listed_at_ = ~std::uint64_t(0);  // Block::meters_added() when listed
};

// A resource that serves one transfer at a time at a fixed bandwidth (or for a given duration),
// first come, first served in simulated time.
class Timeline {
 public:
  // Reserves the resource for `d` starting no earlier than `earliest`; returns the end time.
  sc_core::sc_time reserve(const sc_core::sc_time& earliest, const sc_core::sc_time& d) {
    const sc_core::sc_time start = earliest > free_at_ ? earliest : free_at_;
    free_at_ = start + d;
    busy_ += d;
    return free_at_;
  }
  const sc_core::sc_time& free_at() const { return free_at_; }
  const sc_core::sc_time& busy() const { return busy_; }

 private:
  sc_core::sc_time free_at_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
};

}  // namespace trnsim::model
