#pragma once
// The TorchScript exporter writes torch._weight_norm(v, g, dim) (nn.utils.weight_norm and
// parametrizations.weight_norm: wav2vec2's and HuBERT's positional conv, WaveNet) as
// symbolic_opset9._weight_norm does:
//     n = ReduceL2(v, all axes but dim, keepdims=1);  d = Div(v, n);  w = Mul(d, g)
// so a plan of the file keeps d, a weight-sized tensor, for g's gradient. ATen runs it otherwise
// (aten/src/ATen/native/WeightNorm.cpp _weight_norm): _weight_norm_interface when dim is the
// first or last axis (derivatives.yaml: it saves v, g and the norms), else
// v * (g / norm_except_dim(v, 2, dim)). Either way the training step keeps the norms and nothing
// weight-sized besides w itself (wav2vec2's [32, 8, 16] positional-conv weight: 16,384 B the
// file's order adds, +2.8% of the tiny model's saved bytes).
//
// ReorderWeightNorms rewrites each such chain whose v and g are initializers into ATen's
// decomposition, the same values: q = Div(g, n) (a new value, g's size), w = Mul(v, q).

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace memplan {

// Returns how many weight norms were reordered. The graph stays in topological order.
int64_t ReorderWeightNorms(onnx::GraphProto& graph);

}  // namespace memplan
