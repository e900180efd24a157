// SPDX-License-Identifier: MIT
// The filter of a sweep: a small expression over axis names, such as
// "chips_per_server * servers == 144 && hbm_bandwidth >= 4TB/s". Values with units compare by
// their SI value, so "256GB/s" > "0.2TB/s".
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace trnsim::sweep {

class Filter {
 public:
  // Parses `text`; `names` are the variables it may use. Throws SweepError prefixed by `where`.
  Filter(const std::string& text, const std::vector<std::string>& names, std::string where);
  ~Filter();
  Filter(Filter&&) noexcept;
  // True when the point whose axis values are `vars` (by name) is kept.
  bool keeps(const std::map<std::string, nlohmann::json>& vars) const;

  struct Node;

 private:
  std::unique_ptr<Node> root_;
  std::string where_;
};

// The SI value of a sweep value: a JSON number, or a string with a unit ("4.9TB/s", "256KiB",
// "150ns", "2.4GHz", "700W", "1pJ/bit"); false when it is neither.
bool numeric_value(const nlohmann::json& v, double& out);

}  // namespace trnsim::sweep
