#include "graph/bound_shape_check.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph_copy.h"
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

// `graph` propagated again with the bound symbols as numbers: a copy whose inputs and
// initializers carry the bound values, every node output derived again. Value ids are the
// graph's.
Expected<Graph> PropagateBound(const Graph& graph, const Bindings& bindings) {
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
  MEMPLAN_RETURN_IF_ERROR(PropagateShapes(copy, KnownTypes(graph, bindings)));
  return copy;
}

// The symbols the graph's inputs declare: the real axes a user binds.
std::vector<bool> InputSymbols(const Graph& graph) {
  std::vector<bool> declared(graph.symbols().size(), false);
  for (ValueId input : graph.inputs()) {
    const Shape& shape = graph.value(input).shape;
    if (!shape.known) continue;
    for (const Dim& d : shape.dims)
      for (const Dim::Term& term : d.terms())
        for (SymbolId s : term.symbols) declared[static_cast<size_t>(s)] = true;
  }
  return declared;
}

}  // namespace

Status CheckShapesUnderBindings(const Graph& graph, const Bindings& bindings,
                                const std::string& bound) {
  if (!BindsAny(graph, bindings)) return OkStatus();
  // The import already checked this graph: any error now comes from the bound values.
  Expected<Graph> copy = PropagateBound(graph, bindings);
  if (!copy.ok()) return MakeError("with " + bound + ": " + copy.error().message);
  return OkStatus();
}

MicroBatchShapeCheck::MicroBatchShapeCheck(const Graph& graph, Bindings bindings)
    : graph_(&graph), bindings_(std::move(bindings)) {}

MicroBatchShapeCheck::~MicroBatchShapeCheck() = default;

std::shared_ptr<MicroBatchShapeCheck> MicroBatchShapeCheck::Snapshot(const Graph& graph,
                                                                     Bindings bindings) {
  auto copy = std::make_unique<Graph>(CopyGraph(graph));
  auto check = std::make_shared<MicroBatchShapeCheck>(*copy, std::move(bindings));
  check->owned_ = std::move(copy);
  return check;
}

std::shared_ptr<MicroBatchShapeCheck> MicroBatchShapeCheck::Rebound(Bindings bindings) const {
  auto check = std::make_shared<MicroBatchShapeCheck>(*graph_, std::move(bindings));
  check->owned_ = owned_;
  return check;
}

const std::optional<std::string>& MicroBatchShapeCheck::ErrorAt(int64_t micro_batch) {
  auto [it, added] = errors_.try_emplace(micro_batch);
  if (added) {
    Bindings bound = bindings_;
    bound.Bind(*graph_->batch_symbol(), micro_batch);
    Expected<Graph> copy = PropagateBound(*graph_, bound);
    if (!copy.ok()) it->second = copy.error().message;
  }
  return it->second;
}

Status MicroBatchShapeCheck::At(int64_t micro_batch, bool searched, bool exact) {
  if (!graph_->batch_symbol()) return OkStatus();
  if (!exact) {
    if (!screen_holds_)
      screen_holds_ = !ErrorAt(1).has_value() && !ErrorAt(kScreenMicroBatch).has_value();
    if (*screen_holds_) return OkStatus();
  }
  const std::optional<std::string>& error = ErrorAt(micro_batch);
  if (!error) return OkStatus();
  return MakeError("with micro-batch " + std::to_string(micro_batch) +
                   (searched ? " (tried by the micro-batch search; --micro-batch pins one)" : "") +
                   ": " + *error);
}

std::vector<std::pair<SymbolId, int64_t>> DeterminedSymbols(const Graph& graph,
                                                            const Bindings& bindings) {
  const size_t count = graph.symbols().size();
  const std::vector<bool> declared = InputSymbols(graph);
  // Only a graph with a symbol no input declares and nothing binds has anything to determine.
  bool open = false;
  for (size_t i = 0; i < count; ++i)
    open = open || (!declared[i] && !bindings.Get(static_cast<SymbolId>(i)));
  if (!open) return {};
  Bindings without_batch(bindings.symbols());
  for (size_t i = 0; i < count; ++i) {
    const auto id = static_cast<SymbolId>(i);
    if (auto value = bindings.Get(id); value && id != graph.batch_symbol())
      without_batch.Bind(id, *value);
  }
  if (!BindsAny(graph, without_batch)) return {};
  Expected<Graph> copy = PropagateBound(graph, without_batch);
  if (!copy.ok()) return {};  // CheckShapesUnderBindings reports it
  // Per symbol: its value where the copy has a number in its place; conflicting: -1.
  std::vector<std::optional<int64_t>> value(count);
  std::vector<bool> conflict(count, false);
  // Learns from one place: `symbolic` as import has it, `bound` under the bindings.
  auto learn = [&](const Dim& symbolic, const Dim& bound) {
    const std::optional<SymbolId> symbol = symbolic.single_symbol();
    if (!symbol) return;
    const auto s = static_cast<size_t>(*symbol);
    if (s >= count || declared[s] || bindings.Get(*symbol)) return;
    const std::optional<int64_t> number = bound.constant_value();
    if (!number || (value[s] && *value[s] != *number)) {
      conflict[s] = true;  // still symbolic there (it follows the batch), or two values
      return;
    }
    value[s] = *number;
  };
  for (const Value& original : graph.values()) {
    const Value& bound = copy->value(original.id);
    if (original.shape.known && bound.shape.known && bound.shape.rank() == original.shape.rank())
      for (size_t i = 0; i < original.shape.rank(); ++i)
        learn(original.shape.dims[i], bound.shape.dims[i]);
    // Shape arithmetic (a pad of (window - seq % window) % window) names its symbols in contents.
    if (original.contents && bound.contents && bound.contents->size() == original.contents->size())
      for (size_t i = 0; i < original.contents->size(); ++i)
        learn((*original.contents)[i], (*bound.contents)[i]);
  }
  std::vector<std::pair<SymbolId, int64_t>> determined;
  for (size_t s = 0; s < count; ++s)
    if (value[s] && !conflict[s] && *value[s] > 0)
      determined.emplace_back(static_cast<SymbolId>(s), *value[s]);
  return determined;
}

}  // namespace memplan
