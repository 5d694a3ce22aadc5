#pragma once
// What a torch >= 2.4 selective-checkpoint policy recomputes for a node-level plan: per checkpoint
// module, the ATen ops of the plan's recomputed nodes in it (graph/ops/aten_ops.h). A policy keys
// on the op, not the node, so every call of a listed op inside the module is recomputed, and every
// other op's output is saved.
//
//   plan.recompute: /h.0/ln_1/LayerNormalization, /h.0/attn/MatMul, /h.0/attn/MatMul_1
//   -> {module "h.0", aten ops [aten.native_layer_norm, aten.mm, aten.bmm, aten.addmm]}

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/recompute/checkpoint_modules.h"

namespace memplan {

struct SelectiveModule {
  std::string module_path;
  std::vector<std::string> aten_ops;        // in order of first appearance, no duplicates
  std::vector<std::string> unmapped_nodes;  // recomputed nodes whose op has no ATen mapping
};

// One entry per checkpoint module of `checkpoints`, in its order. A node's op type is the one
// `op_types` records for it (plan.recompute_op_types: names that do not end in their op type),
// else OpTypeOfNodeName's reading of its name.
std::vector<SelectiveModule> SelectiveRecomputeOf(
    const CheckpointModules& checkpoints, const std::map<std::string, std::string>& op_types);

}  // namespace memplan
