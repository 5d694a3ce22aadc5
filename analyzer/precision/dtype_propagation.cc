#include "analyzer/precision/dtype_propagation.h"

#include "analyzer/precision/precision_policy.h"
#include "analyzer/program/runtime_values.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

class Propagation {
 public:
  Propagation(const Graph& graph, const OpRegistry& registry, const AmpRegime& regime,
              const std::vector<std::optional<DType>>& node_override)
      : g_(graph),
        registry_(registry),
        regime_(regime),
        working_(regime.working),
        node_override_(node_override) {}

  PropagatedDTypes Run(const std::vector<NodeId>& order) {
    result_.nodes.assign(g_.num_nodes(), NodeDType{});
    result_.values.assign(g_.num_values(), DType::kUndefined);
    for (ValueId v : g_.inputs())
      if (IsRuntimeValue(v) && !IsParameter(v)) result_.values[v.index()] = g_.value(v).dtype;
    for (NodeId n : order) Decide(n);
    return std::move(result_);
  }

 private:
  bool IsRuntimeValue(ValueId v) const { return memplan::IsRuntimeValue(g_, v); }
  bool IsParameter(ValueId v) const { return IsFloatingParameter(g_, v); }
  DType ValueDType(ValueId v) const { return result_.values[v.index()]; }

  void Decide(NodeId n) {
    const Node& node = g_.node(n);
    NodeDType& d = result_.nodes[n.index()];
    if (!RunsAtRuntime(g_, n)) return;
    const OpSchema& schema = registry_.FindOrUnknown(node.op_type, node.domain);
    if (working_ == DType::kUndefined || schema.converts_dtype) {
      // fp32 runs the graph as written; a Cast produces the dtype it names.
      SetOutputs(node, DType::kUndefined);
      return;
    }
    if (schema.is_view && schema.IsViewFor(MakeOpContext(g_, n))) {
      ValueId in = node.inputs.empty() ? ValueId() : node.inputs[0];
      if (IsParameter(in)) {
        d.compute = regime_.forward_parameter;
      } else if (in.valid() && IsFloating(ValueDType(in))) {
        d.compute = ValueDType(in);
      }
      if (d.compute != DType::kUndefined) {
        d.placed = true;
        d.reason = PlacementReason::kFollowsInputs;
        d.decided_by = in;
      }
      SetOutputs(node, d.compute);
      return;
    }
    std::vector<DType> activation_dtypes;
    bool touches_floating = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId u = node.inputs[i];
      // A number torch passes (Dropout's p) never decides the dtype an op computes in.
      if (schema.IsScalarArgument(i)) continue;
      if (IsParameter(u)) touches_floating = true;
      if (IsRuntimeValue(u) && !IsParameter(u) && IsFloating(ValueDType(u))) {
        activation_dtypes.push_back(ValueDType(u));
        touches_floating = true;
      }
    }
    for (ValueId o : node.outputs)
      if (IsRuntimeValue(o) && IsFloating(g_.value(o).dtype)) touches_floating = true;
    d.placed = touches_floating;

    std::optional<DType> override_dtype;
    if (n.index() < node_override_.size()) override_dtype = node_override_[n.index()];
    d.compute = ExecutionDType(regime_, schema.amp, override_dtype, activation_dtypes);
    if (override_dtype) {
      d.reason = PlacementReason::kOverride;
    } else if (!regime_.placed_by_op_category) {
      // Pure bf16: no autocast, every op runs in its (bf16) inputs' dtype.
      d.reason = PlacementReason::kFollowsInputs;
      d.decided_by = FirstActivationInputOf(node, d.compute);
    } else {
      switch (schema.amp) {
        case AmpCategory::kFp16Safe:
          d.reason = PlacementReason::kFp16Safe;
          break;
        case AmpCategory::kFp32Required:
          d.reason = PlacementReason::kFp32Required;
          break;
        case AmpCategory::kFollowInputs:
          d.reason = PlacementReason::kFollowsInputs;
          d.decided_by = FirstActivationInputOf(node, d.compute);
          break;
      }
    }
    if (!d.placed) {
      d.reason = PlacementReason::kNotPlaced;
      d.decided_by = ValueId();
    }
    SetOutputs(node, d.compute);
  }

  // The first activation input of `node` stored as `dtype` (the one that decided a
  // follows-inputs node), or invalid when none is.
  ValueId FirstActivationInputOf(const Node& node, DType dtype) const {
    for (ValueId u : node.inputs)
      if (IsRuntimeValue(u) && !IsParameter(u) && ValueDType(u) == dtype) return u;
    return ValueId();
  }

  // Floating outputs take the node's dtype; others (and every output of a node without one)
  // keep the graph's.
  void SetOutputs(const Node& node, DType compute) {
    for (ValueId o : node.outputs) {
      if (!IsRuntimeValue(o)) continue;
      DType graph_dtype = g_.value(o).dtype;
      result_.values[o.index()] =
          compute == DType::kUndefined || !IsFloating(graph_dtype) ? graph_dtype : compute;
    }
  }

  const Graph& g_;
  const OpRegistry& registry_;
  const AmpRegime regime_;
  const DType working_;
  const std::vector<std::optional<DType>>& node_override_;
  PropagatedDTypes result_;
};

}  // namespace

PropagatedDTypes PropagateDTypes(const Graph& graph, const OpRegistry& registry,
                                 const std::vector<NodeId>& order, const AmpRegime& regime,
                                 const std::vector<std::optional<DType>>& node_override) {
  return Propagation(graph, registry, regime, node_override).Run(order);
}

}  // namespace memplan
