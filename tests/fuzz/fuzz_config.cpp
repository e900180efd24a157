// SPDX-License-Identifier: MIT
// The config loader: JSON text, then --set assignments, one per line after the first NUL byte.
// Runs in configs/racks so that "extends" of the seeds resolve.
#include "fuzz_common.hpp"
#include "trnsim/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in = trnsim::fuzz::text(data, size);
  const auto nul = in.find('\0');
  std::vector<std::string> sets;
  if (nul != std::string::npos) {
    std::string rest = in.substr(nul + 1), line;
    for (char c : rest) {
      if (c == '\n') {
        sets.push_back(line);
        line.clear();
      } else {
        line += c;
      }
    }
    if (!line.empty()) sets.push_back(line);
  }
  return trnsim::fuzz::accept_input_errors([&] {
    const auto loaded = trnsim::config::load_config_text(in.substr(0, nul), "fuzz.json", sets);
    (void)trnsim::config::to_json(loaded.config).dump();
  });
}
