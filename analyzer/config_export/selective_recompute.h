#pragma once
// What a torch >= 2.4 selective-checkpoint policy recomputes for a node-level plan: per checkpoint
// module, the ATen ops of the plan's recomputed nodes in it (graph/ops/aten_ops.h). A policy keys
// on the op, not the node, so every call of a listed op inside the module is recomputed, and every
// other op's output is saved.
//
//   plan.recompute: /h.0/ln_1/LayerNormalization, /h.0/attn/MatMul, /h.0/attn/MatMul_1
//   -> {module "h.0", aten ops [aten.native_layer_norm, aten.mm, aten.bmm, aten.addmm]}

#include <string>
#include <string_view>
#include <vector>

#include "analyzer/recompute/checkpoint_modules.h"

namespace memplan {

// The op type of a torch.onnx.export node name: its last '/' segment without the exporter's
// "_<n>" suffix: "/h.0/attn/MatMul_1" -> "MatMul", "Relu_3" -> "Relu", "/fc1/Gemm" -> "Gemm".
std::string OpTypeOfNodeName(std::string_view onnx_node_name);

struct SelectiveModule {
  std::string module_path;
  std::vector<std::string> aten_ops;        // in order of first appearance, no duplicates
  std::vector<std::string> unmapped_nodes;  // recomputed nodes whose op has no ATen mapping
};

// One entry per checkpoint module of `checkpoints`, in its order.
std::vector<SelectiveModule> SelectiveRecomputeOf(const CheckpointModules& checkpoints);

}  // namespace memplan
