// Strided copies (Transpose, Slice, Concat, Split, Expand and their backwards) and Where.

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/launch_config.cuh"
#include "runtime/cuda/kernels/layout_kernels.h"

namespace memplan::cuda {
namespace {

__global__ void StridedCopyKernel(const float* src, float* dst, StridedCopyGeometry g, int64_t n,
                                  bool accumulate) {
  for (const int64_t i : GridStride(n)) {
    int64_t flat = i;
    int64_t s = g.src_offset;
    int64_t d = g.dst_offset;
    for (int axis = g.rank - 1; axis >= 0; --axis) {
      const int64_t c = flat % g.dims[axis];
      flat /= g.dims[axis];
      s += c * g.src_strides[axis];
      d += c * g.dst_strides[axis];
    }
    if (accumulate) {
      atomicAdd(&dst[d], src[s]);
    } else {
      dst[d] = src[s];
    }
  }
}

__device__ void WhereOffsets(const WhereGeometry& g, int64_t flat, int64_t o[3]) {
  o[0] = o[1] = o[2] = 0;
  for (int axis = g.rank - 1; axis >= 0; --axis) {
    const int64_t c = flat % g.out_dims[axis];
    flat /= g.out_dims[axis];
    for (int k = 0; k < 3; ++k) o[k] += c * g.strides[k][axis];
  }
}

__global__ void WhereKernel(const float* condition, const float* x, const float* y, float* out,
                            WhereGeometry g, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    int64_t o[3];
    WhereOffsets(g, i, o);
    out[i] = condition[o[0]] != 0.0f ? x[o[1]] : y[o[2]];
  }
}

__global__ void WhereBackwardKernel(const float* condition, const float* grad_out, float* dx,
                                    float* dy, WhereGeometry g, int64_t n) {
  for (const int64_t i : GridStride(n)) {
    int64_t o[3];
    WhereOffsets(g, i, o);
    const bool take_x = condition[o[0]] != 0.0f;
    if (take_x && dx != nullptr) atomicAdd(&dx[o[1]], grad_out[i]);
    if (!take_x && dy != nullptr) atomicAdd(&dy[o[2]], grad_out[i]);
  }
}

int64_t Count(const WhereGeometry& g) {
  int64_t n = 1;
  for (int i = 0; i < g.rank; ++i) n *= g.out_dims[i];
  return n;
}

}  // namespace

Status StridedCopy(const float* src, float* dst, const StridedCopyGeometry& g, bool accumulate,
                   cudaStream_t stream) {
  const int64_t n = CopyCount(g);
  if (n == 0) return OkStatus();
  StridedCopyKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(src, dst, g, n, accumulate);
  return CheckLaunch("StridedCopyKernel");
}

Status WhereForward(const float* condition, const float* x, const float* y, float* out,
                    const WhereGeometry& g, cudaStream_t stream) {
  const int64_t n = Count(g);
  if (n == 0) return OkStatus();
  WhereKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(condition, x, y, out, g, n);
  return CheckLaunch("WhereKernel");
}

Status WhereBackward(const float* condition, const float* grad_out, float* dx, float* dy,
                     const WhereGeometry& g, cudaStream_t stream) {
  const int64_t n = Count(g);
  if (n == 0) return OkStatus();
  WhereBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(condition, grad_out, dx, dy, g,
                                                                     n);
  return CheckLaunch("WhereBackwardKernel");
}

}  // namespace memplan::cuda
