#include "graph/trainable_parameters.h"

#include "graph/name_pattern.h"
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

namespace {

// Applies `pattern` to every trainable parameter: `freeze_matching` freezes those that match,
// otherwise those that do not. Error when nothing matches.
Status SelectByPattern(Graph& graph, const std::string& pattern, const std::string& flag,
                       bool freeze_matching) {
  MEMPLAN_TRY(NamePattern re, NamePattern::Compile(pattern, flag));
  bool any = false;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || !IsFloating(v.dtype) || !v.trainable) continue;
    const bool match = re.Matches(v.name);
    any = any || match;
    if (match == freeze_matching) graph.mutable_value(v.id).frozen = true;
  }
  if (!any) return MakeError(flag + ": '" + pattern + "' matches no trainable parameter name");
  return OkStatus();
}

}  // namespace

Status ApplyTrainableSelection(Graph& graph, const TrainableSelection& selection,
                               bool require_trained) {
  if (selection.train)
    MEMPLAN_RETURN_IF_ERROR(SelectByPattern(graph, *selection.train, "--train", false));
  if (selection.freeze)
    MEMPLAN_RETURN_IF_ERROR(SelectByPattern(graph, *selection.freeze, "--freeze", true));
  if (require_trained && TrainedParameterCount(graph) == 0)
    return MakeError("--train/--freeze leave no parameter to train");
  return OkStatus();
}

int64_t TrainedParameterCount(const Graph& graph) {
  int64_t count = 0;
  for (const Value& v : graph.values()) {
    if (!IsTrainedParameter(v)) continue;
    std::optional<int64_t> n = v.shape.NumElements().constant_value();
    MEMPLAN_CHECK(n.has_value()) << "a parameter shape is constant";
    count += *n;
  }
  return count;
}

int64_t ModelParameterCount(const Graph& graph) {
  int64_t count = 0;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || !v.trainable) continue;
    if (std::optional<int64_t> n = v.shape.NumElements().constant_value()) count += *n;
  }
  return count;
}

}  // namespace memplan
