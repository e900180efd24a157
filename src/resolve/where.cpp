// SPDX-License-Identifier: MIT
#include "trnsim/resolve/where.hpp"

#include <fmt/format.h>

#include "trnsim/config/schema.hpp"
#include "trnsim/error.hpp"

namespace trnsim::resolve {

void Where::fail(const std::string& pointer, std::string_view message) const {
  std::string written = pointer;
  std::string via;
  if (auto it = aliases_.find(pointer); it != aliases_.end()) {
    written = it->second;
    via = fmt::format(" (applied as {})", pointer);
  }
  const std::string msg = fmt::format("{}{}", message, via);
  if (prov_) throw ConfigError(config::located(*prov_, written, msg));
  throw ConfigError(fmt::format("{}: {}", written, msg));
}

void Where::fail(std::initializer_list<std::string> pointers, std::string_view message) const {
  for (const auto& p : pointers) {
    if (prov_ && prov_->source_of(p).rfind("--set", 0) == 0) fail(p, message);
  }
  fail(*pointers.begin(), message);
}

}  // namespace trnsim::resolve
