// SPDX-License-Identifier: MIT
// The topology section of a rack config, as written in JSON: either an explicit graph (nodes and links) or one named
// generator with its parameters. Expanded and validated by build_topology() (topology.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::topo {

using config::AtLeast;
using config::AtMost;
using config::InRange;
using config::Positive;
using config::Required;

enum class NodeKind { chip, switch_, nic };
constexpr auto enum_names(NodeKind) {
  return std::array{std::pair{NodeKind::chip, std::string_view("chip")},
                    std::pair{NodeKind::switch_, std::string_view("switch")},
                    std::pair{NodeKind::nic, std::string_view("nic")}};
}

// A class of link used by the generators: `count` parallel links of these properties.
struct LinkClass {
  Bandwidth bandwidth{};  // per direction
  Duration latency{};     // PHY/FEC at both ends plus wire, end to end
  int lanes = 0;          // informational, and checked against a node's lane budget
  int count = 1;          // parallel links between the same pair
  std::optional<EnergyPerBit> energy;  // default: the chip's link energy per bit
  template <class V>
  void visit(V& v) {
    v.field("bandwidth", bandwidth, "bandwidth per direction", Required{}, Positive{});
    v.field("latency", latency, "end-to-end latency of the link (PHY, FEC, retimers, wire)",
            Required{}, AtLeast{0});
    v.field("lanes", lanes, "SerDes lanes (0: not counted)", InRange{0, 65536});
    v.field("count", count, "parallel links between the same pair of nodes", InRange{1, 1024});
    v.field("energy", energy, "energy per bit per direction (default: chip link energy)");
  }
};

// Properties of a switch (or of any forwarding node).
struct SwitchClass {
  std::string model = "NeuronSwitch-v1";
  int ports = 0;  // radix: links that may attach
  int lanes = 0;  // lane budget (0: not checked)
  Duration latency{};
  std::optional<EnergyPerBit> energy;
  std::optional<Power> idle_power;
  template <class V>
  void visit(V& v) {
    v.field("model", model, "switch model name (informational)");
    v.field("ports", ports, "radix: the number of links that may attach", Required{},
            InRange{1, 65536});
    v.field("lanes", lanes, "lane budget of the switch (0: not checked)",
            InRange{0, 1 << 20});
    v.field("latency", latency, "cut-through traversal latency", Required{}, AtLeast{0});
    v.field("energy", energy, "energy per bit switched");
    v.field("idle_power", idle_power, "idle power of the switch");
  }
};

// N-dimensional torus (or mesh without wrap-around) of chips; chips forward for neighbours.
struct TorusGen {
  std::vector<int> dims;
  std::vector<LinkClass> dim_links;  // one per dimension
  bool wrap = true;
  Duration forward_latency{};  // a chip forwarding a packet for a neighbour
  template <class V>
  void visit(V& v) {
    v.field("dims", dims, "size of each dimension", Required{}, InRange{1, 1 << 20});
    v.field("dim_links", dim_links, "link class of each dimension", Required{});
    v.field("wrap", wrap, "close each dimension into a ring");
    v.field("forward_latency", forward_latency,
            "latency of a chip forwarding a packet for a neighbour", Required{}, AtLeast{0});
  }
};

enum class InterServerPath { via_l1, direct };
constexpr auto enum_names(InterServerPath) {
  return std::array{std::pair{InterServerPath::via_l1, std::string_view("via_l1")},
                    std::pair{InterServerPath::direct, std::string_view("direct")}};
}

// Servers of chips behind a first-level switch, joined by second-level switches; optional direct
// chip links between corresponding positions of different racks.
struct TwoLevelGen {
  int racks = 1;
  int servers = 1;  // in all racks
  int chips_per_server = 1;
  int l1_per_server = 1;
  int l2_per_rack = 1;
  InterServerPath inter_server = InterServerPath::via_l1;
  LinkClass chip_to_l1{};
  LinkClass up_link{};  // L1 -> L2 (via_l1) or chip -> L2 (direct), to each L2 of the rack
  std::optional<LinkClass> inter_rack;  // chip i of server s <-> chip i of server s + servers/racks
  SwitchClass l1{}, l2{};
  // With inter_rack links the racks share no switch, so cross-rack traffic is relayed by the
  // chip at one end of an inter-rack link; this is that chip's relay latency.
  Duration relay_latency{};
  template <class V>
  void visit(V& v) {
    v.field("racks", racks, "racks (servers split evenly)", InRange{1, 1 << 20});
    v.field("servers", servers, "servers in all racks", InRange{1, 1 << 20});
    v.field("chips_per_server", chips_per_server, "chips per server", InRange{1, 1 << 20});
    v.field("l1_per_server", l1_per_server, "first-level switches per server", InRange{1, 1 << 20});
    v.field("l2_per_rack", l2_per_rack, "second-level switches per rack", InRange{0, 1 << 20});
    v.field("inter_server", inter_server,
            "how chips reach the second level: via their L1 switch, or by direct chip ports");
    v.field("chip_to_l1", chip_to_l1, "link from each chip to each L1 switch of its server",
            Required{});
    v.field("up_link", up_link, "link to each L2 switch of the rack (from L1 or chip)",
            Required{});
    v.field("inter_rack", inter_rack, "direct chip links between corresponding rack positions");
    v.field("l1", l1, "first-level switch", Required{});
    v.field("l2", l2, "second-level switch", Required{});
    v.field("relay_latency", relay_latency,
            "latency of a chip relaying between its inter-rack link and its switch links",
            AtLeast{0});
  }
};

