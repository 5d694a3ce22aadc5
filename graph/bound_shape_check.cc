#include "graph/bound_shape_check.h"

#include <optional>
#include <utility>
#include <vector>

#include "graph/shape_propagation.h"

namespace memplan {
namespace {

// `dim` as a number when the bindings fix it, else unchanged.
Dim Bound(const Dim& dim, const Bindings& bindings) {
  if (dim.constant_value()) return dim;
  Expected<int64_t> value = dim.Evaluate(bindings);
  return value.ok() ? Dim(*value) : dim;
}

Shape Bound(const Shape& shape, const Bindings& bindings) {
  if (!shape.known) return shape;
  Shape out = shape;
  for (Dim& d : out.dims) d = Bound(d, bindings);
  return out;
}

// What import knew of each node output, as the ONNX types propagation takes for the gaps its
// rules leave (an op the registry does not know): bound dims as numbers, one-symbol dims by name.
InferredTypes KnownTypes(const Graph& graph, const Bindings& bindings) {
  InferredTypes types;
  for (const Value& value : graph.values()) {
    if (!value.producer.valid() || !value.shape.known || value.name.empty()) continue;
    InferredType type;
    type.dtype = value.dtype;
    type.has_shape = true;
    for (const Dim& d : value.shape.dims) {
      InferredDim dim;
      const Dim bound = Bound(d, bindings);
      if (auto c = bound.constant_value()) {
        dim.value = *c;
      } else if (bound.IsSingleSymbol()) {
        dim.param = bound.ToString(graph.symbols());
      }
      type.dims.push_back(std::move(dim));
    }
    types.emplace(value.name, std::move(type));
  }
  return types;
}

bool BindsAny(const Graph& graph, const Bindings& bindings) {
  for (size_t i = 0; i < graph.symbols().size(); ++i)
    if (bindings.Get(static_cast<SymbolId>(i))) return true;
  return false;
}

}  // namespace

Status CheckShapesUnderBindings(const Graph& graph, const Bindings& bindings,
                                const std::string& bound) {
  if (!BindsAny(graph, bindings)) return OkStatus();
  // A copy whose inputs and initializers carry the bound values; every node output is left for
  // propagation to derive again.
  Graph copy;
  copy.symbols() = graph.symbols();
  if (auto batch = graph.batch_symbol()) copy.set_batch_symbol(*batch);
  copy.opset_imports = graph.opset_imports;
  copy.ir_version = graph.ir_version;
  for (const Value& value : graph.values()) {
    Value v = value;
    v.producer = NodeId();
    v.consumers.clear();
    v.is_graph_output = false;
    if (value.producer.valid()) {
      v.shape = Shape::Unknown();
      v.contents.reset();
      v.float_values.reset();
    } else {
      v.shape = Bound(value.shape, bindings);
    }
    copy.AddValue(std::move(v));
  }
  for (const Node& node : graph.nodes()) copy.AddNode(node);
  for (ValueId input : graph.inputs()) copy.MarkInput(input);
  for (ValueId output : graph.outputs()) copy.MarkOutput(output);
  // The import already checked this graph: any error now comes from the bound values.
  Status status = PropagateShapes(copy, KnownTypes(graph, bindings));
  if (!status.ok()) return MakeError("with " + bound + ": " + status.error().message);
  return OkStatus();
}

}  // namespace memplan
