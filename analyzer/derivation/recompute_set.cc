#include "analyzer/derivation/recompute_set.h"

#include <algorithm>
#include <string>

#include "analyzer/program/runtime_values.h"

namespace memplan {
namespace {

Status CheckNodeId(const Graph& graph, NodeId r) {
  if (!r.valid() || r.index() >= graph.num_nodes())
    return MakeError("recompute names node id " + std::to_string(r.value) + ", but the graph has " +
                     std::to_string(graph.num_nodes()) + " nodes");
  return OkStatus();
}

// Whether a value `n` writes is read outside the module (`member` marks the module's nodes) or is a
// graph output: the checkpoint's outputs, which forward keeps.
bool WritesModuleOutput(const Graph& graph, NodeId n, const std::vector<bool>& member) {
  for (ValueId o : graph.node(n).outputs) {
    if (!IsRuntimeValue(graph, o)) continue;
    const Value& value = graph.value(o);
    if (value.is_graph_output) return true;
    for (NodeId consumer : value.consumers)
      if (!member[consumer.index()]) return true;
  }
  return false;
}

}  // namespace

Expected<RecomputeSet> ResolveRecomputeSet(const Graph& graph, const std::vector<NodeId>& listed,
                                           const std::vector<std::vector<NodeId>>& modules) {
  RecomputeSet set;
  set.recompute.assign(graph.num_nodes(), false);
  set.group_of.assign(graph.num_nodes(), -1);
  for (NodeId r : listed) {
    MEMPLAN_RETURN_IF_ERROR(CheckNodeId(graph, r));
    if (RunsAtRuntime(graph, r)) set.recompute[r.index()] = true;
  }
  std::vector<bool> member(graph.num_nodes(), false);
  for (const std::vector<NodeId>& module : modules) {
    for (NodeId r : module) {
      MEMPLAN_RETURN_IF_ERROR(CheckNodeId(graph, r));
      if (set.group_of[r.index()] >= 0 || member[r.index()])
        return MakeError("recompute module lists node '" + graph.node(r).name +
                         "', which another module (or this one) already lists");
      member[r.index()] = true;
    }
    const int group = static_cast<int>(set.groups.size());
    std::vector<NodeId> dropped;
    for (NodeId r : module) {
      if (!RunsAtRuntime(graph, r) || WritesModuleOutput(graph, r, member)) continue;
      set.recompute[r.index()] = true;
      set.group_of[r.index()] = group;
      dropped.push_back(r);
    }
    for (NodeId r : module) member[r.index()] = false;
    std::sort(dropped.begin(), dropped.end());
    set.groups.push_back(std::move(dropped));
  }
  for (size_t n = 0; n < graph.num_nodes(); ++n)
    if (set.recompute[n]) set.nodes.push_back(NodeId(n));
  return set;
}

}  // namespace memplan
