#pragma once
// Weights stored as Constant nodes. paddle2onnx and some TensorFlow converters write every
// weight as `Constant(value=tensor)` instead of an initializer, so a model would report zero
// parameters and train nothing. A floating Constant whose every consumer takes it in a weight
// slot (Conv/Gemm/MatMul weights, norm scales, a bias added to a Conv/MatMul/Gemm output) is a
// trained weight: it is turned into an initializer of the same name before the graph is built,
// so the rest of the importer sees an ordinary parameter. Internal to graph/.

#include <onnx/onnx_pb.h>

#include <cstdint>

namespace memplan {

// Rewrites such Constant nodes into initializers (the tensor is moved, not copied) and returns
// how many it rewrote. Constants with other consumers (masks, scalars, shape values) stay.
int64_t PromoteConstantWeights(onnx::ModelProto& model);

}  // namespace memplan
