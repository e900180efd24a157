// SPDX-License-Identifier: MIT
// Named loggers per subsystem ("config", "topology", "chip", "fabric", "replay"), all on stderr.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace trnsim {

// The logger of a subsystem, created on first use with the current global level.
std::shared_ptr<spdlog::logger> logger(const std::string& subsystem);

// Sets the level of every logger ("trace", "debug", "info", "warn", "error", "off").
// Throws InputError for an unknown level name.
void set_log_level(const std::string& level);

}  // namespace trnsim
