#pragma once
// How a precision placement is shown: the per-node table the CLI prints, the fp16_ops / fp32_ops
// lists of the JSON plan (docs/json_schema.md), and a JSON object with every node's reason.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/precision/precision_placement.h"
#include "graph/graph.h"

namespace memplan {

// Node names by placed dtype, in NodeId order. `fp16_ops` holds the nodes in the working dtype
// (fp16, or bf16 in bf16 mode: the JSON key names the half-precision list); `fp32_ops` the nodes
// in fp32. Unplaced nodes are in neither.
struct PlacementLists {
  std::vector<std::string> fp16_ops;
  std::vector<std::string> fp32_ops;
};
PlacementLists ListPlacedNodes(const Graph& graph, const PrecisionPlacement& placement);

// Why one node has its dtype, in words: "fp16-safe", "fp32-required",
// "follows-inputs: 'y' is float32", "follows-inputs: no floating activation input",
// "override: --fp32-ops Softmax", "not-placed".
std::string PlacementReasonText(const Graph& graph, const NodePlacement& placed);

// One line per placed node, aligned: name, op type, dtype, reason; a header line first.
//   node      op       dtype    reason
//   mm        MatMul   float16  fp16-safe
std::string PlacementTable(const Graph& graph, const PrecisionPlacement& placement);

// {"precision", "loss_scaling", "loss_scale" (static/dynamic only), "fp16_ops", "fp32_ops",
//  "nodes": [{"name", "op", "dtype", "reason", "decided_by" | "override"}]} (placed nodes only).
nlohmann::ordered_json PlacementToJson(const Graph& graph, const PrecisionPlacement& placement);

}  // namespace memplan
