// SPDX-License-Identifier: MIT
// Graphviz export of a topology, through Boost.Graph's write_graphviz.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <ostream>
#include <sstream>
#include <string>

#include "trnsim/topology/topology.hpp"

namespace trnsim::topo {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

const char* shape_of(NodeKind kind) {
  switch (kind) {
    case NodeKind::chip: return "box";
    case NodeKind::switch_: return "diamond";
    case NodeKind::nic: return "ellipse";
  }
  return "box";
}

}  // namespace

std::string to_dot(const Topology& t) {
  // The link id rides on each edge so that the writer can label it from the topology.
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                      boost::no_property, std::uint32_t>;
  Graph g(t.nodes().size());
  for (std::uint32_t i = 0; i < t.links().size(); ++i) {
    boost::add_edge(t.links()[i].a.v, t.links()[i].b.v, i, g);
  }
  auto node_writer = [&](std::ostream& os, Graph::vertex_descriptor v) {
    const Node& node = t.nodes()[v];
    os << "[label=" << quoted(node.name) << ", shape=" << shape_of(node.kind) << "]";
  };
  auto link_writer = [&](std::ostream& os, Graph::edge_descriptor e) {
    os << "[label=" << quoted(format(t.links()[g[e]].bandwidth)) << "]";
  };
  auto graph_writer = [](std::ostream& os) { os << "node [fontsize=10];\n"; };
  std::ostringstream os;
  boost::write_graphviz(os, g, node_writer, link_writer, graph_writer);
  return os.str();
}

}  // namespace trnsim::topo
