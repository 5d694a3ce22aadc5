#include "analyzer/derivation/recompute_set.h"

#include <string>

#include "analyzer/derivation/runtime_values.h"

namespace memplan {

Expected<RecomputeSet> ResolveRecomputeSet(const Graph& graph, const std::vector<NodeId>& listed) {
  RecomputeSet set;
  set.recompute.assign(graph.num_nodes(), false);
  for (NodeId r : listed) {
    if (!r.valid() || r.index() >= graph.num_nodes())
      return MakeError("recompute names node id " + std::to_string(r.value) +
                       ", but the graph has " + std::to_string(graph.num_nodes()) + " nodes");
    if (RunsAtRuntime(graph, r)) set.recompute[r.index()] = true;
  }
  for (size_t n = 0; n < graph.num_nodes(); ++n)
    if (set.recompute[n]) set.nodes.push_back(NodeId(n));
  return set;
}

}  // namespace memplan
