// Reductions over a contiguous block of axes, and row gather (Gather on axis 0 / embeddings).

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/launch_config.cuh"

namespace memplan::cuda {
namespace {

// One thread per output element walks the reduced axis (deterministic order).
__global__ void ReduceMiddleKernel(const float* x, float* y, int64_t outer, int64_t reduce,
                                   int64_t inner, float scale) {
  const int64_t n = outer * inner;
  for (const int64_t i : GridStride(n)) {
    const int64_t o = i / inner;
    const int64_t in = i % inner;
    float sum = 0.0f;
    for (int64_t r = 0; r < reduce; ++r) sum += x[(o * reduce + r) * inner + in];
    y[i] = sum * scale;
  }
}

__global__ void ReduceMiddleBackwardKernel(const float* dy, float* dx, int64_t outer,
                                           int64_t reduce, int64_t inner, float scale) {
  const int64_t n = outer * reduce * inner;
  for (const int64_t i : GridStride(n)) {
    const int64_t in = i % inner;
    const int64_t o = i / (reduce * inner);
    dx[i] = dy[o * inner + in] * scale;
  }
}

__device__ int64_t RowOf(float index, int64_t rows) {
  int64_t row = static_cast<int64_t>(index);
  if (row < 0) row += rows;
  return row;
}

__global__ void GatherRowsKernel(const float* table, int64_t rows, int64_t cols,
                                 const float* indices, int64_t count, float* out) {
  const int64_t n = count * cols;
  for (const int64_t i : GridStride(n)) {
    const int64_t row = RowOf(indices[i / cols], rows);
    out[i] = row >= 0 && row < rows ? table[row * cols + i % cols] : 0.0f;
  }
}

__global__ void GatherRowsBackwardKernel(const float* grad_out, const float* indices, int64_t count,
                                         int64_t rows, int64_t cols, float* dtable) {
  const int64_t n = count * cols;
  for (const int64_t i : GridStride(n)) {
    const int64_t row = RowOf(indices[i / cols], rows);
    if (row >= 0 && row < rows) atomicAdd(&dtable[row * cols + i % cols], grad_out[i]);
  }
}

}  // namespace

Status ReduceMiddle(const float* x, float* y, int64_t outer, int64_t reduce, int64_t inner,
                    bool mean, cudaStream_t stream) {
  const int64_t n = outer * inner;
  if (n == 0) return OkStatus();
  const float scale = mean && reduce > 0 ? 1.0f / static_cast<float>(reduce) : 1.0f;
  ReduceMiddleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, y, outer, reduce, inner,
                                                                    scale);
  return CheckLaunch("ReduceMiddleKernel");
}

Status ReduceMiddleBackward(const float* dy, float* dx, int64_t outer, int64_t reduce,
                            int64_t inner, bool mean, cudaStream_t stream) {
  const int64_t n = outer * reduce * inner;
  if (n == 0) return OkStatus();
  const float scale = mean && reduce > 0 ? 1.0f / static_cast<float>(reduce) : 1.0f;
  ReduceMiddleBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(dy, dx, outer, reduce,
                                                                            inner, scale);
  return CheckLaunch("ReduceMiddleBackwardKernel");
}

Status GatherRows(const float* table, int64_t rows, int64_t cols, const float* indices,
                  int64_t count, float* out, cudaStream_t stream) {
  const int64_t n = count * cols;
  if (n == 0) return OkStatus();
  GatherRowsKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(table, rows, cols, indices, count,
                                                                  out);
  return CheckLaunch("GatherRowsKernel");
}

Status GatherRowsBackward(const float* grad_out, const float* indices, int64_t count, int64_t rows,
                          int64_t cols, float* dtable, cudaStream_t stream) {
  MEMPLAN_RETURN_IF_ERROR(CheckCuda(cudaMemsetAsync(dtable, 0, sizeof(float) * rows * cols, stream),
                                    "cudaMemsetAsync(dtable)"));
  const int64_t n = count * cols;
  if (n == 0) return OkStatus();
  GatherRowsBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(grad_out, indices, count,
                                                                          rows, cols, dtable);
  return CheckLaunch("GatherRowsBackwardKernel");
}

}  // namespace memplan::cuda
