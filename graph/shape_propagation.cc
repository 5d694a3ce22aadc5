#include "graph/shape_propagation.h"

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

// An ONNX-inferred type as a Shape: named dims become symbols, unknown ones fresh symbols.
Shape ShapeFromInferred(const InferredType& type, SymbolTable& symbols) {
  if (!type.has_shape) return Shape::Unknown();
  Shape shape;
  for (const InferredDim& d : type.dims) {
    if (d.value && *d.value >= 0) {
      shape.dims.emplace_back(*d.value);
    } else if (!d.param.empty()) {
      shape.dims.push_back(Dim::Symbol(symbols.Intern(d.param)));
    } else {
      shape.dims.push_back(Dim::Symbol(symbols.Fresh("unk")));
    }
  }
  return shape;
}

bool ProducesConstant(const Graph& graph, const Node& node) {
  // Shape and Size read only metadata, which is static in terms of the symbols.
  if (node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size")) return true;
  for (ValueId in : node.inputs)
    if (in.valid() && graph.value(in).kind != ValueKind::kConstant) return false;
  return true;
}

std::string UnknownOpWarning(const Node& node) {
  std::string op = node.domain.empty() ? node.op_type : node.domain + "::" + node.op_type;
  return "unknown op '" + op + "' (node '" + node.name +
         "'): using a conservative estimate (outputs kept, everything saved for backward)";
}

}  // namespace

Status CheckValueSize(const Graph& graph, const Value& value) {
  if (!value.shape.known) return OkStatus();
  const Dim elements = value.shape.NumElements();
  bool overflow = elements.overflowed();
  for (const Dim& d : value.shape.dims) overflow = overflow || d.overflowed();
  if (!overflow && ByteSize(value.dtype) > 0)
    overflow = (elements * Dim(ByteSize(value.dtype))).overflowed();
  if (!overflow) return OkStatus();
  std::string dims;
  for (const Dim& d : value.shape.dims) {
    dims += dims.empty() ? "" : ", ";
    dims += d.ToString(graph.symbols());
  }
  return MakeError("value '" + value.name + "' has shape [" + dims +
                   "] whose element or byte count overflows 64 bits");
}

Status PropagateShapes(Graph& graph, const InferredTypes& inferred) {
  MEMPLAN_TRY(std::vector<NodeId> order, graph.TopologicalOrder());
  const OpRegistry& registry = OpRegistry::Get();
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    if (!schema.is_known) graph.warnings.push_back(UnknownOpWarning(node));
    MEMPLAN_TRY(std::vector<TensorInfo> outputs,
                schema.infer_shapes(MakeOpContext(graph, id, &graph.symbols())));
    const bool constant = ProducesConstant(graph, node);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].valid()) continue;
      Value& value = graph.mutable_value(node.outputs[i]);
      TensorInfo info = i < outputs.size() ? std::move(outputs[i]) : TensorInfo{};
      auto onnx_type = inferred.find(value.name);
      const bool has_onnx = onnx_type != inferred.end();
      // Unknown ops: ONNX's inference (if it knows the op) beats the input-0 guess.
      const bool prefer_onnx = !schema.is_known && has_onnx && onnx_type->second.has_shape;
      if (has_onnx && (prefer_onnx || !info.shape.known))
        info.shape = ShapeFromInferred(onnx_type->second, graph.symbols());
      if (has_onnx && (prefer_onnx || info.dtype == DType::kUndefined))
        info.dtype = onnx_type->second.dtype;
      value.dtype = info.dtype;
      value.shape = std::move(info.shape);
      value.contents = std::move(info.contents);
      value.kind = constant ? ValueKind::kConstant : ValueKind::kIntermediate;
      MEMPLAN_RETURN_IF_ERROR(CheckValueSize(graph, value));
    }
  }
  for (const Value& value : graph.values()) {
    if (value.kind != ValueKind::kIntermediate || value.shape.known || !IsFloating(value.dtype))
      continue;
    std::string producer =
        value.producer.valid() ? " (output of node '" + graph.node(value.producer).name + "')" : "";
    graph.warnings.push_back("activation '" + value.name + "'" + producer +
                             " has an unknown shape; its memory is not counted");
  }
  return OkStatus();
}

}  // namespace memplan
