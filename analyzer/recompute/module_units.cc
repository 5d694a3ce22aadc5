#include "analyzer/recompute/module_units.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "analyzer/recompute/checkpoint_modules.h"

namespace memplan {

std::vector<CheckpointableModule> FindCheckpointableModules(const Graph& graph) {
  std::vector<CheckpointableModule> modules;
  std::map<std::string, size_t, std::less<>> index;
  for (size_t n = 0; n < graph.num_nodes(); ++n) {
    std::optional<std::string> path = CheckpointModuleForNode(graph.node(NodeId(n)).name);
    if (!path || !IsRepeatedBlockPath(*path)) continue;
    auto [it, inserted] = index.emplace(*path, modules.size());
    if (inserted) modules.push_back(CheckpointableModule{*path, {}});
    modules[it->second].nodes.push_back(NodeId(n));
  }
  return modules;
}

std::vector<size_t> ModuleCheckpointOrder(const std::vector<ModuleCheckpointCost>& costs) {
  std::vector<size_t> order;
  for (size_t i = 0; i < costs.size(); ++i)
    if (costs[i].dropped_bytes > 0) order.push_back(i);
  // Bytes per second re-run, rounded to float (about 7 digits): blocks of one architecture
  // differ only by rounding and must compare equal so they keep forward order. A module re-running
  // nothing measurable has an infinite ratio.
  std::vector<float> ratio(costs.size());
  for (size_t i = 0; i < costs.size(); ++i)
    ratio[i] = costs[i].rerun_seconds > 0
                   ? static_cast<float>(costs[i].dropped_bytes / costs[i].rerun_seconds)
                   : std::numeric_limits<float>::infinity();
  std::stable_sort(order.begin(), order.end(),
                   [&ratio](size_t a, size_t b) { return ratio[a] > ratio[b]; });
  return order;
}

}  // namespace memplan
