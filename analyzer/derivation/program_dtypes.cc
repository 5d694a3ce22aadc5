#include "analyzer/derivation/program_dtypes.h"

#include "analyzer/precision/dtype_propagation.h"
#include "analyzer/precision/loss_precision.h"

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
  // The loss follows its category under autocast and master weights; pure half training runs it
  // on the logits as stored (analyzer/precision/loss_precision.h).
  dtypes.loss_compute = AutoLossDType(regime, loss_amp, dtypes.value[model_output.index()]);
  return dtypes;
}

}  // namespace memplan
