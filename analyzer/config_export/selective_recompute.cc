#include "analyzer/config_export/selective_recompute.h"

#include <algorithm>

#include "graph/ops/aten_ops.h"

namespace memplan {

std::string OpTypeOfNodeName(std::string_view onnx_node_name) {
  size_t slash = onnx_node_name.rfind('/');
  std::string_view last =
      slash == std::string_view::npos ? onnx_node_name : onnx_node_name.substr(slash + 1);
  size_t underscore = last.rfind('_');
  if (underscore != std::string_view::npos && underscore + 1 < last.size() &&
      std::all_of(last.begin() + static_cast<std::ptrdiff_t>(underscore) + 1, last.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    last = last.substr(0, underscore);
  return std::string(last);
}

std::vector<SelectiveModule> SelectiveRecomputeOf(const CheckpointModules& checkpoints) {
  std::vector<SelectiveModule> result;
  for (const CheckpointModule& module : checkpoints.modules) {
    SelectiveModule selective{module.module_path, {}, {}};
    for (const std::string& node : module.nodes) {
      std::span<const std::string_view> ops = AtenOpsOfOnnxOp(OpTypeOfNodeName(node));
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
