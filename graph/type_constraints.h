#pragma once
// ONNX's type constraints between a node's inputs, checked on the imported graph. An op's schema
// binds several inputs to one type parameter (Add's A and B are both T); a model that breaks it
// (an int64 initializer added as the bias of a float MatMul) is invalid ONNX, yet libonnx's
// inference skips such a node silently and, planned as written, the bias would stop being a
// trainable parameter (an integer initializer is a constant) without a word. The schemas are
// libonnx's, at the model's opset; ops it does not know (other domains, newer opsets) are not
// judged here.

#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// An error naming the first node two of whose inputs bound to one type parameter have different
// known dtypes, e.g. "node 'add' (Add): input 0 'h' is float32 but input 1 'bias' is int64; ONNX's
// Add takes one type T for both".
Status CheckTypeConstraints(const Graph& graph);

}  // namespace memplan
