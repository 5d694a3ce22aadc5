#pragma once
// The units of module-granularity recompute (--recompute-unit module): the modules a training
// script can wrap in torch.utils.checkpoint, found from the node scopes torch.onnx.export writes
// (analyzer/recompute/checkpoint_modules.h), and the order the module search adds them in.
//
// A unit is a *repeated block*: a module path ending in a numeric index ("h.5", "layer3.1",
// "encoder.layer.0"), the shallowest such scope of each node (CheckpointModuleForNode). Nodes
// whose scopes hold no indexed module (the stem, the head) belong to no unit: checkpointing them
// is not what people do and would nest with the blocks' parents. Units never overlap.

#include <cstddef>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace memplan {

struct CheckpointableModule {
  std::string path;           // "h.5": what model.get_submodule() accepts
  std::vector<NodeId> nodes;  // every node of the module, by id
};

// The graph's units in forward order (of each module's first node). Empty when no node name has
// the exporter's scope form with an indexed module (a hand-written or non-PyTorch graph).
std::vector<CheckpointableModule> FindCheckpointableModules(const Graph& graph);

// What checkpointing one module is estimated to save and cost, for ordering only (the search
// checks every choice with the simulator).
struct ModuleCheckpointCost {
  double dropped_bytes = 0;  // bytes of the outputs its forward no longer keeps
  double rerun_seconds = 0;  // forward time of the nodes backward re-runs
};

// The order the module search checkpoints modules in: most bytes dropped per second re-run first;
// equal ratios (homogeneous blocks) in forward order, since the earliest blocks' activations live
// longest. Modules that drop nothing are left out. Returns indices into `costs`.
std::vector<size_t> ModuleCheckpointOrder(const std::vector<ModuleCheckpointCost>& costs);

}  // namespace memplan
