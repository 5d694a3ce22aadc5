#pragma once
// Which floating initializers training really updates. ONNX has no notion of buffers: PyTorch
// exports BatchNorm running_mean/running_var (and float mask buffers) as initializers like any
// weight. A parameter is trainable when a gradient can reach it: some consumer takes a gradient
// through that input slot (the registry's gradient_inputs) and that consumer's output itself
// leads, differentiably, to a graph output.

#include "graph/graph.h"

namespace memplan {

// Sets Value::trainable for every kParameter. REQUIRES: shapes propagated (rules read dtypes).
Status MarkTrainableParameters(Graph& graph);

}  // namespace memplan
