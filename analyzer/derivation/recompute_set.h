#pragma once
// Derivation pass 3, recompute: which nodes' outputs are dropped after forward and re-created in
// backward (ProgramOptions::recompute), validated against the graph. A node that does not run
// (constant folding) has nothing to drop, so it is not recomputed whatever the list says. Step
// emission re-runs a dropped node just before the first backward step that needs one of its
// outputs, recursing into dropped inputs first, so a chain of listed nodes is re-run as one
// segment from its checkpoints (the inputs nobody dropped).

#include <vector>

#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

struct RecomputeSet {
  std::vector<bool> recompute;  // per node
  std::vector<NodeId> nodes;    // the recomputed nodes, sorted by id (TrainingProgram::recomputed)
};

// Errors: an id that names no node of `graph`.
Expected<RecomputeSet> ResolveRecomputeSet(const Graph& graph, const std::vector<NodeId>& listed);

}  // namespace memplan
