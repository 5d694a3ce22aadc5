// Losses, optimizer updates, Dropout and the overflow / norm reductions.

#include <cmath>
#include <string>

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/launch_config.cuh"
#include "runtime/cuda/kernels/training_kernels.h"

namespace memplan::cuda {
namespace {

// Block-wide sum; every thread gets the result. REQUIRES: blockDim.x == kThreadsPerBlock.
__device__ float BlockSum(float v) {
  __shared__ float partial[kThreadsPerBlock];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreadsPerBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float total = partial[0];
  __syncthreads();
  return total;
}

__device__ float BlockMax(float v) {
  __shared__ float partial[kThreadsPerBlock];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreadsPerBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + s]);
    __syncthreads();
  }
  const float total = partial[0];
  __syncthreads();
  return total;
}

__device__ bool Counted(float label, int64_t classes) {
  const auto l = static_cast<int64_t>(label);
  return l >= 0 && l < classes;
}

// One block per row: log-sum-exp, the row's loss term, optional log-probabilities. The row terms
// and the counted rows accumulate into totals[0] and totals[1].
// The offset of row `row`'s first class; its classes follow at stride `inner`.
__device__ int64_t RowBase(int64_t row, int64_t classes, int64_t inner) {
  return (row / inner) * classes * inner + row % inner;
}

__global__ void CrossEntropyRows(const float* z, const float* labels, int64_t classes,
                                 int64_t inner, float* log_prob, float* totals) {
  const int64_t row = blockIdx.x;
  const int64_t base = RowBase(row, classes, inner);
  const float* zr = z + base;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, zr[c * inner]);
  m = BlockMax(m);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += expf(zr[c * inner] - m);
  const float lse = m + logf(BlockSum(s));
  if (log_prob != nullptr)
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      log_prob[base + c * inner] = zr[c * inner] - lse;
  if (threadIdx.x == 0 && Counted(labels[row], classes)) {
    atomicAdd(&totals[0], lse - zr[static_cast<int64_t>(labels[row]) * inner]);
    atomicAdd(&totals[1], 1.0f);
  }
}

__global__ void Divide(const float* totals, float* loss) { loss[0] = totals[0] / totals[1]; }

__global__ void CountLabels(const float* labels, int64_t rows, int64_t classes, float* counted) {
  float c = 0.0f;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) c += Counted(labels[r], classes) ? 1 : 0;
  c = BlockSum(c);
  if (threadIdx.x == 0) counted[0] = c;
}

__global__ void CrossEntropyGradRows(const float* source, const float* labels, int64_t classes,
                                     int64_t inner, float scale, const float* counted,
                                     float* grad) {
  const int64_t row = blockIdx.x;
  const int64_t base = RowBase(row, classes, inner);
  const float* zr = source + base;
  float* gr = grad + base;
  if (!Counted(labels[row], classes)) {
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) gr[c * inner] = 0.0f;
    return;
  }
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) m = fmaxf(m, zr[c * inner]);
  m = BlockMax(m);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s += expf(zr[c * inner] - m);
  s = BlockSum(s);
  const float k = scale / counted[0];
  const auto label = static_cast<int64_t>(labels[row]);
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
    gr[c * inner] = k * (expf(zr[c * inner] - m) / s - (c == label ? 1.0f : 0.0f));
}

__global__ void SquaredErrorSum(const float* p, const float* l, int64_t n, float* total) {
  float s = 0.0f;
  for (const int64_t i : GridStride(n)) {
    const float d = p[i] - (l != nullptr ? l[i] : 0.0f);
    s += l != nullptr ? d * d : p[i];
  }
  s = BlockSum(s);
  if (threadIdx.x == 0) atomicAdd(total, s);
}

__global__ void ScaleScalar(float* x, float factor) { x[0] *= factor; }

__global__ void MseGrad(const float* p, const float* l, int64_t n, float k, float* g) {
  for (const int64_t i : GridStride(n)) g[i] = k * (p[i] - l[i]);
}

