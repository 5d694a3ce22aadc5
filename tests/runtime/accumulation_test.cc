// Gradient accumulation end to end with the kernels, the loss and the optimizer: the classic
// example every memplan plan relies on (k micro-batches, each loss divided by k, one step).

#include <catch2/catch.hpp>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/losses.h"
#include "runtime/optimizers.h"

namespace memplan {
namespace {

TEST_CASE("accumulating two micro-batches equals the full-batch gradient", "[optimizer]") {
  // One weight w = 1; prediction w * x through Mul, target 2x, loss (2x - w x)^2 as mse over one
  // element. Micro-batches x = [4] and x = [2], each loss divided by k = 2:
  //   d/dw [((8 - 4w)^2 + (4 - 2w)^2) / 2] at w = 1 = (2 * 4 * (-4) + 2 * 2 * (-2)) / 2
  //                                                 = (-32 - 8) / 2 = -20,
  // and SGD with lr = 0.01 moves w to 1 - 0.01 * (-20) = 1.2.
  const int k = 2;
  CountingCpuAllocator allocator;
  {
    KernelContext ctx;
    ctx.allocator = &allocator;
    Tensor w =
        Tensor::FromValues({1}, {1.0f}, DType::kFloat32, allocator, MemoryCategory::kParameters);
    Tensor accumulated = Tensor::Zeros({1}, DType::kFloat32, allocator, MemoryCategory::kGradients);
    for (float x_value : {4.0f, 2.0f}) {
      const Tensor x = Tensor::FromValues({1}, {x_value});
      const Tensor target = Tensor::FromValues({1}, {2.0f * x_value});
      ForwardArgs forward;
      forward.inputs = {w, x};
      auto y = RunForward("Mul", ctx, forward);
      REQUIRE(y.ok());
      auto dy = LossBackward(LossKind::kMse, ctx, y->outputs[0], target,
                             /*grad_scale=*/1.0f / k);
      REQUIRE(dy.ok());
      BackwardArgs backward;
      backward.inputs = {w, x};
      backward.input_shapes = {{1}, {1}};
      backward.input_dtypes = {DType::kFloat32, DType::kFloat32};
      backward.grad_outputs = {*dy};
      backward.needs_input_grad = {true, false};
      auto grads = RunBackward("Mul", ctx, backward);
      REQUIRE(grads.ok());
      REQUIRE_FALSE((*grads)[1].defined());  // x needs no gradient
      accumulated.mutable_data()[0] += (*grads)[0].data()[0];
    }
    CHECK(accumulated.data()[0] == Approx(-20.0));
    OptimizerOptions sgd;
    sgd.learning_rate = 0.01;
    OptimizerState state = CreateOptimizerState(sgd, w, allocator);
    REQUIRE(ApplyOptimizerStep(sgd, accumulated, w, state).ok());
    CHECK(w.data()[0] == Approx(1.2));
    // The persistent buffers are all that is left: one fp32 weight and one fp32 gradient.
    CHECK(allocator.live_bytes()[MemoryCategory::kParameters] == 4);
    CHECK(allocator.live_bytes()[MemoryCategory::kGradients] == 4);
    CHECK(allocator.live_bytes()[MemoryCategory::kTransients] == 0);
  }
  CHECK(allocator.live_total() == 0);
}

}  // namespace
}  // namespace memplan
