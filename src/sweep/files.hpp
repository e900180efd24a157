// SPDX-License-Identifier: MIT
// Reading the files of sweep directories (plans, statuses, reports); errors name the file.
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "trnsim/config/schema.hpp"
#include "trnsim/sweep/sweep.hpp"

namespace trnsim::sweep::detail {

// The bytes of `path`; SweepError when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SweepError(fmt::format("{}: cannot read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `path` as JSON; SweepError with line and column when it is not JSON.
inline Json read_json(const std::string& path) {
  return config::parse_json<SweepError>(read_text(path), path);
}

}  // namespace trnsim::sweep::detail
