#include "graph/trig_frequency_tables.h"

#include <set>
#include <string_view>
#include <vector>

namespace memplan {
namespace {

bool OneOf(std::string_view op, std::initializer_list<std::string_view> ops) {
  for (std::string_view o : ops)
    if (op == o) return true;
  return false;
}

// Whether every path from `table` ends in Sin or Cos through movement ops and products with
// constants (graph/trig_frequency_tables.h), and at least one does.
bool OnlyAngles(const Graph& graph, ValueId table) {
  std::set<ValueId> reached{table};
  std::vector<ValueId> todo{table};
  bool trig = false;
  while (!todo.empty()) {
    const Value& v = graph.value(todo.back());
    todo.pop_back();
    if (v.is_graph_output) return false;
    for (NodeId n : v.consumers) {
      const Node& node = graph.node(n);
      if (!node.domain.empty() && node.domain != "ai.onnx") return false;
      const std::string& op = node.op_type;
      if (op == "CastLike" && node.inputs.size() > 1 && node.inputs[1] == v.id &&
          node.inputs[0] != v.id)
        continue;  // reads only the dtype: no gradient flows here
      if (OneOf(op, {"Sin", "Cos"})) {
        trig = true;
        continue;
      }
      const bool moves = OneOf(op, {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Expand",
                                    "Transpose", "Flatten", "Slice", "Tile", "Identity", "Concat"});
      const bool product = OneOf(op, {"Mul", "MatMul", "Einsum", "Div"});
      if (!moves && !product) return false;
      // Every other operand is a constant at import or another path of the same table (Concat of
      // the angles with themselves, rotary's cat((freqs, freqs))).
      for (ValueId in : node.inputs) {
        if (!in.valid() || reached.count(in) > 0) continue;
        if (graph.value(in).kind != ValueKind::kConstant) return false;
      }
      for (ValueId out : node.outputs) {
        if (out.valid() && reached.insert(out).second) todo.push_back(out);
      }
    }
  }
  return trig;
}

}  // namespace

std::vector<std::string> UntrainTrigFrequencyTables(Graph& graph) {
  std::vector<std::string> untrained;
  for (const Value& v : graph.values()) {
    if (v.kind != ValueKind::kParameter || !IsFloating(v.dtype) || !v.trainable) continue;
    if (!OnlyAngles(graph, v.id)) continue;
    untrained.push_back(v.name);
  }
  for (const std::string& name : untrained)
    graph.mutable_value(*graph.FindValue(name)).trainable = false;
  return untrained;
}

}  // namespace memplan
