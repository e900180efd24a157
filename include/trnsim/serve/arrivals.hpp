// SPDX-License-Identifier: MIT
// Requests of a serving run (docs/serving.md): read from a request file (the Azure LLM inference
// trace 2023 .csv, a Mooncake .jsonl, or arrival_s,input_tokens,output_tokens .csv), Poisson at a
// rate, or a closed loop of users; lengths fixed or drawn with a seed from a request file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trnsim/serve/engine.hpp"
#include "trnsim/serve/spec.hpp"

namespace trnsim::serve {

// Every request of a file, arrival times from its first request's, multiplied by `time_scale`;
// InputError "path:line: what was expected" on bad input.
std::vector<Request> read_request_file(const std::string& path, double time_scale);

// The workload of `a` for `count` requests. `file` is read when `a` needs it (kind file, or drawn
// lengths); `origin` names the spec in errors.
Workload make_workload(const ArrivalParams& a, std::uint64_t count, const std::string& origin);

// A uniform double in [0, 1) from a 64-bit draw (the same on every platform).
double unit_draw(std::uint64_t bits);

}  // namespace trnsim::serve
