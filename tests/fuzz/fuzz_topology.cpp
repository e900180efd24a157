// SPDX-License-Identifier: MIT
// The topology builder on a rack config's /rack/topology (or on the whole input when it has
// none), with its own chip section when there is one. A 512 KiB route-table budget admits every
// preset (the 144-chip Gen2 UltraServer needs 318 KB) and refuses larger topologies at once:
// within the CLI's budget a 48x48 torus (64 MB of tables) took 23 s per execution here, and the
// corpus drifts towards such inputs, which brought long runs down to ~100 executions per second.
#include "fuzz_common.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trnsim;
  return fuzz::accept_input_errors([&] {
    const auto j = config::parse_json<ConfigError>(fuzz::text(data, size), "fuzz.json");
    config::Provenance prov;
    prov.record("", "fuzz.json");
    const bool rack = j.is_object() && j.contains("rack") && j["rack"].is_object() &&
                      j["rack"].contains("topology");
    const auto& spec_json = rack ? j["rack"]["topology"] : j;
    topo::TopologySpec spec;
    config::JsonReader::read(spec_json, rack ? "/rack/topology" : "", prov, spec);
    const auto t = topo::build_topology(spec, nullptr,
                                        {&prov, rack ? "/rack/topology" : "", 512u << 10});
    (void)topo::summarize(t);
  });
}