__global__ void OptimizerKernel(OptimizerUpdate u, float* p, const float* g, float* s0, float* s1,
                                int64_t n) {
  for (const int64_t i : GridStride(n)) {
    switch (u.kind) {
      case 0:
        p[i] -= u.lr * (g[i] + u.weight_decay * p[i]);
        break;
      case 1: {
        const float d = g[i] + u.weight_decay * p[i];
        s0[i] = u.first_step ? d : u.momentum * s0[i] + d;
        p[i] -= u.lr * s0[i];
        break;
      }
      default: {
        float d = g[i];
        if (u.kind == 3) {
          p[i] *= u.decay;
        } else {
          d += u.weight_decay * p[i];
        }
        s0[i] = u.beta1 * s0[i] + u.one_minus_beta1 * d;
        s1[i] = u.beta2 * s1[i] + u.one_minus_beta2 * d * d;
        const float denom = sqrtf(s1[i]) / u.correction2_sqrt + u.epsilon;
        p[i] -= u.step_size * s0[i] / denom;
      }
    }
  }
}

// SplitMix64 finaliser: a counter-based hash, so a recompute with the same seed reproduces the
// mask without storing RNG state.
__device__ uint64_t Hash(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void DropoutKernel(const float* x, float* y, float* mask, int64_t n, float ratio,
                              uint64_t seed) {
  const float keep_scale = 1.0f / (1.0f - ratio);
  for (const int64_t i : GridStride(n)) {
    const float u = static_cast<float>(Hash(seed ^ Hash(static_cast<uint64_t>(i))) >> 40) *
                    (1.0f / 16777216.0f);  // 24 random bits in [0, 1)
    const float keep = u >= ratio ? 1.0f : 0.0f;
    if (mask != nullptr) mask[i] = keep;
    y[i] = x[i] * keep * keep_scale;
  }
}

__global__ void DropoutBackwardKernel(const float* dy, const float* mask, float* dx, int64_t n,
                                      float keep_scale) {
  for (const int64_t i : GridStride(n)) dx[i] = dy[i] * mask[i] * keep_scale;
}

__global__ void ScaleCheckKernel(float* x, int64_t n, float factor, int* found) {
  for (const int64_t i : GridStride(n)) {
    const float v = x[i] * factor;
    x[i] = v;
    if (!isfinite(v)) *found = 1;
  }
}

__global__ void SumSquaresKernel(const float* x, int64_t n, double* sum) {
  float s = 0.0f;
  for (const int64_t i : GridStride(n)) s += x[i] * x[i];
  s = BlockSum(s);
  if (threadIdx.x == 0) atomicAdd(sum, static_cast<double>(s));
}

Status Zero(float* p, int64_t n, cudaStream_t stream) {
  return CheckCuda(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * sizeof(float), stream),
                   "cudaMemsetAsync(loss)");
}

}  // namespace

namespace {

// The kernels of cross entropy forward, given its stream-ordered temporary `totals` (the sum of
// row terms and the counted rows).
Status LaunchCrossEntropyForward(const float* logits, const float* labels, int64_t rows,
                                 int64_t classes, int64_t inner, float* loss, float* log_prob,
                                 float* totals, cudaStream_t stream) {
  MEMPLAN_RETURN_IF_ERROR(Zero(totals, 2, stream));
  if (rows > 0) {
    CrossEntropyRows<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
        logits, labels, classes, inner, log_prob, totals);
    MEMPLAN_RETURN_IF_ERROR(CheckLaunch("CrossEntropyRows"));
  }
  Divide<<<1, 1, 0, stream>>>(totals, loss);
  return CheckLaunch("Divide");
}

Status LaunchCrossEntropyBackward(const float* source, const float* labels, int64_t rows,
                                  int64_t classes, int64_t inner, float scale, float* grad,
                                  float* counted, cudaStream_t stream) {
  CountLabels<<<1, kThreadsPerBlock, 0, stream>>>(labels, rows, classes, counted);
  MEMPLAN_RETURN_IF_ERROR(CheckLaunch("CountLabels"));
  CrossEntropyGradRows<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
      source, labels, classes, inner, scale, counted, grad);
  return CheckLaunch("CrossEntropyGradRows");
}

