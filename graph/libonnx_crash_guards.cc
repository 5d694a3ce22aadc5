#include "graph/libonnx_crash_guards.h"

#include <string>
#include <unordered_set>

namespace memplan {

void DeclareUntypedShapeInputs(onnx::GraphProto& graph) {
  // Subgraphs first: each is inferred with its own value_info.
  for (auto& node : *graph.mutable_node()) {
    for (auto& attribute : *node.mutable_attribute()) {
      if (attribute.has_g()) DeclareUntypedShapeInputs(*attribute.mutable_g());
      for (auto& subgraph : *attribute.mutable_graphs()) DeclareUntypedShapeInputs(subgraph);
    }
  }
  // Only values this graph's nodes produce: a graph input or initializer always has a type, and
  // declaring an outer-scope value inside a subgraph would hide the type the outer graph gives it.
  std::unordered_set<std::string> produced;
  for (const auto& node : graph.node()) {
    for (const auto& output : node.output()) produced.insert(output);
  }
  std::unordered_set<std::string> declared;
  for (const auto& info : graph.value_info()) declared.insert(info.name());
  for (const auto& info : graph.output()) declared.insert(info.name());
  std::unordered_set<std::string> shape_inputs;
  for (const auto& node : graph.node()) {
    const bool standard = node.domain().empty() || node.domain() == "ai.onnx";
    if (standard && node.op_type() == "Shape" && node.input_size() > 0) {
      shape_inputs.insert(node.input(0));
    }
  }
  // A graph output may be declared with no type at all: it gets the empty tensor type in place.
  for (auto& info : *graph.mutable_output()) {
    if (shape_inputs.contains(info.name()) && !info.has_type())
      info.mutable_type()->mutable_tensor_type();
  }
  for (const auto& input : shape_inputs) {
    if (!produced.contains(input) || !declared.insert(input).second) continue;
    onnx::ValueInfoProto* info = graph.add_value_info();
    info->set_name(input);
    info->mutable_type()->mutable_tensor_type();
  }
}

}  // namespace memplan
