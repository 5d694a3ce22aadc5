#include "graph/dependency_cycles.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/strong_components.hpp>
#include <optional>

namespace memplan {
namespace {

using DependencyView = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
using Vertex = DependencyView::vertex_descriptor;

// Vertex i is node i; one edge per input slot fed by another node's output.
DependencyView BuildDependencyView(const Graph& graph) {
  DependencyView view(graph.num_nodes());
  for (const Node& node : graph.nodes()) {
    for (ValueId in : node.inputs) {
      if (!in.valid()) continue;
      const NodeId producer = graph.value(in).producer;
      if (producer.valid()) boost::add_edge(producer.index(), node.id.index(), view);
    }
  }
  return view;
}

// Keeps the vertices of one strongly connected component (BFS then stays inside it).
struct InComponent {
  const std::vector<int>* component = nullptr;
  int which = -1;
  bool operator()(Vertex v) const { return (*component)[v] == which; }
};

}  // namespace

std::vector<NodeId> FindDependencyCycle(const Graph& graph) {
  const DependencyView view = BuildDependencyView(graph);
  const size_t n = boost::num_vertices(view);
  std::vector<int> component(n, -1);
  const int num_components = boost::strong_components(
      view,
      boost::make_iterator_property_map(component.begin(), boost::get(boost::vertex_index, view)));
  std::vector<int> component_size(static_cast<size_t>(num_components), 0);
  for (int c : component) ++component_size[static_cast<size_t>(c)];

  // The lowest-id vertex on a cycle: in a component of two or more, or with a self-loop.
  std::optional<Vertex> start;
  for (Vertex v = 0; v < n && !start; ++v) {
    if (component_size[static_cast<size_t>(component[v])] > 1 || boost::edge(v, v, view).second)
      start = v;
  }
  if (!start) return {};

  // Breadth-first from `start` inside its component; the first vertex found with an edge back to
  // `start` closes the shortest cycle through it.
  const InComponent keep{&component, component[*start]};
  const boost::filtered_graph<DependencyView, boost::keep_all, InComponent> inside(
      view, boost::keep_all(), keep);
  std::vector<Vertex> parent(n);
  for (Vertex v = 0; v < n; ++v) parent[v] = v;
  boost::breadth_first_search(
      inside, *start,
      boost::visitor(boost::make_bfs_visitor(boost::record_predecessors(
          boost::make_iterator_property_map(parent.begin(), boost::get(boost::vertex_index, view)),
          boost::on_tree_edge()))));
  std::optional<Vertex> closing;
  size_t closing_length = 0;
  for (Vertex v = 0; v < n; ++v) {
    if (component[v] != component[*start] || !boost::edge(v, *start, view).second) continue;
    size_t length = 1;
    for (Vertex u = v; u != *start; u = parent[u]) ++length;
    if (!closing || length < closing_length) {
      closing = v;
      closing_length = length;
    }
  }
  MEMPLAN_CHECK(closing.has_value());  // a vertex on a cycle has an edge back from its component
  std::vector<NodeId> cycle;
  for (Vertex u = *closing; u != *start; u = parent[u]) cycle.emplace_back(u);
  cycle.emplace_back(*start);
  return {cycle.rbegin(), cycle.rend()};
}

}  // namespace memplan
