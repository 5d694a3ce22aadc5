#pragma once
// The one place that decides which dtype every node computes in and every value is stored in
// under mixed precision. PlacePrecision (precision_placement.h) calls it to place and explain;
// the derivation's precision pass (analyzer/derivation/program_dtypes.h) calls it with the
// placement's node_dtype as overrides, so the program runs exactly what was placed.
//
// Rules, in topological order (torch.autocast's, the AMP category read from the op registry):
//  * fp32 mode, a node with no runtime output (constant folding) or a Cast node: no compute
//    dtype; its outputs keep their graph dtypes.
//  * a view allocates nothing, so it cannot change dtype: it computes in its input's dtype (the
//    regime's forward parameter dtype when the input is a parameter: the working copy under
//    master weights, fp32 under autocast; none when the input is not floating);
//  * an override wins (ProgramOptions::node_dtype, --fp32-ops / --fp16-ops);
//  * otherwise ExecutionDType (analyzer/precision/precision_policy.h) of the regime, the node's AMP
//  category
//    and the dtypes of its floating activation inputs (parameters excluded: they are read as
//    whichever copy fits). Pure bf16 runs every node in bf16.
// A floating output takes the node's compute dtype; any other output keeps its graph dtype.

#include <optional>
#include <vector>

#include "analyzer/precision/amp_regime.h"
#include "analyzer/precision/precision_placement.h"
#include "graph/dtype.h"
#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

class OpRegistry;

// The decision for one node.
struct NodeDType {
  // The dtype the node's steps are tagged with (kUndefined: as the graph says). A node that
  // touches no floating tensor still gets the policy's dtype here, as its steps always did; it
  // is not `placed`.
  DType compute = DType::kUndefined;
  // Whether the placement reports this node: it runs, is not a Cast, and computes on a floating
  // tensor (a view: its input is floating). Reasons and overrides are only meaningful when set.
  bool placed = false;
  PlacementReason reason = PlacementReason::kNotPlaced;
  // kFollowsInputs: the input whose dtype won (a view: its input; otherwise the first widest
  // activation input, invalid when the node reads none and so runs in the working dtype).
  ValueId decided_by;
};

struct PropagatedDTypes {
  std::vector<NodeDType> nodes;  // indexed by NodeId
  // Indexed by ValueId: the dtype a runtime activation is stored in (graph inputs and outputs of
  // running nodes); kUndefined for parameters (their copies are chosen per reader), constants and
  // values nothing produces.
  std::vector<DType> values;
};

// REQUIRES: `order` is a topological order of `graph`; `node_override` is indexed by NodeId
// (shorter = no override for the rest; ignored in fp32 mode, for views and Cast nodes).
PropagatedDTypes PropagateDTypes(const Graph& graph, const OpRegistry& registry,
                                 const std::vector<NodeId>& order, const AmpRegime& regime,
                                 const std::vector<std::optional<DType>>& node_override);

}  // namespace memplan
