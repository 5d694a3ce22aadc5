#pragma once
// Derivation pass 1, gradient flow: which values need a gradient and which nodes get a backward
// step. As autograd decides it: requires_grad flows forward from trained floating parameters
// (trainable and not frozen: IsTrainedParameter)
// (graph inputs never require grad); "leads to the loss" flows backward from the model output
// through the input slots the registry says have a gradient (OpSchema::gradient_inputs). A value
// needs a gradient when both hold; a node gets a backward step when some output needs a gradient
// and some gradient input slot does.
//
//   x ─► MatMul(x, W) ─► h ─► Gather(h, idx) ─► y ─► loss
//   (x and idx: graph inputs, idx int64; W: a trainable parameter)
//   requires_grad:   W h y      (inputs never do)
//   leads to loss:   y h x W    (Gather has no gradient slot for its integer index)
//   needs gradient:  W h y;     backward steps: Gather, MatMul

#include <vector>

#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

class OpRegistry;

struct GradientFlow {
  // Per node, per input slot: the registry's gradient rule, false for constant (and omitted)
  // inputs; empty for nodes that do not run.
  std::vector<std::vector<bool>> gradient_inputs;
  std::vector<bool> requires_grad;   // per value (autograd's requires_grad)
  std::vector<bool> needs_gradient;  // per value: requires grad and leads to the loss
  std::vector<bool> needs_backward;  // per node: gets a kBackward step
};

// REQUIRES: `order` is a topological order of `graph`; `loss_outputs` are the values the loss
// reads (one per term: a gradient flows back from each).
GradientFlow AnalyzeGradientFlow(const Graph& graph, const OpRegistry& registry,
                                 const std::vector<NodeId>& order,
                                 const std::vector<ValueId>& loss_outputs);

}  // namespace memplan
