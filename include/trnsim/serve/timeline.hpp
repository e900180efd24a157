// SPDX-License-Identifier: MIT
// timeline.json of a serving run (`trnsim serve --out`, docs/serving.md#timeline): Chrome/Perfetto
// trace events, as `trnsim run` writes for a step. A "replicas" process with one track per replica
// of its iterations (decode sequences, prefill tokens, batch, KV blocks, queue), and a "requests"
// process with one track per request of its spans: queue (arrival to first scheduled), prefill
// (to the first token) and decode (to the last).
#pragma once

#include <cstddef>
#include <string>

#include "trnsim/serve/engine.hpp"

namespace trnsim::serve {

struct ServeTimelineOptions {
  std::size_t max_iterations = 200000;  // iteration events, the first in time
  std::size_t max_requests = 10000;     // requests drawn (3 spans each), the first by id
};

// The trace as JSON text. Its "otherData" says how many iterations and requests it holds of
// the run's (the engine keeps at most EngineOptions::max_iteration_records iterations).
std::string timeline_json(const EngineResult& r, const ServeTimelineOptions& o = {});

}  // namespace trnsim::serve
