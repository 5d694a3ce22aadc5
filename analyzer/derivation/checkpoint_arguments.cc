#include "analyzer/derivation/checkpoint_arguments.h"

#include <algorithm>

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

const OpSchema& SchemaOf(const Node& node) {
  return OpRegistry::Get().FindOrUnknown(node.op_type, node.domain);
}

bool IsFolded(const Graph& graph, ValueId v) {
  return v.valid() && graph.value(v).kind == ValueKind::kConstant;
}

// The folded value whose storage `v` shares: back through views and same-dtype casts.
ValueId StorageOwner(const Graph& graph, ValueId v, const std::function<bool(NodeId)>& is_view) {
  while (true) {
    const NodeId producer = graph.value(v).producer;
    if (!producer.valid()) return v;
    const Node& node = graph.node(producer);
    if (node.inputs.empty() || !IsFolded(graph, node.inputs[0])) return v;
    const ValueId base = node.inputs[0];
    const bool same_dtype_cast =
        SchemaOf(node).converts_dtype && graph.value(base).dtype == graph.value(v).dtype;
    if (!is_view(producer) && !same_dtype_cast) return v;
    v = base;
  }
}

// Whether PyTorch holds `v` as a tensor: made by a node other than a literal, and not a size or
// shape vector.
bool IsShapeDerivedTensor(const Graph& graph, ValueId v) {
  const Value& value = graph.value(v);
  if (!value.producer.valid() ||
      SchemaOf(graph.node(value.producer)).host_value == OpSchema::HostValue::kLiteral)
    return false;
  if (!value.shape.known) return false;
  return IsFloating(value.dtype) || value.dtype == DType::kBool || value.shape.dims.size() >= 2;
}

}  // namespace

std::vector<std::vector<ValueId>> CheckpointArguments(
    const Graph& graph, const std::vector<std::vector<NodeId>>& modules,
    const std::function<bool(NodeId)>& is_view) {
  std::vector<std::vector<ValueId>> arguments;
  std::vector<bool> member(graph.num_nodes(), false);
  for (const std::vector<NodeId>& module : modules) {
    for (NodeId n : module)
      if (n.valid() && n.index() < graph.num_nodes()) member[n.index()] = true;
    std::vector<ValueId> held;
    for (NodeId n : module) {
      if (!n.valid() || n.index() >= graph.num_nodes()) continue;
      for (ValueId u : graph.node(n).inputs) {
        if (!IsFolded(graph, u)) continue;
        const NodeId producer = graph.value(u).producer;
        if (producer.valid() && member[producer.index()]) continue;  // made inside: re-made
        const ValueId owner = StorageOwner(graph, u, is_view);
        const NodeId owner_producer = graph.value(owner).producer;
        if (owner_producer.valid() && member[owner_producer.index()]) continue;
        if (IsShapeDerivedTensor(graph, owner)) held.push_back(owner);
      }
    }
    for (NodeId n : module)
      if (n.valid() && n.index() < graph.num_nodes()) member[n.index()] = false;
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    arguments.push_back(std::move(held));
  }
  return arguments;
}

}  // namespace memplan
