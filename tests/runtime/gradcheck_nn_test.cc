// Finite-difference checks of the network-layer backward kernels: MatMul, Gemm, Conv, pooling,
// normalisation, Softmax, reductions, Gather, Dropout (method and bound in gradient_check.h).

#include <catch2/catch.hpp>

#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

TEST_CASE("MatMul backward, batched with broadcasting and 1-D operands", "[gradcheck]") {
  GradCheckCase c;
  c.op = "MatMul";
  c.checked_inputs = {0, 1};
  SECTION("broadcast batch") {
    c.inputs = {RandomTensor({2, 1, 3, 4}, 1), RandomTensor({3, 4, 2}, 2)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("vector times matrix") {
    c.inputs = {RandomTensor({4}, 3), RandomTensor({2, 4, 3}, 4)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("matrix times vector") {
    c.inputs = {RandomTensor({3, 4}, 5), RandomTensor({4}, 6)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("Gemm backward for every transpose combination", "[gradcheck]") {
  for (int trans_a = 0; trans_a < 2; ++trans_a) {
    for (int trans_b = 0; trans_b < 2; ++trans_b) {
      GradCheckCase c;
      c.op = "Gemm";
      c.attributes.Set("transA", int64_t{trans_a});
      c.attributes.Set("transB", int64_t{trans_b});
      c.attributes.Set("alpha", 0.5);
      c.attributes.Set("beta", 2.0);
      // M = 3, K = 4, N = 2; C broadcast from [N].
      c.inputs = {RandomTensor(trans_a ? TensorShape{4, 3} : TensorShape{3, 4}, 1),
                  RandomTensor(trans_b ? TensorShape{2, 4} : TensorShape{4, 2}, 2),
                  RandomTensor({2}, 3)};
      c.checked_inputs = {0, 1, 2};
      INFO("transA=" << trans_a << " transB=" << trans_b);
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
    }
  }
}

TEST_CASE("Conv backward with groups, stride, pads, dilation and bias", "[gradcheck]") {
  GradCheckCase c;
  c.op = "Conv";
  c.checked_inputs = {0, 1, 2};
  SECTION("2-D, asymmetric pads, stride 2, dilation 2, 2 groups") {
    c.attributes.Set("group", int64_t{2});
    c.attributes.Set("strides", std::vector<int64_t>{2, 1});
    c.attributes.Set("pads", std::vector<int64_t>{1, 2, 0, 1});
    c.attributes.Set("dilations", std::vector<int64_t>{1, 2});
    c.inputs = {RandomTensor({2, 4, 5, 6}, 1), RandomTensor({4, 2, 3, 2}, 2), RandomTensor({4}, 3)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("1-D, SAME_UPPER") {
    c.attributes.Set("auto_pad", std::string("SAME_UPPER"));
    c.inputs = {RandomTensor({1, 2, 7}, 4), RandomTensor({3, 2, 4}, 5), RandomTensor({3}, 6)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("pooling backward kernels", "[gradcheck]") {
  GradCheckCase c;
  c.checked_inputs = {0};
  SECTION("MaxPool with padding and ceil_mode") {
    c.op = "MaxPool";
    c.attributes.Set("kernel_shape", std::vector<int64_t>{3, 3});
    c.attributes.Set("strides", std::vector<int64_t>{2, 2});
    c.attributes.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    c.attributes.Set("ceil_mode", int64_t{1});
    c.inputs = {DistinctTensor({2, 2, 6, 5}, 1)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("MaxPool returning indices") {
    c.op = "MaxPool";
    c.num_outputs = 2;
    c.attributes.Set("kernel_shape", std::vector<int64_t>{2, 2});
    c.inputs = {DistinctTensor({1, 2, 4, 4}, 2)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("AveragePool excluding padding") {
    c.op = "AveragePool";
    c.attributes.Set("kernel_shape", std::vector<int64_t>{3, 2});
    c.attributes.Set("strides", std::vector<int64_t>{2, 2});
    c.attributes.Set("pads", std::vector<int64_t>{1, 0, 1, 1});
    c.inputs = {RandomTensor({2, 3, 5, 5}, 3)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("AveragePool counting padding") {
    c.op = "AveragePool";
    c.attributes.Set("kernel_shape", std::vector<int64_t>{3, 3});
    c.attributes.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    c.attributes.Set("count_include_pad", int64_t{1});
    c.inputs = {RandomTensor({1, 2, 4, 4}, 4)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("GlobalAveragePool") {
    c.op = "GlobalAveragePool";
    c.inputs = {RandomTensor({2, 3, 3, 4}, 5)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("normalisation backward kernels", "[gradcheck]") {
  GradCheckCase c;
  SECTION("BatchNormalization, training (batch statistics)") {
    c.op = "BatchNormalization";
    c.num_outputs = 3;
    c.inputs = {RandomTensor({3, 2, 2, 3}, 1, -2.0f, 2.0f), RandomTensor({2}, 2, 0.5f, 1.5f),
                RandomTensor({2}, 3), RandomTensor({2}, 4), RandomTensor({2}, 5, 0.5f, 1.5f)};
    c.checked_inputs = {0, 1, 2};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("BatchNormalization, inference (given statistics)") {
    c.op = "BatchNormalization";
    c.training = false;
    c.inputs = {RandomTensor({2, 3, 4}, 6), RandomTensor({3}, 7, 0.5f, 1.5f), RandomTensor({3}, 8),
                RandomTensor({3}, 9), RandomTensor({3}, 10, 0.5f, 1.5f)};
    c.checked_inputs = {0, 1, 2};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("LayerNormalization over the last two dims") {
    c.op = "LayerNormalization";
    c.attributes.Set("axis", int64_t{-2});
    c.inputs = {RandomTensor({2, 3, 4}, 11, -2.0f, 2.0f), RandomTensor({3, 4}, 12, 0.5f, 1.5f),
                RandomTensor({3, 4}, 13)};
    c.checked_inputs = {0, 1, 2};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("Softmax and LogSoftmax backward along an inner axis", "[gradcheck]") {
  GradCheckCase c;
  c.op = GENERATE(std::string("Softmax"), std::string("LogSoftmax"));
  c.attributes.Set("axis", int64_t{1});
  c.inputs = {RandomTensor({2, 4, 3}, 1, -2.0f, 2.0f)};
  c.checked_inputs = {0};
  INFO(c.op);
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
}

TEST_CASE("ReduceMean and ReduceSum backward", "[gradcheck]") {
  GradCheckCase c;
  c.op = GENERATE(std::string("ReduceMean"), std::string("ReduceSum"));
  c.checked_inputs = {0};
  SECTION("axes attribute, keepdims") {
    c.attributes.Set("axes", std::vector<int64_t>{0, -1});
    c.inputs = {RandomTensor({2, 3, 4}, 1)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("axes input, no keepdims") {
    c.attributes.Set("keepdims", int64_t{0});
    c.inputs = {RandomTensor({2, 3, 4}, 2), IntTensor({1}, {1})};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("all axes") {
    c.inputs = {RandomTensor({3, 4}, 3)};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("Gather backward scatter-adds repeated indices", "[gradcheck]") {
  GradCheckCase c;
  c.op = "Gather";
  c.checked_inputs = {0};
  SECTION("embedding lookup, axis 0, a repeated and a negative index") {
    c.inputs = {RandomTensor({5, 3}, 1), IntTensor({2, 3}, {1, 4, 1, 0, -1, 2})};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("axis 1") {
    c.attributes.Set("axis", int64_t{1});
    c.inputs = {RandomTensor({2, 4, 3}, 2), IntTensor({3}, {3, 0, 3})};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("Dropout backward uses the forward mask", "[gradcheck]") {
  GradCheckCase c;
  c.op = "Dropout";
  c.inputs = {RandomTensor({4, 5}, 1), Tensor::FromValues({}, {0.3f})};
  c.checked_inputs = {0};
  SECTION("mask kept as an extra") { MEMPLAN_REQUIRE_GRADIENTS_MATCH(c); }
  SECTION("mask as the second output") {
    c.num_outputs = 2;
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

}  // namespace
}  // namespace memplan::testing