// Runs launch(scratch) with `count` floats of stream-ordered scratch memory, freed after it on the
// same stream whatever launch returns; `what` names the scratch in error messages. The launch's
// error comes first, then the free's.
template <class Launch>
Status WithScratchFloats(size_t count, const std::string& what, cudaStream_t stream,
                         Launch launch) {
  float* scratch = nullptr;
  MEMPLAN_RETURN_IF_ERROR(
      CheckCuda(cudaMallocAsync(reinterpret_cast<void**>(&scratch), count * sizeof(float), stream),
                "cudaMallocAsync(" + what + ")"));
  const Status launched = launch(scratch);
  const Status freed = CheckCuda(cudaFreeAsync(scratch, stream), "cudaFreeAsync(" + what + ")");
  return launched.ok() ? freed : launched;
}

}  // namespace

Status CrossEntropyForward(const float* logits, const float* labels, int64_t rows, int64_t classes,
                           int64_t inner, float* loss, float* log_prob, cudaStream_t stream) {
  return WithScratchFloats(2, "cross entropy totals", stream, [&](float* totals) {
    return LaunchCrossEntropyForward(logits, labels, rows, classes, inner, loss, log_prob, totals,
                                     stream);
  });
}

Status CrossEntropyBackward(const float* source, const float* labels, int64_t rows, int64_t classes,
                            int64_t inner, float scale, float* grad, cudaStream_t stream) {
  if (rows == 0) return OkStatus();
  return WithScratchFloats(1, "cross entropy count", stream, [&](float* counted) {
    return LaunchCrossEntropyBackward(source, labels, rows, classes, inner, scale, grad, counted,
                                      stream);
  });
}

Status MseForward(const float* prediction, const float* label, int64_t n, float* loss,
                  cudaStream_t stream) {
  MEMPLAN_RETURN_IF_ERROR(Zero(loss, 1, stream));
  SquaredErrorSum<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(prediction, label, n, loss);
  MEMPLAN_RETURN_IF_ERROR(CheckLaunch("SquaredErrorSum"));
  ScaleScalar<<<1, 1, 0, stream>>>(loss, n > 0 ? 1.0f / static_cast<float>(n) : NAN);
  return CheckLaunch("ScaleScalar");
}

Status MseBackward(const float* prediction, const float* label, int64_t n, float scale, float* grad,
                   cudaStream_t stream) {
  if (n == 0) return OkStatus();
  MseGrad<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      prediction, label, n, 2.0f * scale / static_cast<float>(n), grad);
  return CheckLaunch("MseGrad");
}

Status SumForward(const float* prediction, int64_t n, float* loss, cudaStream_t stream) {
  MEMPLAN_RETURN_IF_ERROR(Zero(loss, 1, stream));
  SquaredErrorSum<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(prediction, nullptr, n, loss);
  return CheckLaunch("SquaredErrorSum(sum)");
}

Status OptimizerUpdateKernel(const OptimizerUpdate& u, float* p, const float* g, float* state0,
                             float* state1, int64_t n, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  OptimizerKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(u, p, g, state0, state1, n);
  return CheckLaunch("OptimizerKernel");
}

Status DropoutForward(const float* x, float* y, float* mask, int64_t n, float ratio, uint64_t seed,
                      cudaStream_t stream) {
  if (n == 0) return OkStatus();
  DropoutKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, y, mask, n, ratio, seed);
  return CheckLaunch("DropoutKernel");
}

Status DropoutBackward(const float* dy, const float* mask, float* dx, int64_t n, float ratio,
                       cudaStream_t stream) {
  if (n == 0) return OkStatus();
  DropoutBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(dy, mask, dx, n,
                                                                       1.0f / (1.0f - ratio));
  return CheckLaunch("DropoutBackwardKernel");
}

Status ScaleAndCheck(float* x, int64_t n, float factor, int* found_nonfinite, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  ScaleCheckKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, n, factor, found_nonfinite);
  return CheckLaunch("ScaleCheckKernel");
}

Status SumOfSquares(const float* x, int64_t n, double* sum, cudaStream_t stream) {
  if (n == 0) return OkStatus();
  SumSquaresKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, n, sum);
  return CheckLaunch("SumSquaresKernel");
}

}  // namespace memplan::cuda
