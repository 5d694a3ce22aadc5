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
//   kCrossEntropy  prediction: logits [N, C, d...]; target: class ids [N, d...] (-100 ignored);
//                  CrossEntropyLogitsView makes that layout of a program's logits
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

// The program's cross-entropy logits as the kernels here read them, [N, C, d...]: the dimensions
// before the class axis become N, those after it d (one): logits whose classes are last
// ([batch, seq, vocab]) become rows [batch * seq, vocab]; [N, C] and [N, C, d1, d2, ...] are
// already in that layout. `class_axis` -1: CrossEntropyClassAxis of the logits' rank.
Tensor CrossEntropyLogitsView(const Tensor& logits, int class_axis = -1);

// log_softmax over the classes (dimension 1) of [N, C, d...] logits, written into `out` (the same
// element count, any float dtype: each value is rounded to it). Computed in double like the loss.
Status CrossEntropyLogProb(const Tensor& logits, Tensor& out);

}  // namespace memplan
