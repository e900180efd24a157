// SPDX-License-Identifier: MIT
// Presets by name (`--config trn3-gen2-ultraserver`), the list `trnsim presets` prints, and
// where an installed trnsim finds its data (docs/report.md, "Installing").
#pragma once

#include <string>
#include <vector>

namespace trnsim::cli {

struct Preset {
  std::string name;  // file name without .json
  std::string kind;  // "rack", "cluster", "chip" or "trace"
  std::string path;
  std::string title;  // the preset's own "name" of its rack or chip
  std::string description;  // the file's "description" (a trace: its model and ranks)
};

// The presets under data_dir()/configs/racks, /clusters and /chips, in that order, by name.
std::vector<Preset> list_presets();

// `given` when it names a file; else the preset of that name (racks, clusters, chips). Throws
// ConfigError naming the nearest preset when neither exists.
std::string resolve_preset(const std::string& given);

// The bundled traces under data_dir()/traces, by name (the file name without .json or .json.gz).
std::vector<Preset> list_traces();

// `given` when something of that name exists (a file or a Chakra prefix); else the bundled trace
// of that name (`--trace mixtral-moe-16`); else `given`, for the trace reader to refuse.
std::string resolve_trace(const std::string& given);
// The bundled trace nearest to `given`, for an error's "did you mean"; "" if none is near.
std::string nearest_trace(const std::string& given);

// The preset file and every file it extends, in the order they are read.
std::vector<std::string> preset_files(const std::string& path);

// When TRNSIM_DATA_DIR is unset and `<dir of the executable>/../share/trnsim/configs` exists
// (an installed trnsim), points TRNSIM_DATA_DIR there.
void use_installed_data_dir();

}  // namespace trnsim::cli
