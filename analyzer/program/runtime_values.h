#pragma once
// Which graph values and nodes exist at run time, as every derivation pass (and the precision
// placement) sees them. Constants are folded at import and cost nothing; a node runs when it
// writes at least one non-constant value.

#include <algorithm>

#include "graph/graph.h"

namespace memplan {

// A value the program holds in a buffer: anything but a constant.
inline bool IsRuntimeValue(const Graph& graph, ValueId v) {
  return v.valid() && graph.value(v).kind != ValueKind::kConstant;
}

// A parameter the program gives master/working copies (and, when it needs one, a gradient):
// floating parameters only; an integer initializer is read as it is.
inline bool IsFloatingParameter(const Graph& graph, ValueId v) {
  return v.valid() && graph.value(v).kind == ValueKind::kParameter &&
         IsFloating(graph.value(v).dtype);
}

// A node that has a runtime step: it writes at least one runtime value.
inline bool RunsAtRuntime(const Graph& graph, NodeId n) {
  const Node& node = graph.node(n);
  return std::any_of(node.outputs.begin(), node.outputs.end(),
                     [&](ValueId o) { return IsRuntimeValue(graph, o); });
}

}  // namespace memplan
