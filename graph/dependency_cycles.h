#pragma once
// Cycles among a graph's nodes. The edges are the graph's own producer -> consumer links
// (Value::producer, Value::consumers); this file builds a Boost.Graph view of them when it runs
// and finds cycles with Boost's strong_components: every node of a strongly connected component
// with more than one node, or with an edge to itself, lies on a cycle.

#include <vector>

#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

// One cycle of node dependencies, as the nodes along it in dependency order (each feeds the next,
// the last feeds the first): the shortest cycle through the lowest-id node that lies on any cycle.
// Empty when the graph is acyclic.
std::vector<NodeId> FindDependencyCycle(const Graph& graph);

}  // namespace memplan
