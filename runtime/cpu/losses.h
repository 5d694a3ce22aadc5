#pragma once
// Training losses with mean reduction, as torch.nn.functional computes them, and their gradients.
// The loss is a scalar fp32 tensor (losses run in fp32 under autocast); the gradient has the
// prediction's shape and dtype.

#include <optional>
#include <string_view>

#include "graph/expected.h"
#include "runtime/cpu/kernel_api.h"
#include "runtime/tensor.h"

namespace memplan {

enum class LossFunction {
  kCrossEntropy,      // prediction: logits [N, C, d...]; target: class ids [N, d...] (-100 ignored)
  kMeanSquaredError,  // prediction and target of the same shape
  kSum,               // the sum of the prediction's elements; no target (a memory benchmark's loss)
};

// "cross_entropy", "mse", "sum".
std::optional<LossFunction> LossFunctionFromName(std::string_view name);
std::string_view LossFunctionName(LossFunction kind);

// The loss value, a rank-0 fp32 tensor in ctx.output_category. `target` may be undefined for kSum.
Expected<Tensor> LossForward(LossFunction kind, const KernelContext& ctx, const Tensor& prediction,
                             const Tensor& target);

// d(grad_scale * loss)/d(prediction). grad_scale carries the loss scale and the 1/k of gradient
// accumulation (each micro-batch's loss is divided by the number of micro-batches).
Expected<Tensor> LossBackward(LossFunction kind, const KernelContext& ctx, const Tensor& prediction,
                              const Tensor& target, float grad_scale);

}  // namespace memplan
