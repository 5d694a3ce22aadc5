// im2col / col2im, max pooling and batch normalization.

#include <cmath>

#include "runtime/cuda/cuda_status.h"
#include "runtime/cuda/kernels/conv_kernels.h"
#include "runtime/cuda/kernels/launch_config.cuh"

namespace memplan::cuda {
namespace {

// Device copy of Window2d::SourceOffset (the host one is the tested reference).
__device__ int64_t Source(const Window2d& w, int64_t out_w, int64_t row, int64_t col) {
  const int64_t kw = row % w.kernel_w;
  const int64_t kh = (row / w.kernel_w) % w.kernel_h;
  const int64_t ch = row / (w.kernel_w * w.kernel_h);
  const int64_t ow = col % out_w;
  const int64_t oh = col / out_w;
  const int64_t ih = oh * w.stride_h - w.pad_top + kh * w.dilation_h;
  const int64_t iw = ow * w.stride_w - w.pad_left + kw * w.dilation_w;
  if (ih < 0 || ih >= w.in_h || iw < 0 || iw >= w.in_w) return -1;
  return (ch * w.in_h + ih) * w.in_w + iw;
}

__global__ void Im2ColKernel(const float* x, Window2d w, int64_t out_w, int64_t rows, int64_t cols,
                             int64_t image_size, int64_t n, float* col) {
  for (const int64_t i : GridStride(n)) {
    const int64_t c = i % cols;
    const int64_t r = (i / cols) % rows;
    const int64_t image = i / (cols * rows);
    const int64_t s = Source(w, out_w, r, c);
    col[i] = s < 0 ? 0.0f : x[image * image_size + s];
  }
}

__global__ void Col2ImKernel(const float* col, Window2d w, int64_t out_w, int64_t rows,
                             int64_t cols, int64_t image_size, int64_t n, float* dx) {
  for (const int64_t i : GridStride(n)) {
    const int64_t c = i % cols;
    const int64_t r = (i / cols) % rows;
    const int64_t image = i / (cols * rows);
    const int64_t s = Source(w, out_w, r, c);
    if (s >= 0) atomicAdd(&dx[image * image_size + s], col[i]);
  }
}

__global__ void MaxPoolKernel(const float* x, Window2d w, int64_t out_h, int64_t out_w, int64_t n,
                              float* y, float* argmax) {
  for (const int64_t i : GridStride(n)) {
    const int64_t ow = i % out_w;
    const int64_t oh = (i / out_w) % out_h;
    const int64_t plane = i / (out_w * out_h);
    const float* xp = x + plane * w.in_h * w.in_w;
    float best = -INFINITY;
    int64_t best_index = -1;
    for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
      const int64_t ih = oh * w.stride_h - w.pad_top + kh * w.dilation_h;
      if (ih < 0 || ih >= w.in_h) continue;
      for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
        const int64_t iw = ow * w.stride_w - w.pad_left + kw * w.dilation_w;
        if (iw < 0 || iw >= w.in_w) continue;
        const float v = xp[ih * w.in_w + iw];
        if (best_index < 0 || v > best) {
          best = v;
          best_index = ih * w.in_w + iw;
        }
      }
    }
    y[i] = best;
    if (argmax != nullptr) argmax[i] = static_cast<float>(best_index);
  }
}

__global__ void MaxPoolBackwardKernel(const float* dy, const float* argmax, int64_t in_plane,
                                      int64_t out_plane, int64_t n, float* dx) {
  for (const int64_t i : GridStride(n)) {
    const auto at = static_cast<int64_t>(argmax[i]);
    if (at >= 0) atomicAdd(&dx[(i / out_plane) * in_plane + at], dy[i]);
  }
}

// Block-wide sum of two values at once. REQUIRES: blockDim.x == kThreadsPerBlock.
__device__ void BlockSum2(float& a, float& b) {
  __shared__ float pa[kThreadsPerBlock];
  __shared__ float pb[kThreadsPerBlock];
  pa[threadIdx.x] = a;
  pb[threadIdx.x] = b;
  __syncthreads();
  for (int s = kThreadsPerBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      pa[threadIdx.x] += pa[threadIdx.x + s];
      pb[threadIdx.x] += pb[threadIdx.x + s];
    }
    __syncthreads();
  }
  a = pa[0];
  b = pb[0];
  __syncthreads();
}

// One block per channel. Two passes (mean, then centred squares) for accuracy.
__global__ void BatchNormForwardKernel(const float* x, const float* scale, const float* bias,
                                       float epsilon, int64_t n, int64_t c, int64_t spatial,
                                       float* y, float* mean_out, float* invstd_out) {
  const int64_t ch = blockIdx.x;
  const int64_t count = n * spatial;
  float s = 0.0f, unused = 0.0f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
    s += x[((j / spatial) * c + ch) * spatial + j % spatial];
  BlockSum2(s, unused);
  const float mean = s / static_cast<float>(count);
  float sq = 0.0f;
  unused = 0.0f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const float d = x[((j / spatial) * c + ch) * spatial + j % spatial] - mean;
    sq += d * d;
  }
  BlockSum2(sq, unused);
  const float invstd = rsqrtf(sq / static_cast<float>(count) + epsilon);
  const float g = scale != nullptr ? scale[ch] : 1.0f;
  const float b = bias != nullptr ? bias[ch] : 0.0f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t at = ((j / spatial) * c + ch) * spatial + j % spatial;
    y[at] = (x[at] - mean) * invstd * g + b;
  }
  if (threadIdx.x == 0) {
    if (mean_out != nullptr) mean_out[ch] = mean;
    if (invstd_out != nullptr) invstd_out[ch] = invstd;
  }
}

