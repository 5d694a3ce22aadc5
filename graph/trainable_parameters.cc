#include "graph/trainable_parameters.h"

#include "graph/ops/op_registry.h"

namespace memplan {

Status MarkTrainableParameters(Graph& graph) {
  MEMPLAN_TRY(std::vector<NodeId> order, graph.TopologicalOrder());
  const OpRegistry& registry = OpRegistry::Get();
  // leads_to_output[v]: a gradient flows from a graph output back to v.
  std::vector<bool> leads_to_output(graph.num_values(), false);
  for (ValueId out : graph.outputs())
    if (IsFloating(graph.value(out).dtype)) leads_to_output[out.index()] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = graph.node(*it);
    bool any_output = false;
    for (ValueId out : node.outputs) any_output |= out.valid() && leads_to_output[out.index()];
    if (!any_output) continue;
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    std::vector<bool> slots = schema.gradient_inputs(MakeOpContext(graph, *it));
    for (size_t i = 0; i < node.inputs.size() && i < slots.size(); ++i) {
      ValueId in = node.inputs[i];
      if (in.valid() && slots[i] && IsFloating(graph.value(in).dtype))
        leads_to_output[in.index()] = true;
    }
  }
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter) continue;
    graph.mutable_value(v.id).trainable = leads_to_output[v.id.index()];
  }
  return OkStatus();
}

}  // namespace memplan
