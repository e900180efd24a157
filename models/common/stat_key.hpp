// SPDX-License-Identifier: MIT
// A statistic declared once: its name, unit and description, written as a constexpr StatKey in
// the header of the block that counts it (a `XStats` struct per block). The block registers its
// statistics from these keys, the registry documents each implementation from them (`trnsim
// list-types`) and the report and the run read values by them, so no statistic name is spelled
// anywhere else. No SystemC here: readers of statistics need not include a block.
#pragma once

#include <string_view>

namespace trnsim::model {

// The one vocabulary of statistic units (stats.json writes the symbol).
enum class StatUnit { count, bytes, seconds, bytes_per_second, fraction, flits, packets, banks,
                      bytes_per_partition };
std::string_view unit_symbol(StatUnit u);

struct StatKey {
  // One "{}" makes a family: one statistic per port or engine, the "{}" replaced by its name
  // (in the description too) when the block registers it.
  std::string_view name;
  StatUnit unit = StatUnit::count;
  std::string_view description;

  // The same statistic (name and unit) as one implementation describes it: a role declares the
  // keys every implementation of it counts (MemoryStats), each implementation says what it
  // counts exactly.
  constexpr StatKey described(std::string_view d) const { return {name, unit, d}; }
  constexpr bool is_family() const { return name.find("{}") != std::string_view::npos; }
  // True when the statistic named `stat` is this one, or a member of this family.
  constexpr bool matches(std::string_view stat) const {
    const auto at = name.find("{}");
    if (at == std::string_view::npos) return stat == name;
    const std::string_view head = name.substr(0, at), tail = name.substr(at + 2);
    return stat.size() >= head.size() + tail.size() && stat.starts_with(head) &&
           stat.ends_with(tail);
  }
};

}  // namespace trnsim::model