__global__ void BatchNormBackwardKernel(const float* x, const float* scale, const float* mean_in,
                                        const float* invstd_in, const float* dy, int64_t n,
                                        int64_t c, int64_t spatial, float* dx, float* dscale,
                                        float* dbias) {
  const int64_t ch = blockIdx.x;
  const int64_t count = n * spatial;
  const float mean = mean_in[ch];
  const float invstd = invstd_in[ch];
  float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t at = ((j / spatial) * c + ch) * spatial + j % spatial;
    sum_dy += dy[at];
    sum_dy_xhat += dy[at] * (x[at] - mean) * invstd;
  }
  BlockSum2(sum_dy, sum_dy_xhat);
  if (threadIdx.x == 0) {
    if (dscale != nullptr) dscale[ch] = sum_dy_xhat;
    if (dbias != nullptr) dbias[ch] = sum_dy;
  }
  if (dx == nullptr) return;
  const float g = scale != nullptr ? scale[ch] : 1.0f;
  const float inv_count = 1.0f / static_cast<float>(count);
  // dx = g * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const int64_t at = ((j / spatial) * c + ch) * spatial + j % spatial;
    const float xhat = (x[at] - mean) * invstd;
    dx[at] = g * invstd * (dy[at] - sum_dy * inv_count - xhat * sum_dy_xhat * inv_count);
  }
}

__global__ void RunningUpdateKernel(const float* mean, const float* invstd, float epsilon,
                                    float unbias, float momentum, const float* in_mean,
                                    const float* in_var, float* out_mean, float* out_var,
                                    int64_t c) {
  for (const int64_t i : GridStride(c)) {
    const float var = (1.0f / (invstd[i] * invstd[i]) - epsilon) * unbias;
    if (out_mean != nullptr) out_mean[i] = momentum * in_mean[i] + (1.0f - momentum) * mean[i];
    if (out_var != nullptr) out_var[i] = momentum * in_var[i] + (1.0f - momentum) * var;
  }
}

}  // namespace

Status BatchNormRunningUpdate(const float* mean, const float* invstd, float epsilon, int64_t count,
                              float momentum, const float* in_mean, const float* in_var,
                              float* out_mean, float* out_var, int64_t c, cudaStream_t stream) {
  if (c == 0) return OkStatus();
  const float unbias = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  RunningUpdateKernel<<<BlocksFor(c), kThreadsPerBlock, 0, stream>>>(
      mean, invstd, epsilon, unbias, momentum, in_mean, in_var, out_mean, out_var, c);
  return CheckLaunch("RunningUpdateKernel");
}

Status Im2Col(const float* x, const Window2d& w, int64_t images, float* col, cudaStream_t stream) {
  const int64_t n = images * w.col_rows() * w.col_cols();
  if (n == 0) return OkStatus();
  Im2ColKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      x, w, w.out_w(), w.col_rows(), w.col_cols(), w.channels * w.in_h * w.in_w, n, col);
  return CheckLaunch("Im2ColKernel");
}

Status Col2ImAdd(const float* col, const Window2d& w, int64_t images, float* dx,
                 cudaStream_t stream) {
  const int64_t n = images * w.col_rows() * w.col_cols();
  if (n == 0) return OkStatus();
  Col2ImKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      col, w, w.out_w(), w.col_rows(), w.col_cols(), w.channels * w.in_h * w.in_w, n, dx);
  return CheckLaunch("Col2ImKernel");
}

Status MaxPoolForward(const float* x, const Window2d& w, int64_t planes, float* y, float* argmax,
                      cudaStream_t stream) {
  const int64_t n = planes * w.out_h() * w.out_w();
  if (n == 0) return OkStatus();
  MaxPoolKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, w, w.out_h(), w.out_w(), n, y,
                                                               argmax);
  return CheckLaunch("MaxPoolKernel");
}

Status MaxPoolBackward(const float* dy, const float* argmax, const Window2d& w, int64_t planes,
                       float* dx, cudaStream_t stream) {
  const int64_t out_plane = w.out_h() * w.out_w();
  const int64_t n = planes * out_plane;
  if (n == 0) return OkStatus();
  MaxPoolBackwardKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(dy, argmax, w.in_h * w.in_w,
                                                                       out_plane, n, dx);
  return CheckLaunch("MaxPoolBackwardKernel");
}

Status BatchNormForward(const float* x, const float* scale, const float* bias, float epsilon,
                        int64_t n, int64_t c, int64_t spatial, float* y, float* mean, float* invstd,
                        cudaStream_t stream) {
  if (c == 0) return OkStatus();
  BatchNormForwardKernel<<<static_cast<unsigned>(c), kThreadsPerBlock, 0, stream>>>(
      x, scale, bias, epsilon, n, c, spatial, y, mean, invstd);
  return CheckLaunch("BatchNormForwardKernel");
}

Status BatchNormBackward(const float* x, const float* scale, const float* mean, const float* invstd,
                         const float* dy, int64_t n, int64_t c, int64_t spatial, float* dx,
                         float* dscale, float* dbias, cudaStream_t stream) {
  if (c == 0) return OkStatus();
  BatchNormBackwardKernel<<<static_cast<unsigned>(c), kThreadsPerBlock, 0, stream>>>(
      x, scale, mean, invstd, dy, n, c, spatial, dx, dscale, dbias);
  return CheckLaunch("BatchNormBackwardKernel");
}

}  // namespace memplan::cuda
