#include "analyzer/derivation/program_dtypes.h"

#include "analyzer/precision/dtype_propagation.h"
#include "analyzer/precision_policy.h"

namespace memplan {

ProgramDTypes DeriveProgramDTypes(const Graph& graph, const OpRegistry& registry,
                                  const std::vector<NodeId>& order, Precision precision,
                                  const std::vector<std::optional<DType>>& node_dtype,
                                  ValueId model_output, AmpCategory loss_amp) {
  PropagatedDTypes propagated = PropagateDTypes(graph, registry, order, precision, node_dtype);
  ProgramDTypes dtypes;
  dtypes.node_compute.reserve(propagated.nodes.size());
  for (const NodeDType& node : propagated.nodes) dtypes.node_compute.push_back(node.compute);
  dtypes.value = std::move(propagated.values);
  // The loss follows the policy like any op: autocast has no override for it.
  dtypes.loss_compute =
      ExecutionDType(precision, loss_amp, std::nullopt, {dtypes.value[model_output.index()]});
  return dtypes;
}

}  // namespace memplan
