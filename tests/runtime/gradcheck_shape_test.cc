// Finite-difference checks of the data-movement backward kernels (method in gradient_check.h).

#include <catch2/catch.hpp>

#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

GradCheckCase Case(const std::string& op, std::vector<Tensor> inputs) {
  GradCheckCase c;
  c.op = op;
  c.inputs = std::move(inputs);
  c.checked_inputs = {0};
  return c;
}

TEST_CASE("view ops pass the gradient back in the input's shape", "[gradcheck]") {
  SECTION("Reshape with 0 and -1") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(
        Case("Reshape", {RandomTensor({2, 3, 4}, 1), IntTensor({2}, {0, -1})}));
  }
  SECTION("Flatten") {
    GradCheckCase c = Case("Flatten", {RandomTensor({2, 3, 2}, 2)});
    c.attributes.Set("axis", int64_t{2});
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("Squeeze (axes input)") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(
        Case("Squeeze", {RandomTensor({2, 1, 3}, 3), IntTensor({1}, {1})}));
  }
  SECTION("Unsqueeze (axes attribute)") {
    GradCheckCase c = Case("Unsqueeze", {RandomTensor({2, 3}, 4)});
    c.attributes.Set("axes", std::vector<int64_t>{0, -1});
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("copying shape ops have adjoint backwards", "[gradcheck]") {
  SECTION("Transpose") {
    GradCheckCase c = Case("Transpose", {RandomTensor({2, 3, 4}, 1)});
    c.attributes.Set("perm", std::vector<int64_t>{1, 2, 0});
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("Expand") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(
        Case("Expand", {RandomTensor({3, 1}, 2), IntTensor({3}, {2, 1, 4})}));
  }
  SECTION("Concat") {
    GradCheckCase c = Case("Concat", {RandomTensor({2, 1, 3}, 3), RandomTensor({2, 2, 3}, 4),
                                      RandomTensor({2, 3, 3}, 5)});
    c.attributes.Set("axis", int64_t{1});
    c.checked_inputs = {0, 1, 2};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("Split with sizes, gradient from two of three outputs") {
    GradCheckCase c = Case("Split", {RandomTensor({2, 6}, 6), IntTensor({3}, {1, 2, 3})});
    c.attributes.Set("axis", int64_t{-1});
    c.num_outputs = 3;
    c.differentiable_outputs = {0, 2};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("Split into equal parts") {
    GradCheckCase c = Case("Split", {RandomTensor({4, 3}, 7)});
    c.num_outputs = 2;
    c.differentiable_outputs = {0, 1};
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("Slice with negative step, clamped end and axes") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(Case(
        "Slice", {RandomTensor({4, 5}, 8), IntTensor({2}, {-1, 1}), IntTensor({2}, {-1000, 1000}),
                  IntTensor({2}, {1, 0}), IntTensor({2}, {-2, 2})}));
  }
}

}  // namespace
}  // namespace memplan::testing
