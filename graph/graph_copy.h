#pragma once
// An exact copy of a graph. Graph's copy constructor is deleted so that a model's largest
// structure is never copied by accident; the callers that need a copy ask for one by name: the
// shape check of a --tp model keeps the model before its split, and the fused-loss advice fuses
// the head of a copy of the prepared graph instead of importing the model again.

#include "graph/graph.h"

namespace memplan {

// Every node and value with the same ids and the same fields (producers, consumers in their
// order, kinds), the same inputs, outputs and symbol table, and the graph's import metadata.
Graph CopyGraph(const Graph& graph);

}  // namespace memplan
