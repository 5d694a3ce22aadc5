// Finite-difference checks of the backward kernels of ops the exporters write that memplan once
// planned as unknown (Abs, Softplus, Mish, the Elu family, Max/Min, the other reductions) and of
// the import fusions' memplan ops (MaxDim, Variance, Glu, SwiGlu, GeGlu): each backward reads only
// what the registry saves (gradient_check.h passes nothing else), so this also checks the saved
// sets.

#include <catch2/catch.hpp>

#include "graph/ops/gated_mlp_ops.h"
#include "graph/ops/glu_op.h"
#include "graph/ops/max_dim_op.h"
#include "graph/ops/variance_op.h"
#include "tests/runtime/gradient_check.h"

namespace memplan::testing {
namespace {

GradCheckCase OneInput(const std::string& op, Tensor x, const std::string& domain = "") {
  GradCheckCase c;
  c.op = op;
  c.domain = domain;
  c.inputs = {std::move(x)};
  c.checked_inputs = {0};
  return c;
}

TEST_CASE("exported unary ops' backward kernels match finite differences", "[gradcheck]") {
  const TensorShape shape = {3, 5};
  // Abs's and the Elu family's kinks at 0 stay more than kStep away.
  for (const char* op : {"Abs", "Elu", "Selu", "Celu"}) {
    DYNAMIC_SECTION(op) {
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(OneInput(op, RandomAwayFromZero(shape, 61, 0.1f, 2.0f)));
    }
  }
  SECTION("Celu alpha 0.5") {
    GradCheckCase c = OneInput("Celu", RandomAwayFromZero(shape, 62, 0.1f, 2.0f));
    c.attributes.Set("alpha", 0.5);
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  for (const char* op : {"Softplus", "Mish"}) {
    DYNAMIC_SECTION(op) {
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(OneInput(op, RandomTensor(shape, 63, -4.0f, 4.0f)));
    }
  }
}

TEST_CASE("Max and Min of two tensors send the gradient to the winner", "[gradcheck]") {
  for (const char* op : {"Max", "Min"}) {
    DYNAMIC_SECTION(op) {
      GradCheckCase c;
      c.op = op;
      c.inputs = {RandomTensor({2, 3, 4}, 64), RandomTensor({3, 1}, 65)};
      c.checked_inputs = {0, 1};
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
    }
  }
}

TEST_CASE("the other reductions' backward kernels match finite differences", "[gradcheck]") {
  const struct {
    const char* op;
    float lo, hi;
  } reductions[] = {{"ReduceMin", -2.0f, 2.0f},       {"ReduceL1", 0.1f, 2.0f},
                    {"ReduceL2", -2.0f, 2.0f},        {"ReduceSumSquare", -2.0f, 2.0f},
                    {"ReduceLogSumExp", -2.0f, 2.0f}, {"ReduceProd", 0.5f, 1.5f}};
  for (const auto& r : reductions) {
    DYNAMIC_SECTION(r.op << " over axes 0, -1 kept") {
      GradCheckCase c = OneInput(r.op, RandomTensor({2, 3, 4}, 66, r.lo, r.hi));
      c.attributes.Set("axes", std::vector<int64_t>{0, -1});
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
    }
    DYNAMIC_SECTION(r.op << " over axis 1, not kept") {
      GradCheckCase c = OneInput(r.op, RandomTensor({2, 3, 4}, 67, r.lo, r.hi));
      c.attributes.Set("axes", std::vector<int64_t>{1});
      c.attributes.Set("keepdims", int64_t{0});
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
    }
  }
}

TEST_CASE("memplan:MaxDim's backward reads only its indices", "[gradcheck]") {
  GradCheckCase c = OneInput(max_dim::kOpType, RandomTensor({2, 5, 3}, 68), max_dim::kDomain);
  c.attributes.Set("axes", std::vector<int64_t>{1});
  SECTION("values only: the indices are the saved extra") {
    c.attributes.Set("keepdims", int64_t{0});
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
  SECTION("with the indices output (a fused ArgMax)") {
    c.num_outputs = 2;
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

TEST_CASE("memplan:Variance's backward reads only its input", "[gradcheck]") {
  GradCheckCase c = OneInput(variance::kOpType, RandomTensor({2, 3, 4}, 69), variance::kDomain);
  c.attributes.Set("axes", std::vector<int64_t>{1, 2});
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  c.attributes.Set("keepdims", int64_t{0});
  MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
}

TEST_CASE("memplan:Glu's backward reads only its input", "[gradcheck]") {
  SECTION("the default axis, -1") {
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(
        OneInput(glu::kOpType, RandomTensor({2, 3, 6}, 70, -3.0f, 3.0f), glu::kDomain));
  }
  SECTION("axis 1 (Conformer's channels)") {
    GradCheckCase c =
        OneInput(glu::kOpType, RandomTensor({2, 6, 3}, 71, -3.0f, 3.0f), glu::kDomain);
    c.attributes.Set(glu::kAxis, int64_t{1});
    MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
  }
}

}  // namespace

// Liger's gated MLP products: the forward against torch 2.15 (F.silu(a) * b and
// F.gelu(a, approximate="tanh") * b at a = [-2, -0.5, 1, 3], b = [0.5, -1.5, 2, -0.25]), the
// backward from a and b alone against finite differences.
TEST_CASE("memplan:SwiGlu and GeGlu compute Liger's products, backward from a and b only",
          "[gradcheck]") {
  struct Gated {
    const char* op;
    const char* domain;
    std::vector<float> torch_values;
  };
  for (const Gated& gated : {Gated{swiglu::kOpType,
                                   swiglu::kDomain,
                                   {-0.11920291930437088f, 0.28315550088882446f,
                                    1.4621171951293945f, -0.7144306302070618f}},
                             Gated{geglu::kOpType,
                                   geglu::kDomain,
                                   {-0.022701144218444824f, 0.23142899572849274f,
                                    1.6823840141296387f, -0.7490906715393066f}}}) {
    DYNAMIC_SECTION(gated.op) {
      GradCheckCase c;
      c.op = gated.op;
      c.domain = gated.domain;
      c.inputs = {Tensor::FromValues({4}, {-2.0f, -0.5f, 1.0f, 3.0f}),
                  Tensor::FromValues({4}, {0.5f, -1.5f, 2.0f, -0.25f})};
      const ForwardResult forward = detail::RunCaseForward(c);
      for (int64_t i = 0; i < 4; ++i)
        CHECK(forward.outputs[0].data()[i] ==
              Approx(gated.torch_values[static_cast<size_t>(i)]).epsilon(1e-6));
      c.inputs = {RandomTensor({2, 3, 8}, 72, -3.0f, 3.0f),
                  RandomTensor({2, 3, 8}, 73, -2.0f, 2.0f)};
      c.checked_inputs = {0, 1};
      MEMPLAN_REQUIRE_GRADIENTS_MATCH(c);
    }
  }
}

}  // namespace memplan::testing
