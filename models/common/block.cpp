// SPDX-License-Identifier: MIT
#include "block.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "trnsim/error.hpp"

namespace trnsim::model {

std::string_view unit_symbol(StatUnit u) {
  switch (u) {
    case StatUnit::count: return "count";
    case StatUnit::bytes: return "B";
    case StatUnit::seconds: return "s";
    case StatUnit::bytes_per_second: return "B/s";
    case StatUnit::fraction: return "fraction";
    case StatUnit::flits: return "flit";
    case StatUnit::packets: return "packet";
    case StatUnit::banks: return "bank";
    case StatUnit::bytes_per_partition: return "B/partition";
  }
  return "?";
}

Stat& StatGroup::add(const StatKey& key) {
  if (key.is_family()) {
    throw InternalError(fmt::format("statistic family {} registered without a member", key.name));
  }
  stats_.push_back(Stat{std::string(key.name), key.unit, std::string(key.description), 0.0});
  return stats_.back();
}

Stat& StatGroup::add(const StatKey& key, std::string_view member) {
  if (!key.is_family()) {
    throw InternalError(fmt::format("statistic {} is not a family (given member {})", key.name,
                                    member));
  }
  auto fill = [&](std::string_view text) {
    std::string out(text);
    if (const auto at = out.find("{}"); at != std::string::npos) out.replace(at, 2, member);
    return out;
  };
  stats_.push_back(Stat{fill(key.name), key.unit, fill(key.description), 0.0});
  return stats_.back();
}

namespace {

template <class Stats>
const Stat* find_in(const Stats& stats, const StatKey& key, std::string_view where) {
  if (key.is_family()) {
    throw InternalError(fmt::format("{}: statistic family {} looked up as one statistic", where,
                                    key.name));
  }
  for (const Stat& s : stats) {
    if (s.name != key.name) continue;
    if (s.unit != key.unit) {
      throw InternalError(fmt::format("{}: statistic {} counts {}, its key says {}", where,
                                      s.name, unit_symbol(s.unit), unit_symbol(key.unit)));
    }
    return &s;
  }
  return nullptr;
}

template <class F>
void walk(const sc_core::sc_object* root, F&& f) {
  std::vector<sc_core::sc_object*> todo;
  if (root) {
    todo.push_back(const_cast<sc_core::sc_object*>(root));
  } else {
    const auto& tops = sc_core::sc_get_top_level_objects();
    todo.assign(tops.rbegin(), tops.rend());
  }
  while (!todo.empty()) {
    sc_core::sc_object* o = todo.back();
    todo.pop_back();
    if (const auto* b = dynamic_cast<const Block*>(o)) f(*b);
    const auto& kids = o->get_child_objects();
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(*it);
  }
}

}  // namespace

const Stat* StatGroup::find(const StatKey& key) const { return find_in(stats_, key, "a block"); }

const Stat* find_stat(const BlockStats& b, const StatKey& key) {
  return find_in(b.stats, key, b.name);
}

namespace {

void add_stats(std::vector<BlockStats>& out, const Block& b, std::string name, Duration elapsed) {
  if (b.stats().all().empty()) return;
  const auto& all = b.stats().all();
  out.push_back(
      {std::move(name), std::vector<Stat>(all.begin(), all.end()), b.utilisation(elapsed)});
}

void sort_by_name(std::vector<BlockStats>& out) {
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& c) { return a.name < c.name; });
}

void add_energy(EnergyReport& r, const PowerModel& power, const Block& b, Duration elapsed) {
  for (const auto& [action, m] : b.meters()) {
    const Energy e = power.dynamic(b, action, m);
    r.by_category_joules[std::string(action_name(action))] += e.si;
    r.dynamic = r.dynamic + e;
  }
  r.static_ = r.static_ + power.static_energy(b, elapsed);
}

}  // namespace

std::vector<BlockStats> collect_stats(Duration elapsed, const sc_core::sc_object* root) {
  std::vector<BlockStats> out;
  walk(root, [&](const Block& b) { add_stats(out, b, b.name(), elapsed); });
  sort_by_name(out);
  return out;
}

std::vector<BlockStats> collect_stats(Duration elapsed, const std::vector<NamedBlock>& blocks) {
  std::vector<BlockStats> out;
  for (const auto& nb : blocks) add_stats(out, *nb.block, nb.name, elapsed);
  sort_by_name(out);
  return out;
}

EnergyReport collect_energy(const PowerModel& power, Duration elapsed,
                            const sc_core::sc_object* root) {
  EnergyReport r;
  walk(root, [&](const Block& b) { add_energy(r, power, b, elapsed); });
  return r;
}

EnergyReport collect_energy(const PowerModel& power, Duration elapsed,
                            const std::vector<NamedBlock>& blocks) {
  EnergyReport r;
  for (const auto& nb : blocks) add_energy(r, power, *nb.block, elapsed);
  return r;
}

std::map<Action, ActionMeter> collect_actions(const sc_core::sc_object* root) {
  std::map<Action, ActionMeter> out;
  walk(root, [&](const Block& b) {
    for (const auto& [action, m] : b.meters()) out[action].count_priced(m.quantity, m.rated_j);
  });
  return out;
}

void zero_actions(sc_core::sc_object* root) {
  walk(root, [](const Block& b) { const_cast<Block&>(b).zero_meters(); });
}

std::vector<const Block*> blocks_under(const sc_core::sc_object* root) {
  std::vector<const Block*> out;
  walk(root, [&](const Block& b) { out.push_back(&b); });
  return out;
}

Energy dynamic_energy(const PowerModel& power, const std::vector<const Block*>& blocks) {
  Energy e{};
  for (const Block* b : blocks) {
    for (const auto& [action, m] : b->meters()) e = e + power.dynamic(*b, action, m);
  }
  return e;
}

Energy dynamic_energy_at(const PowerModel& power, const std::vector<const Block*>& blocks,
                         const sc_core::sc_time& t) {
  Energy e = dynamic_energy(power, blocks);
  for (const Block* b : blocks) e = e + b->dynamic_unmetered(power, t);
  return e;
}

MeterList::MeterList(std::vector<const Block*> blocks) : blocks_(std::move(blocks)) {
  for (const Block* b : blocks_) {
    if (b->has_unmetered()) unmetered_.push_back(b);
  }
}

Energy MeterList::dynamic_at(const PowerModel& power, const sc_core::sc_time& t) {
  if (listed_at_ != Block::meters_added()) {
    listed_at_ = Block::meters_added();
    meters_.clear();
    for (const Block* b : blocks_) {
      for (const auto& [action, m] : b->meters()) meters_.push_back({b, action, &m});
    }
  }
  // The arithmetic of dynamic_energy_at(): every meter in turn, then every block's unmetered.
  Energy e{};
  for (const Entry& x : meters_) e = e + power.dynamic(*x.block, x.action, *x.meter);
  // The other blocks' dynamic_unmetered() is 0: adding it leaves e as it is (e is never -0).
  for (const Block* b : unmetered_) e = e + b->dynamic_unmetered(power, t);
  return e;
}

}  // namespace trnsim::model
