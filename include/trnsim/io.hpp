// SPDX-License-Identifier: MIT
// Output helpers: results are written atomically (temporary file, then rename), so a failed run
// never leaves a partial output file behind.
#pragma once

#include <string>

namespace trnsim {

// Writes `content` to `path` through `path.tmp.<pid>` and a rename. Throws InputError when the
// directory cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace trnsim
