#include "analyzer/derivation/gradient_flow.h"

#include <algorithm>

#include "analyzer/program/runtime_values.h"
#include "graph/ops/op_registry.h"
#include "graph/trainable_parameters.h"

namespace memplan {

GradientFlow AnalyzeGradientFlow(const Graph& graph, const OpRegistry& registry,
                                 const std::vector<NodeId>& order,
                                 const std::vector<ValueId>& loss_outputs) {
  GradientFlow flow;
  flow.gradient_inputs.assign(graph.num_nodes(), {});
  std::vector<bool>& requires_grad = flow.requires_grad;
  requires_grad.assign(graph.num_values(), false);
  for (const Value& v : graph.values())
    if (IsTrainedParameter(v)) requires_grad[v.id.index()] = true;
  for (NodeId n : order) {
    if (!RunsAtRuntime(graph, n)) continue;
    const Node& node = graph.node(n);
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    std::vector<bool>& slots = flow.gradient_inputs[n.index()];
    slots = schema.gradient_inputs(MakeOpContext(graph, n));
    slots.resize(node.inputs.size(), false);
    bool any = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId u = node.inputs[i];
      if (!IsRuntimeValue(graph, u)) slots[i] = false;
      any = any || (slots[i] && requires_grad[u.index()]);
    }
    for (ValueId o : node.outputs)
      if (IsRuntimeValue(graph, o) && IsFloating(graph.value(o).dtype))
        requires_grad[o.index()] = any;
  }

  // A gradient reaches an input only through outputs that require grad themselves: an integer
  // or frozen value in between ends the path (autograd records no edge through it), so "leads to
  // the loss" is walked over requires-grad values only.
  std::vector<bool> leads(graph.num_values(), false);
  for (ValueId out : loss_outputs) leads[out.index()] = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!RunsAtRuntime(graph, *it)) continue;
    const Node& node = graph.node(*it);
    const std::vector<bool>& slots = flow.gradient_inputs[it->index()];
    bool out_leads = std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId o) {
      return o.valid() && leads[o.index()] && requires_grad[o.index()];
    });
    if (!out_leads) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (slots[i]) leads[node.inputs[i].index()] = true;
  }

  flow.needs_gradient.assign(graph.num_values(), false);
  for (size_t v = 0; v < graph.num_values(); ++v)
    flow.needs_gradient[v] = requires_grad[v] && leads[v];

  flow.needs_backward.assign(graph.num_nodes(), false);
  for (NodeId n : order) {
    if (!RunsAtRuntime(graph, n)) continue;
    const Node& node = graph.node(n);
    const std::vector<bool>& slots = flow.gradient_inputs[n.index()];
    bool out_grad = std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId o) {
      return o.valid() && flow.needs_gradient[o.index()];
    });
    bool in_grad = false;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      in_grad = in_grad || (slots[i] && flow.needs_gradient[node.inputs[i].index()]);
    flow.needs_backward[n.index()] = out_grad && in_grad;
  }
  return flow;
}

}  // namespace memplan
