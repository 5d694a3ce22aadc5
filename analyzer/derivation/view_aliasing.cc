#include "analyzer/derivation/view_aliasing.h"

#include "analyzer/derivation/runtime_values.h"
#include "graph/ops/op_registry.h"

namespace memplan {

ViewAliasing DecideViews(const Graph& graph, const OpRegistry& registry,
                         const std::vector<NodeId>& order) {
  ViewAliasing views;
  views.node_is_view.assign(graph.num_nodes(), false);
  views.value_is_strided.assign(graph.num_values(), false);
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    if (!schema.is_view || node.inputs.empty() || !node.inputs[0].valid()) continue;
    const ValueId base = node.inputs[0];
    // Constants and shape arithmetic have no storage to alias; the program folds them away.
    if (!IsRuntimeValue(graph, base)) {
      views.node_is_view[n.index()] = true;
      continue;
    }
    const bool base_strided = views.value_is_strided[base.index()];
    if (base_strided && schema.view_needs_contiguous_input) continue;  // a copy: contiguous
    views.node_is_view[n.index()] = true;
    const bool strided = base_strided || (schema.view_stays_contiguous &&
                                          !schema.view_stays_contiguous(MakeOpContext(graph, n)));
    for (ValueId out : node.outputs)
      if (out.valid()) views.value_is_strided[out.index()] = strided;
  }
  return views;
}

}  // namespace memplan
