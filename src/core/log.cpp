// SPDX-License-Identifier: MIT
#include "trnsim/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "trnsim/error.hpp"

namespace trnsim {

std::shared_ptr<spdlog::logger> logger(const std::string& subsystem) {
  if (auto l = spdlog::get(subsystem)) return l;
  auto l = spdlog::stderr_color_mt(subsystem);
  l->set_pattern("[%n] %^%l%$: %v");
  l->set_level(spdlog::get_level());
  return l;
}

void set_log_level(const std::string& level) {
  const auto lvl = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when asked for it.
  if (lvl == spdlog::level::off && level != "off") {
    throw InputError(fmt::format(
        "--log-level: expected one of trace, debug, info, warn, error, off, got \"{}\"", level));
  }
  spdlog::set_level(lvl);
  spdlog::apply_all([&](const std::shared_ptr<spdlog::logger>& l) { l->set_level(lvl); });
}

}  // namespace trnsim
