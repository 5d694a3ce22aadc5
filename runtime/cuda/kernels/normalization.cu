// Softmax and layer normalization over the last axis: one block per row, block-wide reductions
// in shared memory (fp32 throughout).

#include <cmath>

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/launch_config.cuh"

namespace memplan::cuda {
namespace {

enum class Combine { kSum, kMax };

// Reduces `value` across the block; every thread gets the result. REQUIRES: blockDim.x ==
// kThreadsPerBlock (a power of two).
__device__ float BlockReduce(float value, Combine combine, float* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreadsPerBlock / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const float other = shared[threadIdx.x + stride];
      shared[threadIdx.x] = combine == Combine::kSum ? shared[threadIdx.x] + other
                                                     : fmaxf(shared[threadIdx.x], other);
    }
    __syncthreads();
  }
  const float result = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return result;
}

__global__ void SoftmaxKernel(const float* x, float* y, int64_t cols) {
  __shared__ float shared[kThreadsPerBlock];
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float local_max = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local_max = fmaxf(local_max, row[c]);
  const float row_max = BlockReduce(local_max, Combine::kMax, shared);
  float local_sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local_sum += expf(row[c] - row_max);
  const float sum = BlockReduce(local_sum, Combine::kSum, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - row_max) / sum;
}

__global__ void SoftmaxBackwardKernel(const float* y, const float* dy, float* dx, int64_t cols) {
  __shared__ float shared[kThreadsPerBlock];
  const int64_t offset = blockIdx.x * cols;
  float local = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local += dy[offset + c] * y[offset + c];
  const float dot = BlockReduce(local, Combine::kSum, shared);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    dx[offset + c] = y[offset + c] * (dy[offset + c] - dot);
  }
}

__global__ void LayerNormKernel(const float* x, const float* gamma, const float* beta,
                                float epsilon, float* y, float* mean_out, float* invstd_out,
                                int64_t cols) {
  __shared__ float shared[kThreadsPerBlock];
  const int64_t offset = blockIdx.x * cols;
  float local = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local += x[offset + c];
  const float mean = BlockReduce(local, Combine::kSum, shared) / static_cast<float>(cols);
  local = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = x[offset + c] - mean;
    local += d * d;
  }
  const float variance = BlockReduce(local, Combine::kSum, shared) / static_cast<float>(cols);
  const float invstd = rsqrtf(variance + epsilon);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float normalized = (x[offset + c] - mean) * invstd;
    y[offset + c] = normalized * gamma[c] + (beta != nullptr ? beta[c] : 0.0f);
  }
  if (threadIdx.x == 0) {
    mean_out[blockIdx.x] = mean;
    invstd_out[blockIdx.x] = invstd;
  }
}

// dx = invstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, per row.
__global__ void LayerNormBackwardKernel(const float* x, const float* gamma, const float* mean,
                                        const float* invstd, const float* dy, float* dx,
                                        int64_t cols) {
  __shared__ float shared[kThreadsPerBlock];
  const int64_t offset = blockIdx.x * cols;
  const float m = mean[blockIdx.x];
  const float s = invstd[blockIdx.x];
  float local_g = 0.0f;
  float local_gx = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = dy[offset + c] * gamma[c];
    local_g += g;
    local_gx += g * (x[offset + c] - m) * s;
  }
  const float mean_g = BlockReduce(local_g, Combine::kSum, shared) / static_cast<float>(cols);
  const float mean_gx = BlockReduce(local_gx, Combine::kSum, shared) / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (x[offset + c] - m) * s;
    dx[offset + c] = s * (dy[offset + c] * gamma[c] - mean_g - xhat * mean_gx);
  }
}

// One thread per column sums over rows (rows are few compared with a GPU; fine for a reference
// backend, and deterministic).
__global__ void LayerNormParamGradKernel(const float* x, const float* mean, const float* invstd,
                                         const float* dy, float* dgamma, float* dbeta, int64_t rows,
                                         int64_t cols) {
  for (const int64_t c : GridStride(cols)) {
    float sum_gamma = 0.0f;
    float sum_beta = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float g = dy[r * cols + c];
      sum_gamma += g * (x[r * cols + c] - mean[r]) * invstd[r];
      sum_beta += g;
    }
    if (dgamma != nullptr) dgamma[c] = sum_gamma;
    if (dbeta != nullptr) dbeta[c] = sum_beta;
  }
}

Status CheckRows(int64_t rows, const char* kernel) {
  if (rows > int64_t{2147483647}) {
    return MakeError(std::string(kernel) + ": too many rows for one grid");
  }
  return OkStatus();
}

}  // namespace

Status SoftmaxForward(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return OkStatus();
  MEMPLAN_RETURN_IF_ERROR(CheckRows(rows, "SoftmaxKernel"));
  SoftmaxKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(x, y, cols);
  return CheckLaunch("SoftmaxKernel");
}

Status SoftmaxBackward(const float* y, const float* dy, float* dx, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  if (rows == 0 || cols == 0) return OkStatus();
  MEMPLAN_RETURN_IF_ERROR(CheckRows(rows, "SoftmaxBackwardKernel"));
  SoftmaxBackwardKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(y, dy, dx,
                                                                                      cols);
  return CheckLaunch("SoftmaxBackwardKernel");
}

Status LayerNormForward(const float* x, const float* gamma, const float* beta, float epsilon,
                        float* y, float* mean, float* invstd, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  if (rows == 0 || cols == 0) return OkStatus();
  MEMPLAN_RETURN_IF_ERROR(CheckRows(rows, "LayerNormKernel"));
  LayerNormKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
      x, gamma, beta, epsilon, y, mean, invstd, cols);
  return CheckLaunch("LayerNormKernel");
}

Status LayerNormBackward(const float* x, const float* gamma, const float* mean, const float* invstd,
                         const float* dy, float* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return OkStatus();
  MEMPLAN_RETURN_IF_ERROR(CheckRows(rows, "LayerNormBackwardKernel"));
  if (dx != nullptr) {
    LayerNormBackwardKernel<<<static_cast<unsigned>(rows), kThreadsPerBlock, 0, stream>>>(
        x, gamma, mean, invstd, dy, dx, cols);
    MEMPLAN_RETURN_IF_ERROR(CheckLaunch("LayerNormBackwardKernel"));
  }
  if (dgamma == nullptr && dbeta == nullptr) return OkStatus();
  LayerNormParamGradKernel<<<BlocksFor(cols), kThreadsPerBlock, 0, stream>>>(
      x, mean, invstd, dy, dgamma, dbeta, rows, cols);
  return CheckLaunch("LayerNormParamGradKernel");
}

}  // namespace memplan::cuda
