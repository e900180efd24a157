// SPDX-License-Identifier: MIT
// Small hand-built topologies and fabric parameters for the network tests (packet and flow),
// so that both tiers are checked on the very same cases.
#pragma once

#include <string>

#include "trnsim/params/fabric.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::test {

inline topo::NodeSpec node(const std::string& id, topo::NodeKind kind, int ports = 0,
                           Duration latency = Duration{}) {
  topo::NodeSpec n;
  n.id = id;
  n.kind = kind;
  n.ports = ports;
  n.latency = latency;
  return n;
}

inline topo::LinkSpec link(const std::string& a, const std::string& b, double gbps,
                           double latency_ns) {
  topo::LinkSpec l;
  l.a = a;
  l.b = b;
  l.bandwidth = Bandwidth(gbps * 1e9);
  l.latency = Duration(latency_ns * 1e-9);
  return l;
}

inline topo::Topology build(const topo::TopologySpec& spec) {
  return topo::build_topology(spec, nullptr, topo::SpecOrigin{});
}

// Two chips joined by one 100 GB/s, 100 ns link.
inline topo::Topology two_chips() {
  topo::TopologySpec s;
  s.nodes = {node("a", topo::NodeKind::chip), node("b", topo::NodeKind::chip)};
  s.links = {link("a", "b", 100, 100)};
  return build(s);
}

// 4x4 torus of 128 GB/s, 29 ns links, chips forwarding in 50 ns (the trn2-instance preset).
inline topo::Topology torus4x4() {
  topo::TopologySpec s;
  topo::TorusGen t;
  t.dims = {4, 4};
  topo::LinkClass lc;
  lc.bandwidth = Bandwidth(128e9);
  lc.latency = Duration(29e-9);
  t.dim_links = {lc, lc};
  t.forward_latency = Duration(50e-9);
  s.torus = t;
  return build(s);
}

// 256 B flits, 16 B headers, 500 ns per end; packets of `packet` bytes.
inline config::FabricParams fabric_params(double packet = 4096, const std::string& model = "") {
  config::FabricParams p;
  p.model = model;
  p.packet_bytes = Bytes(packet);
  p.flit_bytes = Bytes(256);
  p.header_bytes = Bytes(16);
  p.endpoint_overhead = Duration(500e-9);
  return p;
}

}  // namespace trnsim::test
