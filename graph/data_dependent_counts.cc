#include "graph/data_dependent_counts.h"

#include <algorithm>
#include <string>
#include <vector>

#include "graph/ops/shape_ops_folding.h"

namespace memplan {
namespace {

// The input's values are known at import (floating values, or folded contents whose every
// element is known zero or non-zero): counted exactly.
bool ValuesKnown(const Value& value) {
  if (value.float_values.has_value()) return true;
  if (!value.contents.has_value()) return false;
  return std::all_of(value.contents->begin(), value.contents->end(),
                     [](const Dim& d) { return DimsEqual(d, Dim(0)).has_value(); });
}

// ConstantOfShape with a non-zero fill: every element is non-zero, the bound is the count.
bool NonZeroFill(const Graph& graph, const Value& value) {
  if (!value.producer.valid()) return false;
  const Node& producer = graph.node(value.producer);
  if (producer.op_type != "ConstantOfShape") return false;
  const TensorAttribute* fill = producer.attributes.GetTensor("value");
  if (fill == nullptr) return false;  // ONNX's default fill is a float 0: no element is non-zero
  for (int64_t v : fill->int_values)
    if (v == 0) return false;
  for (double v : fill->float_values)
    if (v == 0.0) return false;
  return !fill->int_values.empty() || !fill->float_values.empty();
}

}  // namespace

void WarnDataDependentCounts(Graph& graph) {
  std::vector<std::string> bounded;
  for (const Node& node : graph.nodes()) {
    if (node.op_type != "NonZero" || !(node.domain.empty() || node.domain == "ai.onnx") ||
        node.inputs.empty() || !node.inputs[0].valid())
      continue;
    const Value& input = graph.value(node.inputs[0]);
    if (!input.shape.known || ValuesKnown(input) || NonZeroFill(graph, input)) continue;
    bounded.push_back("'" + node.name + "' of " + input.shape.ToString(graph.symbols()));
  }
  if (bounded.empty()) return;
  std::string text = std::to_string(bounded.size()) + " NonZero node" +
                     (bounded.size() == 1 ? " has" : "s have") +
                     " a count that depends on the data, planned at its upper bound (every "
                     "input element non-zero): " +
                     bounded.front();
  if (bounded.size() > 1) text += " and " + std::to_string(bounded.size() - 1) + " more";
  graph.warnings.push_back(text);
}

}  // namespace memplan
