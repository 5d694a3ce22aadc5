#include "analyzer/report/placement_report.h"

#include <algorithm>
#include <sstream>

namespace memplan {
namespace {

bool IsHalf(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

std::string OverrideFlag(const NodePlacement& placed) {
  return placed.dtype == DType::kFloat32 ? "--fp32-ops" : "--fp16-ops";
}

}  // namespace

PlacementLists ListPlacedNodes(const Graph& graph, const PrecisionPlacement& placement) {
  PlacementLists lists;
  for (const NodePlacement& placed : placement.nodes) {
    if (placed.reason == PlacementReason::kNotPlaced) continue;
    const std::string& name = graph.node(placed.node).name;
    if (IsHalf(placed.dtype)) lists.fp16_ops.push_back(name);
    if (placed.dtype == DType::kFloat32) lists.fp32_ops.push_back(name);
  }
  return lists;
}

std::string PlacementReasonText(const Graph& graph, const NodePlacement& placed) {
  std::string text(PlacementReasonName(placed.reason));
  if (placed.reason == PlacementReason::kFollowsInputs) {
    if (placed.decided_by.valid()) {
      text += ": '" + graph.value(placed.decided_by).name + "' is " +
              std::string(DTypeName(placed.dtype));
    } else {
      text += ": no floating activation input";
    }
  } else if (placed.reason == PlacementReason::kOverride) {
    text += ": " + OverrideFlag(placed) + " " + placed.override_entry;
  }
  return text;
}

std::string PlacementTable(const Graph& graph, const PrecisionPlacement& placement) {
  struct Row {
    std::string name, op, dtype, reason;
  };
  std::vector<Row> rows = {{"node", "op", "dtype", "reason"}};
  for (const NodePlacement& placed : placement.nodes) {
    if (placed.reason == PlacementReason::kNotPlaced) continue;
    const Node& node = graph.node(placed.node);
    rows.push_back({node.name, node.op_type, std::string(DTypeName(placed.dtype)),
                    PlacementReasonText(graph, placed)});
  }
  size_t name_width = 0, op_width = 0, dtype_width = 0;
  for (const Row& r : rows) {
    name_width = std::max(name_width, r.name.size());
    op_width = std::max(op_width, r.op.size());
    dtype_width = std::max(dtype_width, r.dtype.size());
  }
  std::ostringstream out;
  for (const Row& r : rows) {
    out << r.name << std::string(name_width - r.name.size() + 2, ' ') << r.op
        << std::string(op_width - r.op.size() + 2, ' ') << r.dtype
        << std::string(dtype_width - r.dtype.size() + 2, ' ') << r.reason << "\n";
  }
  return out.str();
}

nlohmann::ordered_json PlacementToJson(const Graph& graph, const PrecisionPlacement& placement) {
  nlohmann::ordered_json j;
  j["precision"] = std::string(PrecisionName(placement.precision));
  j["loss_scaling"] = std::string(LossScalingModeName(placement.loss_scaling.mode));
  if (placement.loss_scaling.mode != LossScalingMode::kNone)
    j["loss_scale"] = placement.loss_scaling.scale;
  PlacementLists lists = ListPlacedNodes(graph, placement);
  j["fp16_ops"] = lists.fp16_ops;
  j["fp32_ops"] = lists.fp32_ops;
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const NodePlacement& placed : placement.nodes) {
    if (placed.reason == PlacementReason::kNotPlaced) continue;
    const Node& node = graph.node(placed.node);
    nlohmann::ordered_json n;
    n["name"] = node.name;
    n["op"] = node.op_type;
    n["dtype"] = std::string(DTypeName(placed.dtype));
    n["reason"] = std::string(PlacementReasonName(placed.reason));
    if (placed.reason == PlacementReason::kFollowsInputs && placed.decided_by.valid())
      n["decided_by"] = graph.value(placed.decided_by).name;
    if (placed.reason == PlacementReason::kOverride) n["override"] = placed.override_entry;
    nodes.push_back(std::move(n));
  }
  j["nodes"] = std::move(nodes);
  return j;
}

}  // namespace memplan
