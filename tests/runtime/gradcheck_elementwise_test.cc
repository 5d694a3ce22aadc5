// Finite-difference checks of the elementwise backward kernels (see gradient_check.h for the
// method and the error bound).

#include <catch2/catch.hpp>

#include "graph/ops/rsqrt_op.h"
#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

GradCheckCase Unary(const std::string& op, Tensor x) {
  GradCheckCase c;
  c.op = op;
  c.inputs = {std::move(x)};
  c.checked_inputs = {0};
  return c;
}

TEST_CASE("unary backward kernels match finite differences", "[gradcheck]") {
  const TensorShape shape = {3, 5};
  // Relu's kink and the poles of Log/Reciprocal/Sqrt stay more than kStep away.
  SECTION("Relu") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("Relu", RandomAwayFromZero(shape, 1, 0.1f, 2.0f)));
  }
  // Smooth ops, their input drawn uniformly from [lo, hi] with `seed`.
  const struct {
    const char* op;
    uint32_t seed;
    float lo, hi;
  } smooth[] = {
      {"Gelu", 2, -3.0f, 3.0f}, {"Erf", 4, -2.0f, 2.0f},    {"Cos", 41, -3.0f, 3.0f},
      {"Sin", 42, -3.0f, 3.0f}, {"Swish", 43, -4.0f, 4.0f}, {"Sigmoid", 5, -4.0f, 4.0f},
      {"Tanh", 6, -2.0f, 2.0f}, {"Sqrt", 7, 0.5f, 3.0f},    {"Exp", 9, -2.0f, 2.0f},
      {"Log", 10, 0.5f, 3.0f},
  };
  for (const auto& u : smooth) {
    DYNAMIC_SECTION(u.op) {
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary(u.op, RandomTensor(shape, u.seed, u.lo, u.hi)));
    }
  }
  SECTION("Gelu tanh") {
    GradCheckCase c = Unary("Gelu", RandomTensor(shape, 3, -3.0f, 3.0f));
    c.attributes.Set("approximate", std::string("tanh"));
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("LeakyRelu (default slope and 0.2)") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("LeakyRelu", RandomAwayFromZero(shape, 45, 0.1f, 2.0f)));
    GradCheckCase c = Unary("LeakyRelu", RandomAwayFromZero(shape, 46, 0.1f, 2.0f));
    c.attributes.Set("alpha", 0.2);
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("HardSigmoid (ONNX defaults; torch's alpha 1/6)") {
    // Kinks at alpha x + beta = 0 and 1: x = -2.5, 2.5 (defaults) and -3, 3 (torch).
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("HardSigmoid", RandomTensor(shape, 47, -2.2f, 2.2f)));
    GradCheckCase c = Unary("HardSigmoid", RandomTensor(shape, 48, -2.9f, 2.9f));
    c.attributes.Set("alpha", 1.0 / 6.0);
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("HardSwish") {
    // Away from its kinks at -3 and 3: inside and outside the ramp.
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("HardSwish", RandomTensor(shape, 49, -2.8f, 2.8f)));
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("HardSwish", RandomTensor(shape, 50, 3.2f, 5.0f)));
  }
  SECTION("Rsqrt") {
    GradCheckCase c = Unary(rsqrt::kOpType, RandomTensor(shape, 44, 0.5f, 3.0f));
    c.domain = rsqrt::kDomain;
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("Neg") { MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("Neg", RandomTensor(shape, 8))); }
  SECTION("Reciprocal") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("Reciprocal", RandomAwayFromZero(shape, 11, 0.5f, 2.0f)));
  }
  SECTION("Identity") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Unary("Identity", RandomTensor(shape, 12)));
  }
}

GradCheckCase Binary(const std::string& op, Tensor a, Tensor b) {
  GradCheckCase c;
  c.op = op;
  c.inputs = {std::move(a), std::move(b)};
  c.checked_inputs = {0, 1};
  return c;
}

TEST_CASE("binary backward kernels reduce over broadcast dims", "[gradcheck]") {
  // [2,3,4] with [3,1]: b is broadcast along dims 0 and 2, so its gradient sums 8 terms each.
  const TensorShape big = {2, 3, 4};
  const TensorShape small = {3, 1};
  SECTION("Add") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Binary("Add", RandomTensor(big, 1), RandomTensor(small, 2)));
  }
  SECTION("Sub") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Binary("Sub", RandomTensor(small, 3), RandomTensor(big, 4)));
  }
  SECTION("Mul") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Binary("Mul", RandomTensor(big, 5), RandomTensor(small, 6)));
  }
  SECTION("Div") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(
        Binary("Div", RandomTensor(big, 7), RandomAwayFromZero(small, 8, 0.5f, 2.0f)));
  }
  SECTION("Pow") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(
        Binary("Pow", RandomTensor(big, 9, 0.5f, 2.0f), RandomTensor(small, 10, -1.5f, 2.5f)));
  }
  SECTION("scalar operand") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Binary("Mul", RandomTensor(big, 11), RandomTensor({}, 12)));
  }
}

TEST_CASE("Where routes the gradient to the chosen operand", "[gradcheck]") {
  GradCheckCase c;
  c.op = "Where";
  c.inputs = {Tensor::FromValues({2, 3}, {1, 0, 1, 0, 0, 1}, DType::kBool), RandomTensor({2, 3}, 1),
              RandomTensor({3}, 2)};
  c.checked_inputs = {1, 2};
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
}

}  // namespace
}  // namespace memplan::testing
