// SPDX-License-Identifier: MIT
// One `--set` assignment applied to JSON, as load_config applies them (config.hpp); the serving
// spec (serve/spec.hpp) takes --set this way too.
#pragma once

#include <string>

#include "trnsim/config/schema.hpp"

namespace trnsim::config {

// Applies "a.b=value" or "/a/b=value" to `root` (the value is JSON when it parses as JSON, else a
// string), recording it in `prov`; ConfigError for a malformed one.
void apply_set(Json& root, const std::string& assignment, Provenance& prov);

}  // namespace trnsim::config
