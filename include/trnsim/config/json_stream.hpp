// SPDX-License-Identifier: MIT
// Parsing a large JSON document without keeping all of it: the elements of chosen arrays are
// handed to a sink as soon as each is complete (the ops of a trace).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "trnsim/config/schema.hpp"

namespace trnsim::config {

// parse_json_checked() (the same checks and messages), handing each element of the arrays at
// `path` to `take` as soon as it is complete, with its JSON pointer, instead of keeping it in the
// document, where those arrays stay empty: memory in proportion to one element, not to the
// document. `path` names the array elements level by level from the root: an object's key, or
// "*" for an array's element, e.g. {"rank_ops", "*", "ops", "*"}.
struct ElementSink {
  std::vector<std::string> path;
  std::function<void(Json&& element, const std::string& pointer)> take;
};
Json parse_json_checked(const std::string& text, const std::string& origin, const ElementSink& sink);

}  // namespace trnsim::config
