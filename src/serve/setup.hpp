// SPDX-License-Identifier: MIT
// What serve() and serve --estimate both read before simulating: the spec, its rack, the model and
// layout (one per pool), the replicas and the KV capacity, with every refusal of a bad spec. One
// place, so the estimate refuses what the run refuses (serve.cpp's read_setup).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "trnsim/config/config.hpp"
#include "trnsim/infer/iteration.hpp"
#include "trnsim/infer/memory.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/serve/engine.hpp"
#include "trnsim/serve/serve.hpp"
#include "trnsim/serve/spec.hpp"
#include "trnsim/serve/transfer.hpp"

namespace trnsim::serve {

struct ServeSetup {
  ServeSpec spec;
  config::Provenance prov;  // for errors found after reading: they name the spec
  std::string rack_path;
  config::LoadedConfig cfg;
  std::optional<resolve::RackPlan> plan;  // set by read_setup (a RackPlan has no empty state)
  infer::IterationSpec it;      // model, layout (the pools' one), dtypes, runtime, seed
  std::string layout_ptr;       // where the layout was given (/layout or a pool's)
  int per_chip = 1;             // ranks per chip
  std::size_t chips = 0;        // of the rack
  std::uint64_t replicas = 0;   // both pools' when disaggregated
  std::uint64_t prefill_replicas = 0;
  std::uint64_t ranks = 0;      // replicas x the layout's ranks
  infer::KvCapacity cap;
  EngineOptions eo;             // the scheduler, replicas and KV blocks
  // Disaggregated: `it`, `layout_ptr` and `cap` are the prefill pool's; these the decode pool's
  // (the same layout unless the spec gives it another), the ranks of each pool and where the
  // KV transfers run.
  infer::IterationSpec decode_it;
  std::string decode_layout_ptr;
  infer::KvCapacity decode_cap;
  std::uint64_t prefill_ranks = 0, decode_ranks = 0;
  std::optional<TransferPath> transfer;
};

// ConfigError naming the spec and pointer for a bad spec, rack, model, layout, dtype, replica
// count or a model that does not fit.
ServeSetup read_setup(const ServeOptions& o);

}  // namespace trnsim::serve