// Two-tier folded Clos (leaf/spine) of chips.
struct FoldedClosGen {
  int leaves = 1;
  int chips_per_leaf = 1;
  int spines = 1;
  LinkClass chip_to_leaf{}, leaf_to_spine{};
  SwitchClass leaf{}, spine{};
  template <class V>
  void visit(V& v) {
    v.field("leaves", leaves, "leaf switches", InRange{1, 1 << 20});
    v.field("chips_per_leaf", chips_per_leaf, "chips under each leaf", InRange{1, 1 << 20});
    v.field("spines", spines, "spine switches", InRange{1, 1 << 20});
    v.field("chip_to_leaf", chip_to_leaf, "chip to leaf link class", Required{});
    v.field("leaf_to_spine", leaf_to_spine, "leaf to each spine link class", Required{});
    v.field("leaf", leaf, "leaf switch", Required{});
    v.field("spine", spine, "spine switch", Required{});
  }
};

struct NodeSpec {
  std::string id;
  NodeKind kind = NodeKind::chip;
  int ports = 0;  // radix; 0 means unlimited (chips only)
  int lanes = 0;  // lane budget; 0 means unchecked (chips use chip.link.lanes)
  Duration latency{};  // switch traversal or chip forwarding latency
  std::optional<EnergyPerBit> energy;
  std::optional<Power> idle_power;
  template <class V>
  void visit(V& v) {
    v.field("id", id, "unique node id", Positive{});
    v.field("kind", kind, "chip, switch or nic");
    v.field("ports", ports, "radix (0: unlimited, chips only)", AtLeast{0});
    v.field("lanes", lanes, "lane budget (0: not checked)", AtLeast{0});
    v.field("latency", latency, "switch traversal or chip forwarding latency", AtLeast{0});
    v.field("energy", energy, "energy per bit switched");
    v.field("idle_power", idle_power, "idle power");
  }
};

struct LinkSpec {
  std::string a, b;
  std::optional<int> a_port, b_port;
  Bandwidth bandwidth{};
  Duration latency{};
  int lanes = 0;
  std::optional<EnergyPerBit> energy;
  template <class V>
  void visit(V& v) {
    v.field("a", a, "id of one end", Positive{});
    v.field("b", b, "id of the other end", Positive{});
    v.field("a_port", a_port, "port used at a (default: next free)", AtLeast{0});
    v.field("b_port", b_port, "port used at b (default: next free)", AtLeast{0});
    v.field("bandwidth", bandwidth, "bandwidth per direction", Required{}, Positive{});
    v.field("latency", latency, "end-to-end latency", Required{}, AtLeast{0});
    v.field("lanes", lanes, "SerDes lanes (0: not counted)", AtLeast{0});
    v.field("energy", energy, "energy per bit per direction (default: chip link energy)");
  }
};

struct TopologySpec {
  std::optional<TorusGen> torus;
  std::optional<TwoLevelGen> two_level;
  std::optional<FoldedClosGen> folded_clos;
  std::vector<NodeSpec> nodes;
  std::vector<LinkSpec> links;
  template <class V>
  void visit(V& v) {
    v.field("torus", torus, "generator: N-dimensional torus of chips");
    v.field("two_level", two_level, "generator: servers behind L1 switches joined by L2 switches");
    v.field("folded_clos", folded_clos, "generator: leaf/spine folded Clos");
    v.field("nodes", nodes, "explicit nodes (when no generator is used)");
    v.field("links", links, "explicit links (when no generator is used)");
  }
};

}  // namespace trnsim::topo
