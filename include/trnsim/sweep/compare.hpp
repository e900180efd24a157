// SPDX-License-Identifier: MIT
// `trnsim compare A B`: two run directories (`trnsim run --out`) or two sweep directories: every
// headline figure of A and B, their difference and ratio, and the configuration keys that differ.
#pragma once

#include <string>

#include "trnsim/sweep/sweep.hpp"

namespace trnsim::sweep {

// The comparison as JSON: {"kind": "run"|"sweep", "a", "b", "rows": [{"point"?, "metric", "unit",
// "a", "b", "diff", "ratio"}], "config_differences": [{"pointer", "a", "b"}], "only_in_a",
// "only_in_b"}. SweepError when a directory is neither kind, or the two are of different kinds.
Json compare(const std::string& a, const std::string& b);

// The same as aligned text tables.
std::string compare_text(const Json& comparison);

}  // namespace trnsim::sweep
