// SPDX-License-Identifier: MIT
// The topology builder on a rack config's /rack/topology (or on the whole input when it has
// none), with its own chip section when there is one. A 64 MB budget keeps route tables small.
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
                                        {&prov, rack ? "/rack/topology" : "", 64u << 20});
    (void)topo::summarize(t);
  });
}
