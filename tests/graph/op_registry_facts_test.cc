// The op facts other stages ask the registry instead of naming ops (graph/ops/op_schema.h), as the
// ONNX operator specification states them: which inputs are a layer's trained weights, which
// layers are linear maps with a per-channel bias, which ops read only a shape, convert to a named
// dtype or add their inputs.
#include <catch2/catch.hpp>

#include <vector>

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

const OpSchema& Op(const char* op_type) { return OpRegistry::Get().FindOrUnknown(op_type); }

TEST_CASE("the registry names each layer's weight inputs by its ONNX slots", "[registry][facts]") {
  // Conv(X, W, B), ConvTranspose(X, W, B), Gemm(A, B, C), MatMul(A, B),
  // BatchNormalization(X, scale, B, input_mean, input_var), the other norms (X, scale, B).
  CHECK(Op("Conv").weight_inputs == std::vector<int>{1, 2});
  CHECK(Op("ConvTranspose").weight_inputs == std::vector<int>{1, 2});
  CHECK(Op("Gemm").weight_inputs == std::vector<int>{1, 2});
  CHECK(Op("MatMul").weight_inputs == std::vector<int>{1});
  CHECK(Op("BatchNormalization").weight_inputs == std::vector<int>{1, 2, 3, 4});
  for (const char* norm : {"InstanceNormalization", "LayerNormalization", "GroupNormalization"})
    CHECK(Op(norm).weight_inputs == std::vector<int>{1, 2});
  CHECK(Op("Add").weight_inputs.empty());
  CHECK(Op("Relu").weight_inputs.empty());
}

TEST_CASE("linear layers and their per-channel bias slot", "[registry][facts]") {
  for (const char* linear : {"Conv", "ConvTranspose", "MatMul", "Gemm"})
    CHECK(Op(linear).is_linear_layer);
  CHECK_FALSE(Op("Mul").is_linear_layer);
  CHECK_FALSE(Op("BatchNormalization").is_linear_layer);
  // B of Conv / ConvTranspose is [M]: one value per output channel (axis 1). Gemm's C may be a
  // whole [M, N] matrix, so it is no per-channel bias.
  CHECK(Op("Conv").channel_bias_input == 2);
  CHECK(Op("ConvTranspose").channel_bias_input == 2);
  CHECK(Op("Gemm").channel_bias_input == -1);
  CHECK(Op("BatchNormalization").couples_batch);
  CHECK_FALSE(Op("LayerNormalization").couples_batch);
}

TEST_CASE("shape readers, dtype conversions and additions", "[registry][facts]") {
  CHECK(Op("Shape").reads_only_shape);
  CHECK(Op("Size").reads_only_shape);
  CHECK_FALSE(Op("Reshape").reads_only_shape);
  CHECK(Op("Cast").converts_dtype);
  CHECK_FALSE(Op("CastLike").converts_dtype);  // its dtype is input 1's when it runs
  CHECK(Op("Add").adds_inputs);
  CHECK(Op("Sub").adds_inputs);
  CHECK_FALSE(Op("Mul").adds_inputs);
}

}  // namespace
}  // namespace memplan
