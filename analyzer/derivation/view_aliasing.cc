#include "analyzer/derivation/view_aliasing.h"

#include "analyzer/program/runtime_values.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/view_layout.h"

namespace memplan {

namespace {

// A node that writes its outputs in a layout of its own (OpSchema::output_strides): the views
// after it start from that layout.
void RecordOutputLayout(const Graph& graph, NodeId n, const std::vector<Strides>& strides,
                        ViewAliasing& views) {
  const Node& node = graph.node(n);
  for (size_t j = 0; j < node.outputs.size() && j < strides.size(); ++j) {
    const ValueId out = node.outputs[j];
    if (!out.valid() || strides[j].empty() || !graph.value(out).shape.known) continue;
    if (IsContiguousLayout(graph.value(out).shape, strides[j])) continue;
    views.value_is_strided[out.index()] = true;
    views.value_strides[out.index()] = strides[j];
  }
}

// The context an output_strides rule sees: `n`'s inputs as it reads them, with the layouts the
// views so far gave them and, floating ones, in the dtype the node computes in (an op reads
// casts of the others, which keep their layout).
OpContext ReadingContext(const Graph& graph, NodeId n, const ViewAliasing& views,
                         const ProgramDTypes* dtypes) {
  OpContext ctx = MakeOpContext(graph, n);
  const Node& node = graph.node(n);
  const DType compute = dtypes != nullptr && n.index() < dtypes->node_compute.size()
                            ? dtypes->node_compute[n.index()]
                            : DType::kUndefined;
  for (size_t i = 0; i < node.inputs.size() && i < ctx.inputs.size(); ++i) {
    const ValueId in = node.inputs[i];
    if (!in.valid()) continue;
    ctx.inputs[i].strides = views.value_strides[in.index()];
    if (compute != DType::kUndefined && IsFloating(ctx.inputs[i].dtype))
      ctx.inputs[i].dtype = compute;
  }
  return ctx;
}

}  // namespace

ViewAliasing DecideViews(const Graph& graph, const OpRegistry& registry,
                         const std::vector<NodeId>& order, const ProgramDTypes* dtypes) {
  ViewAliasing views;
  views.node_is_view.assign(graph.num_nodes(), false);
  views.value_strides.assign(graph.num_values(), Strides());
  views.value_is_strided.assign(graph.num_values(), false);
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    const OpSchema& schema = registry.FindOrUnknown(node.op_type, node.domain);
    if (schema.output_strides) {  // a node that writes new tensors in a layout of its own
      RecordOutputLayout(graph, n, schema.output_strides(ReadingContext(graph, n, views, dtypes)),
                         views);
      continue;
    }
    if (!schema.is_view || node.inputs.empty() || !node.inputs[0].valid()) continue;
    const OpContext ctx = MakeOpContext(graph, n);
    if (!schema.IsViewFor(ctx)) continue;
    const ValueId base = node.inputs[0];
    // Constants and shape arithmetic have no storage to alias; the program folds them away.
    if (!IsRuntimeValue(graph, base)) {
      views.node_is_view[n.index()] = true;
      continue;
    }
    const Shape& base_shape = graph.value(base).shape;
    const Strides& base_strides = views.value_strides[base.index()];
    bool shapes_known = base_shape.known;
    for (ValueId out : node.outputs)
      if (out.valid() && !graph.value(out).shape.known) shapes_known = false;
    if (!shapes_known) {
      // No layout to reason about: a view that keeps its input's strided-ness (the program
      // refuses unknown shapes where it needs sizes).
      views.node_is_view[n.index()] = true;
      for (ValueId out : node.outputs)
        if (out.valid()) views.value_is_strided[out.index()] = views.value_is_strided[base.index()];
      continue;
    }
    const Strides input = LayoutOf(base_shape, base_strides);
    std::optional<std::vector<Strides>> outputs =
        schema.view_strides ? schema.view_strides(ctx, input)
                            : std::vector<Strides>(node.outputs.size(), input);
    if (!outputs || outputs->size() != node.outputs.size()) continue;  // torch copies
    views.node_is_view[n.index()] = true;
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      const ValueId out = node.outputs[j];
      if (!out.valid()) continue;
      const bool strided = !IsContiguousLayout(graph.value(out).shape, (*outputs)[j]);
      views.value_is_strided[out.index()] = strided;
      // A dense view is laid out as a fresh tensor of its shape.
      if (strided) views.value_strides[out.index()] = std::move((*outputs)[j]);
    }
  }
  return views;
}

void AliasSameDTypeCasts(const Graph& graph, const std::vector<NodeId>& order,
                         const std::vector<DType>& value_dtype, ViewAliasing& views) {
  auto stored = [&](ValueId v) {
    const DType placed =
        v.index() < value_dtype.size() ? value_dtype[v.index()] : DType::kUndefined;
    return placed != DType::kUndefined ? placed : graph.value(v).dtype;
  };
  for (NodeId n : order) {
    const Node& node = graph.node(n);
    if (!OpRegistry::Get().FindOrUnknown(node.op_type, node.domain).converts_dtype ||
        node.inputs.empty() || node.outputs.size() != 1)
      continue;
    const ValueId in = node.inputs[0];
    const ValueId out = node.outputs[0];
    if (!in.valid() || !out.valid() || !IsRuntimeValue(graph, in)) continue;
    if (stored(in) != stored(out) || stored(in) == DType::kUndefined) continue;
    views.node_is_view[n.index()] = true;
    views.value_strides[out.index()] = views.value_strides[in.index()];
    views.value_is_strided[out.index()] = views.value_is_strided[in.index()];
  }
}

}  // namespace memplan
