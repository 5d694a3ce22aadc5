#include "graph/shape_propagation.h"

#include <map>
#include <set>
#include <stdexcept>

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

// Exporters such as tf2onnx declare value_info and output dims they could not resolve as fresh
// symbols ("unk__12"). Where memplan's rules derive the same value's dim, the declared symbol is
// that dim: it is recorded here and used wherever the declaration is the only source, so the user
// is never asked to bind a symbol that is really `batch`.
class DeclaredSymbolUnifier {
 public:
  explicit DeclaredSymbolUnifier(const Graph& graph) {
    for (ValueId id : graph.inputs())
      for (const Dim& d : graph.value(id).shape.dims)
        if (auto s = d.single_symbol()) input_symbols_.insert(graph.symbols().Name(*s));
  }

  // Records declared params of `declared` that `derived` (memplan's shape) resolves.
  void Learn(const InferredType& declared, const Shape& derived, const SymbolTable& symbols) {
    if (!declared.has_shape || !derived.known || declared.dims.size() != derived.rank()) return;
    for (size_t i = 0; i < derived.rank(); ++i) {
      const std::string& param = declared.dims[i].param;
      if (param.empty() || input_symbols_.count(param) || unified_.count(param)) continue;
      const Dim& dim = derived.dims[i];
      auto existing = symbols.Find(param);
      if (existing && dim.DegreeIn(*existing) > 0) continue;  // derived from the symbol itself
      unified_.emplace(param, dim);
    }
  }

  // The derived dim a declared param stands for, if known.
  const Dim* Find(const std::string& param) const {
    auto it = unified_.find(param);
    return it == unified_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, Dim>& unified() const { return unified_; }

 private:
  std::set<std::string> input_symbols_;
  std::map<std::string, Dim> unified_;
};

// `d` with symbols replaced by the dims they stand for.
Dim Substitute(const Dim& d, const std::map<SymbolId, Dim>& substitution) {
  if (d.overflowed()) return d;
  Dim out(0);
  for (const Dim::Term& term : d.terms()) {
    Dim product(term.coefficient);
    for (SymbolId s : term.symbols) {
      auto it = substitution.find(s);
      product = product * (it == substitution.end() ? Dim::Symbol(s) : it->second);
    }
    out = out + product;
  }
  return out;
}

// Replaces declared symbols that were used before their dim was learned, everywhere, with a
// note per symbol so the binding is visible in inspect/analyze.
void ApplyUnifiedSymbols(Graph& graph, const DeclaredSymbolUnifier& unifier) {
  std::map<SymbolId, Dim> substitution;
  for (const auto& [param, dim] : unifier.unified())
    if (auto id = graph.symbols().Find(param)) substitution.emplace(*id, dim);
  if (substitution.empty()) return;
  for (const Value& v : graph.values()) {
    Value& value = graph.mutable_value(v.id);
    for (Dim& d : value.shape.dims) d = Substitute(d, substitution);
    if (value.contents)
      for (Dim& d : *value.contents) d = Substitute(d, substitution);
  }
}

// An ONNX-inferred type as a Shape: named dims become symbols (or the dim a declared symbol was
// unified with), unknown ones fresh symbols.
Shape ShapeFromInferred(const InferredType& type, SymbolTable& symbols,
                        const DeclaredSymbolUnifier& unifier, std::set<std::string>& unified_uses) {
  if (!type.has_shape) return Shape::Unknown();
  Shape shape;
  for (const InferredDim& d : type.dims) {
    if (d.value && *d.value >= 0) {
      shape.dims.emplace_back(*d.value);
    } else if (const Dim* unified = d.param.empty() ? nullptr : unifier.Find(d.param)) {
      shape.dims.push_back(*unified);
      unified_uses.insert(d.param);
    } else if (!d.param.empty()) {
      shape.dims.push_back(Dim::Symbol(symbols.Intern(d.param)));
    } else {
      shape.dims.push_back(Dim::Symbol(symbols.Fresh("unk")));
    }
  }
  return shape;
}

bool ProducesConstant(const Graph& graph, const Node& node, const OpSchema& schema) {
  // Shape and Size read only metadata, which is static in terms of the symbols.
  if (schema.reads_only_shape) return true;
  // A random draw is new every step, whatever it reads (rand_like of a constant-shaped tensor,
  // torch's bernoulli mask).
  if (schema.stochastic) return false;
  for (ValueId in : node.inputs)
    if (in.valid() && graph.value(in).kind != ValueKind::kConstant) return false;
  return true;
}

std::string UnknownOpWarning(const Node& node) {
  std::string op = node.domain.empty() ? node.op_type : node.domain + "::" + node.op_type;
  return "unknown op '" + op + "' (node '" + node.name +
         "'): using a conservative estimate (outputs kept, everything saved for backward)";
}

// The node's shape rule. Rules read inputs and outputs by position (`inputs.at(1)`), trusting
// the arity the builder checked against libonnx's schema at the model's opset; an op libonnx
// does not know (a newer opset's, another domain's) was never checked, and a node with fewer
// inputs than its rule reads is an error naming it, not an escaped exception.
Expected<std::vector<TensorInfo>> InferNodeShapes(Graph& graph, NodeId id, const Node& node,
                                                  const OpSchema& schema) {
  if (node.inputs.size() < schema.min_inputs) {
    return MakeError("node '" + node.name + "' (" + node.op_type + "): has " +
                     std::to_string(node.inputs.size()) + " inputs; the op needs at least " +
                     std::to_string(schema.min_inputs));
  }
  try {
    return schema.infer_shapes(MakeOpContext(graph, id, &graph.symbols()));
  } catch (const std::out_of_range&) {
    return MakeError("node '" + node.name + "' (" + node.op_type + "): has " +
                     std::to_string(node.inputs.size()) + " inputs and " +
                     std::to_string(node.outputs.size()) + " outputs, fewer than the op reads");
  }
}

}  // namespace

