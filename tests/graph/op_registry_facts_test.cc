// The op facts other stages ask the registry instead of naming ops (graph/ops/op_schema.h), as the
// ONNX operator specification states them: which inputs are a layer's trained weights, which
// layers are linear maps with a per-channel bias, which ops read only a shape, convert to a named
// dtype or add their inputs, which hold a value the runtime finds on the host, which normalise
// over an axis, permute axes or index rows.
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

TEST_CASE("values found on the host, class axes, permutations and row indices",
          "[registry][facts]") {
  using HostValue = OpSchema::HostValue;
  // Constant: `value` (or value_float, ...) is the output; ConstantOfShape(input) fills the
  // shape its input holds; Range(start, limit, delta) is a sequence. Every other op is computed.
  CHECK(Op("Constant").host_value == HostValue::kLiteral);
  CHECK(Op("ConstantOfShape").host_value == HostValue::kFilledShape);
  CHECK(Op("Range").host_value == HostValue::kSequence);
  for (const char* computed : {"Add", "Shape", "Cast", "Gather", "NonZero"})
    CHECK(Op(computed).host_value == HostValue::kComputed);
  // Softmax(axis) and LogSoftmax(axis) make a distribution over `axis`; ReduceMax does not.
  CHECK(Op("Softmax").normalises_over_axis);
  CHECK(Op("LogSoftmax").normalises_over_axis);
  CHECK_FALSE(Op("ReduceMax").normalises_over_axis);
  CHECK_FALSE(Op("LayerNormalization").normalises_over_axis);
  // Transpose(perm) moves axes; Reshape and Flatten regroup them, so they are no permutation.
  CHECK(Op("Transpose").permutes_axes);
  CHECK_FALSE(Op("Reshape").permutes_axes);
  CHECK_FALSE(Op("Flatten").permutes_axes);
  // Gather(data, indices): input 1 indexes data's rows; GatherElements' indices index elements.
  CHECK(Op("Gather").row_index_input == 1);
  CHECK(Op("GatherElements").row_index_input == -1);
  CHECK(Op("MatMul").row_index_input == -1);
}

}  // namespace
}  // namespace memplan
