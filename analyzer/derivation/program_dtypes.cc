#include "analyzer/derivation/program_dtypes.h"

#include "analyzer/precision/dtype_propagation.h"
#include "analyzer/precision/precision_policy.h"

namespace memplan {

ProgramDTypes DeriveProgramDTypes(const Graph& graph, const OpRegistry& registry,
                                  const std::vector<NodeId>& order, const AmpRegime& regime,
                                  const std::vector<std::optional<DType>>& node_dtype,
                                  ValueId model_output, AmpCategory loss_amp) {
  PropagatedDTypes propagated = PropagateDTypes(graph, registry, order, regime, node_dtype);
  ProgramDTypes dtypes;
  dtypes.node_compute.reserve(propagated.nodes.size());
  for (const NodeDType& node : propagated.nodes) dtypes.node_compute.push_back(node.compute);
  dtypes.value = std::move(propagated.values);
  // The loss follows its category in every mixed regime: autocast has no override for it, and a
  // pure bf16 model upcasts its logits for the loss (HF's logits.float(), torchtune's upcast).
  if (regime.mixed())
    dtypes.loss_compute = CategoryDType(
        regime.working, loss_amp, {dtypes.value[model_output.index()]}, regime.forward_parameter);
  return dtypes;
}

}  // namespace memplan
