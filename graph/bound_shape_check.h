#pragma once
// Re-checking a graph's shapes once the command line binds its symbols. At import a MatMul of
// x[batch, s] and W[4, 4] is consistent for s = 4, and a Reshape or an Expand may work for only
// one value of a symbol: a shape rule cannot refuse what a later binding might make true. Once
// `--dim s=128` (or `--batch`) gives the value, the graph is propagated again with the bound
// symbols as numbers, so every constraint the registry's rules state (contraction dims, Reshape
// element counts, Expand and broadcast compatibility, Concat/Split sizes...) is checked against
// it: a violation is bad input naming the node and the binding, never a plan.

#include <string>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

// OK when no symbol is bound or every node's shape rule accepts the bound values; otherwise the
// rule's error, after "with <bound> " (`bound` names the flags, e.g. "--dim s=128").
Status CheckShapesUnderBindings(const Graph& graph, const Bindings& bindings,
                                const std::string& bound);

}  // namespace memplan
