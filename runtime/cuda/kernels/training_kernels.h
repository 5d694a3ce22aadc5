#pragma once
// Kernels of the training loop around the graph: losses, optimizer updates, Dropout masks and the
// GradScaler's overflow check. fp32 buffers throughout (the backend stages other dtypes).
// Formulas follow the CPU reference (runtime/cpu/losses.cc, runtime/optimizers.cc) so the two
// backends agree within fp32 reduction-order error.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "graph/expected.h"

namespace memplan::cuda {

// PyTorch's default ignore_index for cross entropy.
inline constexpr int64_t kIgnoreLabel = -100;

// Cross entropy over logits [rows, classes] and labels [rows] (fp32 holding integers): writes
// the mean over counted rows into loss[0] and, when log_prob is not null, log_softmax(logits).
// Errors reported by the kernel cannot name the row; labels outside [0, classes) other than
// kIgnoreLabel count as ignored (the host validates them when it uploads labels).
// Row r's class c is at (r / inner) * classes * inner + r % inner + c * inner: inner = 1 for
// [rows, classes]; the product of d... for [N, C, d...] logits (rows = N * d...).
Status CrossEntropyForward(const float* logits, const float* labels, int64_t rows, int64_t classes,
                           int64_t inner, float* loss, float* log_prob, cudaStream_t stream);
// grad = scale * (softmax(source) - onehot(label)) / counted. `source` may hold logits or
// log-probabilities (softmax of either is the same).
Status CrossEntropyBackward(const float* source, const float* labels, int64_t rows, int64_t classes,
                            int64_t inner, float scale, float* grad, cudaStream_t stream);
// mean((p - l)^2) into loss[0]; its gradient 2 * scale * (p - l) / n.
Status MseForward(const float* prediction, const float* label, int64_t n, float* loss,
                  cudaStream_t stream);
Status MseBackward(const float* prediction, const float* label, int64_t n, float scale, float* grad,
                   cudaStream_t stream);
// sum(p) into loss[0].
Status SumForward(const float* prediction, int64_t n, float* loss, cudaStream_t stream);

// One optimizer update of n elements, fp32 master p, gradient g, states (may be null when the
// kind has none). Kind: 0 sgd, 1 momentum, 2 adam, 3 adamw.
struct OptimizerUpdate {
  int kind = 0;
  float lr = 0;
  float weight_decay = 0;
  float momentum = 0;
  float beta1 = 0;
  float beta2 = 0;
  float one_minus_beta1 = 0;
  float one_minus_beta2 = 0;
  float decay = 1;  // adamw: 1 - lr * wd
  float step_size = 0;
  float correction2_sqrt = 1;
  float epsilon = 0;
  bool first_step = false;  // momentum: the buffer starts as the first gradient
};
Status OptimizerUpdateKernel(const OptimizerUpdate& u, float* p, const float* g, float* state0,
                             float* state1, int64_t n, cudaStream_t stream);

// mask[i] = 1 when element i is kept (a hash of seed and i >= ratio), y = x * mask / (1 - ratio).
Status DropoutForward(const float* x, float* y, float* mask, int64_t n, float ratio, uint64_t seed,
                      cudaStream_t stream);
// dx = dy * mask / (1 - ratio).
Status DropoutBackward(const float* dy, const float* mask, float* dx, int64_t n, float ratio,
                       cudaStream_t stream);

// x *= factor; sets *found_nonfinite (device int, not reset) when any result is inf or NaN.
Status ScaleAndCheck(float* x, int64_t n, float factor, int* found_nonfinite, cudaStream_t stream);
// *sum (device double, not reset) += sum of x^2.
Status SumOfSquares(const float* x, int64_t n, double* sum, cudaStream_t stream);

}  // namespace memplan::cuda
