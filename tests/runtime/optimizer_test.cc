// Optimizer updates against torch.optim (three steps, trajectories from
// make_kernel_references.py) and one Adam step worked by hand.

#include <catch2/catch.hpp>

#include <cmath>
#include <utility>

#include "runtime/optimizers.h"
#include "tests/runtime/kernel_references.h"

namespace memplan::testing {
namespace {

std::vector<float> Trajectory(const OptimizerOptions& options) {
  CountingCpuAllocator allocator;
  std::vector<float> steps;
  {
    Tensor p = Tensor::FromValues({3}, ref::opt_start, DType::kFloat32, allocator,
                                  MemoryCategory::kParameters);
    OptimizerState state = CreateOptimizerState(options, p, allocator);
    // The state is the optimizer's memory: parameter-sized fp32 buffers per NumStateBuffers.
    CHECK(allocator.live_bytes()[MemoryCategory::kOptimizerState] ==
          NumStateBuffers(options.kind, /*numel=*/3) * 3 * 4);
    for (const auto* g : {&ref::opt_grad0, &ref::opt_grad1, &ref::opt_grad2}) {
      REQUIRE(ApplyOptimizerStep(options, Tensor::FromValues({3}, *g), p, state).ok());
      for (float v : p.ToVector()) steps.push_back(v);
    }
  }
  return steps;
}

void RequireTrajectory(const std::vector<float>& actual, const std::vector<float>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("step " << i / 3 << " element " << i % 3);
    CHECK(actual[i] == Approx(expected[i]).epsilon(1e-6).margin(1e-7));
  }
}

TEST_CASE("optimizers follow torch.optim's trajectories", "[optimizer]") {
  OptimizerOptions o;
  o.learning_rate = 0.1;
  SECTION("Adam with L2 weight decay") {
    o.kind = OptimizerKind::kAdam;
    o.weight_decay = 0.1;
    RequireTrajectory(Trajectory(o), ref::opt_adam);
  }
  SECTION("AdamW with decoupled weight decay") {
    o.kind = OptimizerKind::kAdamW;
    o.weight_decay = 0.1;
    RequireTrajectory(Trajectory(o), ref::opt_adamw);
  }
  SECTION("SGD momentum with dampening and weight decay") {
    o.kind = OptimizerKind::kMomentum;
    o.momentum = 0.9;
    o.dampening = 0.1;
    o.weight_decay = 0.01;
    RequireTrajectory(Trajectory(o), ref::opt_momentum);
  }
  SECTION("Nesterov momentum") {
    o.kind = OptimizerKind::kMomentum;
    o.nesterov = true;
    RequireTrajectory(Trajectory(o), ref::opt_nesterov);
  }
  SECTION("plain SGD with weight decay") {
    o.kind = OptimizerKind::kSgd;
    o.weight_decay = 0.01;
    RequireTrajectory(Trajectory(o), ref::opt_sgd);
  }
}

// The parameter and the state after one step of `o` from p = 1 with gradient g = 0.5.
struct OneStep {
  Tensor p;
  OptimizerState state;
};

OneStep StepFromOne(const OptimizerOptions& o) {
  Tensor p = Tensor::FromValues({1}, {1.0f});
  OptimizerState state = CreateOptimizerState(o, p, PlainCpuAllocator());
  REQUIRE(ApplyOptimizerStep(o, Tensor::FromValues({1}, {0.5f}), p, state).ok());
  return {std::move(p), std::move(state)};
}

TEST_CASE("one Adam and one AdamW step worked by hand", "[optimizer]") {
  // p = 1, g = 0.5, lr = 0.1, wd = 0.1, betas (0.9, 0.999), eps = 1e-8, step t = 1.
  OptimizerOptions o;
  o.learning_rate = 0.1;
  o.weight_decay = 0.1;
  SECTION("Adam: L2 joins the gradient, d = 0.5 + 0.1 * 1 = 0.6") {
    // m = 0.1 * 0.6 = 0.06; v = 0.001 * 0.36 = 3.6e-4; m_hat = 0.6; sqrt(v_hat) = 0.6;
    // p = 1 - 0.1 * 0.6 / (0.6 + 1e-8) = 0.9 (the first Adam step moves by lr * sign).
    o.kind = OptimizerKind::kAdam;
    const auto [p, state] = StepFromOne(o);
    CHECK(p.data()[0] == Approx(0.9).epsilon(1e-6));
    CHECK(state.buffers[0].data()[0] == Approx(0.06).epsilon(1e-6));
    CHECK(state.buffers[1].data()[0] == Approx(3.6e-4).epsilon(1e-6));
    CHECK(state.step == 1);
  }
  SECTION("AdamW: decay first, p = 1 * (1 - 0.1 * 0.1) = 0.99, then the Adam step of 0.1") {
    o.kind = OptimizerKind::kAdamW;
    const auto [p, state] = StepFromOne(o);
    CHECK(p.data()[0] == Approx(0.89).epsilon(1e-6));
    CHECK(state.buffers[0].data()[0] == Approx(0.05).epsilon(1e-6));  // 0.1 * g, no L2 term
  }
}

TEST_CASE("optimizer rejects a gradient of the wrong size", "[optimizer]") {
  OptimizerOptions o;
  Tensor p = Tensor::FromValues({2}, {1.0f, 2.0f});
  OptimizerState state = CreateOptimizerState(o, p, PlainCpuAllocator());
  const Status s = ApplyOptimizerStep(o, Tensor::FromValues({3}, {1, 2, 3}), p, state);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("does not match parameter [2]"));
}

}  // namespace
}  // namespace memplan::testing
