#include "graph/graph_copy.h"

namespace memplan {

Graph CopyGraph(const Graph& graph) {
  Graph copy;
  copy.symbols() = graph.symbols();
  if (std::optional<SymbolId> batch = graph.batch_symbol()) copy.set_batch_symbol(*batch);
  copy.ir_version = graph.ir_version;
  copy.opset_imports = graph.opset_imports;
  copy.producer_name = graph.producer_name;
  copy.graph_name = graph.graph_name;
  copy.warnings = graph.warnings;
  // Added as an import adds them (which indexes the names), then overwritten with the original
  // values: a rewrite may have left consumers in another order than node order.
  for (const Value& value : graph.values()) {
    Value v = value;
    v.producer = NodeId();
    v.consumers.clear();
    copy.AddValue(std::move(v));
  }
  for (const Node& node : graph.nodes()) copy.AddNode(node);
  for (ValueId input : graph.inputs()) copy.MarkInput(input);
  for (ValueId output : graph.outputs()) copy.MarkOutput(output);
  for (const Value& value : graph.values()) copy.mutable_value(value.id) = value;
  return copy;
}

}  // namespace memplan
