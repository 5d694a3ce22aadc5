#include "analyzer/config_export/selective_recompute.h"

#include <algorithm>

#include "graph/ops/aten_ops.h"

namespace memplan {

std::vector<SelectiveModule> SelectiveRecomputeOf(
    const CheckpointModules& checkpoints, const std::map<std::string, std::string>& op_types) {
  std::vector<SelectiveModule> result;
  for (const CheckpointModule& module : checkpoints.modules) {
    SelectiveModule selective{module.module_path, {}, {}};
    for (const std::string& node : module.nodes) {
      auto recorded = op_types.find(node);
      std::span<const std::string_view> ops =
          AtenOpsOfOnnxOp(recorded != op_types.end() ? recorded->second : OpTypeOfNodeName(node));
      if (ops.empty()) selective.unmapped_nodes.push_back(node);
      for (std::string_view op : ops) {
        if (std::find(selective.aten_ops.begin(), selective.aten_ops.end(), op) ==
            selective.aten_ops.end())
          selective.aten_ops.emplace_back(op);
      }
    }
    result.push_back(std::move(selective));
  }
  return result;
}

}  // namespace memplan
