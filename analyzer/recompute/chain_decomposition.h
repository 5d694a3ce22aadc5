#pragma once
// Reduces a graph to a chain (chain.h) at its single-tensor cuts, and maps a chain schedule back
// to graph nodes.
//
// A cut is a position in the topological order after which exactly ONE activation crosses: one
// value produced at or before it is still needed after it. Parameters, constants and graph inputs
// do not count (they are held anyway), nor do "parameter-free" intermediates — values computed
// only from inputs and constants, such as an attention mask bias — which need no gradient; the
// chain holds those for the whole step (Chain::input_bytes). Exported ResNets cut after every
// residual Add and block ReLU; transformers after every residual Add:
//
//   topo order:  stem  conv_a relu_a conv_b  add   relu   conv_a ...
//   crossing:    {s}   {s,ca} {s,ra} {s,cb}  {ad}  {r}    {r,ca}
//   cut after:   stem                        add   relu
//                 └ stage 0 ┘└────── stage 1 ──────┘└ 2 ┘└─ stage 3 …
//
// Nodes between consecutive cuts form one stage. A stage with internal branches (a residual
// block) is one stage whose saved set is the union of its branches' saved values: recompute
// decisions are made per stage, never inside one.

#include <functional>
#include <string>
#include <vector>

#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/recompute_schedule.h"
#include "graph/expected.h"
#include "graph/graph.h"
#include "graph/ids.h"

namespace memplan {

// What the decomposition needs to know about the current bindings, as plain functions so that it
// depends on neither the simulator nor the cost model.
struct ChainCostFunctions {
  std::function<int64_t(ValueId)> value_bytes;  // required: bytes of a value
  std::function<double(NodeId)> forward_time;   // required: seconds of a node's forward
  // Seconds of a node's backward; when empty, backward_to_forward_ratio x forward_time.
  std::function<double(NodeId)> backward_time;
  // Whether backward needs this activation (the op registry's saved-for-backward rule); when
  // empty, every activation produced inside a stage counts as saved (conservative).
  std::function<bool(ValueId)> saved_for_backward;
};

// Backward of a typical layer runs two matmuls per forward matmul.
inline constexpr double kDefaultBackwardToForwardRatio = 2.0;

struct ChainDecompositionOptions {
  // Used only when ChainCostFunctions::backward_time is empty.
  double backward_to_forward_ratio = kDefaultBackwardToForwardRatio;
};

struct ChainStageNodes {
  std::vector<NodeId> nodes;  // in topological order
  // The activation crossing the cut after the stage (invalid for the last stage, whose outputs
  // are the graph's outputs) and the node producing it.
  ValueId output;
  NodeId output_producer;
};

struct ChainDecomposition {
  Chain chain;  // one chain stage per entry of `stages`
  std::vector<ChainStageNodes> stages;
  std::vector<ValueId> parameter_free_values;  // held for the whole step, in chain.input_bytes
};

// Sizes per stage:
//   output_bytes  the crossing activation (last stage: the activation graph outputs);
//   saved_bytes   activations produced in the stage, other than its output, that backward needs;
//   forward_overhead_bytes = backward_overhead_bytes: the most bytes of the stage's internal
//                 activations live at once over its nodes (values, or their gradients in
//                 backward: a gradient lives over the same nodes as its value, in reverse).
// Errors: a graph with no nodes, a cycle, missing cost functions.
Expected<ChainDecomposition> DecomposeIntoChain(const Graph& graph, const ChainCostFunctions& costs,
                                                const ChainDecompositionOptions& options = {});

// What the program derivation and the reports need from a schedule on a decomposed chain.
struct RecomputeSelection {
  // Nodes whose outputs are dropped in forward and recomputed for backward: every node of a
  // recomputed stage that produces an activation, except the producers of kept stage outputs.
  std::vector<NodeId> recompute_nodes;        // sorted by id
  std::vector<NodeId> checkpoint_nodes;       // producers of the checkpoints, in chain order
  std::vector<std::string> checkpoint_names;  // their ONNX names, e.g. /layer3/layer3.1/relu_1/Relu
};

// REQUIRES: `schedule` was planned on `decomposition.chain` (error when the stage counts differ).
Expected<RecomputeSelection> SelectRecomputeNodes(const Graph& graph,
                                                  const ChainDecomposition& decomposition,
                                                  const RecomputeSchedule& schedule);

}  // namespace memplan
