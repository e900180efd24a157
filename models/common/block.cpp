// SPDX-License-Identifier: MIT
#include "block.hpp"

#include <algorithm>
#include <vector>

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

Stat& StatGroup::add(std::string name, StatUnit unit, std::string description) {
  stats_.push_back(Stat{std::move(name), unit, std::move(description), 0.0});
  return stats_.back();
}

namespace {

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

std::vector<BlockStats> collect_stats(Duration elapsed, const sc_core::sc_object* root) {
  std::vector<BlockStats> out;
  walk(root, [&](const Block& b) {
    if (b.stats().all().empty()) return;
    const auto& all = b.stats().all();
    out.push_back({b.name(), std::vector<Stat>(all.begin(), all.end()), b.utilisation(elapsed)});
  });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& c) { return a.name < c.name; });
  return out;
}

EnergyReport collect_energy(const PowerModel& power, Duration elapsed,
                            const sc_core::sc_object* root) {
  EnergyReport r;
  walk(root, [&](const Block& b) {
    for (const auto& [action, m] : b.meters()) {
      const Energy e = power.dynamic(b, action, m);
      r.by_category_joules[std::string(action_name(action))] += e.si;
      r.dynamic = r.dynamic + e;
    }
    r.static_ = r.static_ + power.static_energy(b, elapsed);
  });
  return r;
}

std::map<Action, ActionMeter> collect_actions(const sc_core::sc_object* root) {
  std::map<Action, ActionMeter> out;
  walk(root, [&](const Block& b) {
    for (const auto& [action, m] : b.meters()) out[action].count_priced(m.quantity, m.rated_j);
  });
  return out;
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

}  // namespace trnsim::model
