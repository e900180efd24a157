// SPDX-License-Identifier: MIT
// Files for end-to-end tests: reading one whole, and a fresh scratch directory per test process.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace trnsim::test {

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An empty directory <tmp>/trnsim-test-<prefix>-<name>-<pid>.
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("trnsim-test-" + prefix + "-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace trnsim::test
