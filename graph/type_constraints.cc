#include "graph/type_constraints.h"

#include <map>
#include <string>
#include <utility>

#include <onnx/defs/schema.h>

namespace memplan {
namespace {

// The formal parameter input slot `slot` is bound to (the last one repeats when variadic);
// nullptr when the slot is beyond the schema's inputs.
const onnx::OpSchema::FormalParameter* FormalOf(const onnx::OpSchema& schema, size_t slot) {
  const auto& formals = schema.inputs();
  if (slot < formals.size()) return &formals[slot];
  if (!formals.empty() &&
      formals.back().GetOption() == onnx::OpSchema::FormalParameterOption::Variadic)
    return &formals.back();
  return nullptr;
}

bool IsTypeParameter(const onnx::OpSchema& schema, const std::string& type_str) {
  for (const auto& param : schema.typeConstraintParams())
    if (param.type_param_str == type_str) return true;
  return false;
}

Status CheckNode(const Graph& graph, const Node& node, const onnx::OpSchema& schema) {
  struct Bound {
    size_t slot;
    ValueId value;
  };
  std::map<std::string, Bound> first_of;  // type parameter -> the first input bound to it
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ValueId in = node.inputs[i];
    if (!in.valid()) continue;
    const onnx::OpSchema::FormalParameter* formal = FormalOf(schema, i);
    // A heterogeneous variadic input (Loop's, If's) binds each slot on its own.
    if (formal == nullptr || !formal->GetIsHomogeneous()) continue;
    const std::string& type_str = formal->GetTypeStr();
    if (!IsTypeParameter(schema, type_str)) continue;  // a fixed type, e.g. "tensor(int64)"
    if (graph.value(in).dtype == DType::kUndefined) continue;
    auto [it, first] = first_of.emplace(type_str, Bound{i, in});
    if (first) continue;
    const Value& a = graph.value(it->second.value);
    const Value& b = graph.value(in);
    if (a.dtype == b.dtype) continue;
    std::string message = "node '" + node.name + "' (" + node.op_type + "): input " +
                          std::to_string(it->second.slot) + " '" + a.name + "' is " +
                          std::string(DTypeName(a.dtype)) + " but input " + std::to_string(i) +
                          " '" + b.name + "' is " + std::string(DTypeName(b.dtype)) + "; ONNX's " +
                          node.op_type + " takes one type " + type_str + " for both";
    // The case met in practice: a bias or scale written as an integer initializer, which would
    // silently stop being a trained parameter.
    for (const Value* v : {&a, &b}) {
      if (!v->producer.valid() && v->kind == ValueKind::kConstant && !IsFloating(v->dtype) &&
          (IsFloating(a.dtype) || IsFloating(b.dtype))) {
        message += " (the initializer '" + v->name + "' would be a constant, never trained)";
        break;
      }
    }
    return MakeError(message);
  }
  return OkStatus();
}

}  // namespace

Status CheckTypeConstraints(const Graph& graph) {
  for (const Node& node : graph.nodes()) {
    auto opset = graph.opset_imports.find(node.domain);
    if (opset == graph.opset_imports.end()) continue;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type, static_cast<int>(opset->second), node.domain);
    if (schema == nullptr) continue;
    MEMPLAN_RETURN_IF_ERROR(CheckNode(graph, node, *schema));
  }
  return OkStatus();
}

}  // namespace memplan
