#pragma once
// From the ONNX node names of a plan's `recompute` list to the PyTorch modules a training script
// wraps in torch.utils.checkpoint.checkpoint.
//
// torch.onnx.export names each node after the module scopes it ran in, then the op type:
//
//   "/layer3/layer3.1/conv1/Conv"      resnet: Sequential layer3, its element 1, that block's conv1
//   "/blocks.0/blocks.0.1/Relu"        a ModuleList iterated in forward(): blocks[0], then its [1]
//   "/h.5/attn/MatMul_1"               GPT-2 style: transformer block 5, its attention
//
// A scope segment is either relative to its parent ("conv1") or already qualified from the same
// base as the previous segment ("layer3.1" after "layer3"); folding them gives the module paths
// layer3 -> layer3.1 -> layer3.1.conv1 (what model.get_submodule() accepts).
//
// The checkpointed unit is the *shallowest* module whose path ends in a numeric index — an element
// of a Sequential/ModuleList, i.e. the repeated block ("layer3.1", "blocks.0", "h.5"). Recompute
// is only worth its cost at block granularity, and that is the unit people checkpoint by hand and
// Hugging Face's gradient_checkpointing uses. A node with scopes but no indexed one maps to its
// deepest module (always a valid, if small, checkpoint unit). A node without the exporter's scope
// form (no leading '/', or no scope before the op type, e.g. "/Flatten", "Relu_3") maps to no
// module; exporters list such nodes in a comment instead of guessing.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memplan {

// The module paths of the scopes of a PyTorch-exported node name, outermost first:
// "/layer3/layer3.1/conv1/Conv" -> {"layer3", "layer3.1", "layer3.1.conv1"}. Empty when the name
// does not have the exporter's "/scope/.../OpType" form.
std::vector<std::string> ModuleScopesOfNode(std::string_view onnx_node_name);

// The op type of a torch.onnx.export node name: its last '/' segment without the exporter's
// "_<n>" suffix: "/h.0/attn/MatMul_1" -> "MatMul", "Relu_3" -> "Relu", "/fc1/Gemm" -> "Gemm". A
// dynamo export's FX names ("/h.0/fc1/node_linear_3") do not end in their op type: the plan
// records those (plan.recompute_op_types).
std::string OpTypeOfNodeName(std::string_view onnx_node_name);

// Whether a module path ends in a numeric index ("h.5", "layer3.1"): an element of a
// Sequential/ModuleList, the repeated block a checkpoint wraps.
bool IsRepeatedBlockPath(std::string_view module_path);

// The module to checkpoint for one recomputed node (rules above), or nullopt.
std::optional<std::string> CheckpointModuleForNode(std::string_view onnx_node_name);

struct CheckpointModule {
  std::string module_path;         // "layer3.1"
  std::vector<std::string> nodes;  // the plan's recomputed nodes inside it, in plan order
};

struct CheckpointModules {
  std::vector<CheckpointModule> modules;    // in order of first appearance in the plan
  std::vector<std::string> unmapped_nodes;  // recomputed nodes with no module (see above)

  // DeepSpeed's number_checkpoints: one segment per module, and each unmapped node counted as a
  // segment of its own (an upper bound; DeepSpeed only sizes a buffer from it).
  int64_t SegmentCount() const {
    return static_cast<int64_t>(modules.size() + unmapped_nodes.size());
  }
};

// Groups recomputed node names by checkpoint module.
CheckpointModules GroupRecomputeByModule(const std::vector<std::string>& recompute_nodes);

// A module plan (plan.recompute_unit "module"): exactly the planned modules, in plan order, each
// with the recomputed nodes that map to it; recomputed nodes of no planned module (none, for a
// plan memplan wrote) are unmapped.
CheckpointModules GroupRecomputeByPlannedModules(const std::vector<std::string>& modules,
                                                 const std::vector<std::string>& recompute_nodes);

}  // namespace memplan
