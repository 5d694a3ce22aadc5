#pragma once
// Which dimension of a model output holds the classes, read from the graph that computes it.
//
// A rank-3 output is ambiguous by shape alone: a language model's [batch, seq, vocab] keeps its
// classes last (torch's LM losses flatten it to rows), a sequence model's [N, C, T] (WaveNet, a
// head whose [N, T, C] logits are transposed before F.cross_entropy) keeps them at 1, as
// F.cross_entropy and ONNX SoftmaxCrossEntropyLoss read [N, C, d1, ...]. The graph tells them
// apart: the classes run along the axis the head's features run along, followed back through
// the ops that move or keep axes:
//   * a LogSoftmax / Softmax normalises over its `axis`: the classes;
//   * a linear layer (registry is_linear_layer) writes its features along its last axis (MatMul,
//     Gemm) or axis 1 (a layer with a per-channel bias: Conv, ConvTranspose);
//   * a Transpose moves the axis to where its `perm` puts it;
//   * an op whose output has the shape of one of its inputs (a bias Add, a temperature Div, Cast,
//     Dropout) keeps it.
// Anything else (a Reshape, an op the walk does not know) leaves it unknown: nullopt, and the
// caller falls back to the rank's convention (CrossEntropyClassAxis).

#include <cstddef>
#include <optional>

#include "graph/graph.h"

namespace memplan {

class OpRegistry;

std::optional<size_t> TraceClassAxis(const Graph& graph, const OpRegistry& registry,
                                     ValueId output);

}  // namespace memplan
