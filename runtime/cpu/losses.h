#pragma once
// Training losses with mean reduction, as torch.nn.functional computes them, and their gradients.
// The loss is a scalar fp32 tensor (losses run in fp32 under autocast); the gradient has the
// prediction's shape and dtype.

#include <optional>
#include <string_view>

#include "analyzer/vocabulary/loss_kind.h"
#include "graph/expected.h"
#include "runtime/cpu/kernel_api.h"
#include "runtime/tensor.h"

namespace memplan {

// The loss is one of analyzer/vocabulary/loss_kind.h's, resolved (never LossKind::kAuto):
//   kCrossEntropy  prediction: logits [N, C, d...]; target: class ids [N, d...] (-100 ignored)
//   kMse           prediction and target of the same shape
//   kSum           the sum of the prediction's elements; no target (a memory benchmark's loss)

// The loss value, a rank-0 fp32 tensor in ctx.output_category. `target` may be undefined for kSum.
// REQUIRES: kind != LossKind::kAuto (both functions).
Expected<Tensor> LossForward(LossKind kind, const KernelContext& ctx, const Tensor& prediction,
                             const Tensor& target);

// d(grad_scale * loss)/d(prediction). grad_scale carries the loss scale and the 1/k of gradient
// accumulation (each micro-batch's loss is divided by the number of micro-batches).
Expected<Tensor> LossBackward(LossKind kind, const KernelContext& ctx, const Tensor& prediction,
                              const Tensor& target, float grad_scale);

}  // namespace memplan
