#pragma once
// Re-checking a graph's shapes once the command line binds its symbols. At import a MatMul of
// x[batch, s] and W[4, 4] is consistent for s = 4, and a Reshape or an Expand may work for only
// one value of a symbol: a shape rule cannot refuse what a later binding might make true. Once
// `--dim s=128` (or `--batch`) gives the value, the graph is propagated again with the bound
// symbols as numbers, so every constraint the registry's rules state (contraction dims, Reshape
// element counts, Expand and broadcast compatibility, Concat/Split sizes...) is checked against
// it: a violation is bad input naming the node and the binding, never a plan.

#include <string>
#include <utility>
#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

// OK when no symbol is bound or every node's shape rule accepts the bound values; otherwise the
// rule's error, after "with <bound> " (`bound` names the flags, e.g. "--dim s=128").
Status CheckShapesUnderBindings(const Graph& graph, const Bindings& bindings,
                                const std::string& bound);

// The values of the symbols the bound ones determine. A shape rule that cannot write a dim as a
// polynomial of the input's symbols names it with a new one: a strided Conv's output length
// floor((L + 2p - k) / s) + 1 is `conv_out_0`, an exporter's dim ONNX inference could not
// relate (`unk__1`). Once the real axes are bound, the graph propagated with their values has a
// number in each such place; that number is the symbol's value, so the command line never asks
// for it. Returns (symbol, value) for each symbol that no graph input declares, that the
// bindings leave unbound and that takes one value everywhere it appears. The batch symbol is
// left symbolic in that propagation: a symbol that follows the batch (a Reshape of batch * seq)
// changes with the micro-batch the planner tries, so it is not fixed here.
std::vector<std::pair<SymbolId, int64_t>> DeterminedSymbols(const Graph& graph,
                                                            const Bindings& bindings);

}  // namespace memplan