Status CheckValueSize(const Graph& graph, const Value& value) {
  if (!value.shape.known) return OkStatus();
  const Dim elements = value.shape.NumElements();
  bool overflow = elements.overflowed();
  for (const Dim& d : value.shape.dims) overflow = overflow || d.overflowed();
  if (!overflow && ByteSize(value.dtype) > 0)
    overflow = TensorBytes(elements, value.dtype).overflowed();
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
  DeclaredSymbolUnifier unifier(graph);
  std::set<std::string> unified_uses;
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    if (!schema.is_known) graph.warnings.push_back(UnknownOpWarning(node));
    MEMPLAN_TRY(std::vector<TensorInfo> outputs, InferNodeShapes(graph, id, node, schema));
    const bool constant = ProducesConstant(graph, node, schema);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (!node.outputs[i].valid()) continue;
      Value& value = graph.mutable_value(node.outputs[i]);
      TensorInfo info = i < outputs.size() ? std::move(outputs[i]) : TensorInfo{};
      auto onnx_type = inferred.find(value.name);
      const bool has_onnx = onnx_type != inferred.end();
      // Unknown ops: ONNX's inference (if it knows the op) beats the input-0 guess.
      const bool prefer_onnx = !schema.is_known && has_onnx && onnx_type->second.has_shape;
      if (has_onnx && !prefer_onnx && info.shape.known)
        unifier.Learn(onnx_type->second, info.shape, graph.symbols());
      if (has_onnx && (prefer_onnx || !info.shape.known))
        info.shape = ShapeFromInferred(onnx_type->second, graph.symbols(), unifier, unified_uses);
      if (has_onnx && (prefer_onnx || info.dtype == DType::kUndefined))
        info.dtype = onnx_type->second.dtype;
      value.dtype = info.dtype;
      value.shape = std::move(info.shape);
      value.contents = std::move(info.contents);
      value.float_values = std::move(info.float_values);
      value.kind = constant ? ValueKind::kConstant : ValueKind::kIntermediate;
      // Named at the node whose arithmetic overflowed (a shape value 2^62 * 4), not downstream
      // where a symbol the user would be asked to bind stands in for it.
      if (value.contents) {
        for (const Dim& d : *value.contents) {
          if (!d.overflowed()) continue;
          return MakeError("node '" + node.name + "' (" + node.op_type + "): shape arithmetic " +
                           "overflows 64 bits (a value of '" + value.name + "')");
        }
      }
      Status size = CheckValueSize(graph, value);
      if (!size.ok())
        return MakeError("node '" + node.name + "' (" + node.op_type + "): output " +
                         size.error().message);
    }
  }
  for (const auto& [param, dim] : unifier.unified()) {
    if (!unified_uses.count(param) && !graph.symbols().Find(param)) continue;
    graph.warnings.push_back("note: the exporter's dim '" + param + "' is " +
                             dim.ToString(graph.symbols()) +
                             " as propagated; bound to it (no need to bind it yourself)");
  }
  ApplyUnifiedSymbols(graph, unifier);
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
