#pragma once
// Convolution by implicit GEMM (im2col + cuBLAS), max pooling and batch normalization, for 2-D
// NCHW tensors in fp32. The window arithmetic is plain C++ (Window2d, tested on CPU).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/attributes.h"
#include "graph/expected.h"

namespace memplan::cuda {

// One 2-D sliding window over one image plane (ONNX Conv/MaxPool attributes, pads as
// top, left, bottom, right, auto_pad already resolved into them by the shared window geometry,
// graph/ops/geometry/window.h).
struct Window2d {
  int64_t channels = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  bool ceil_mode = false;

  // Output sizes by the shared geometry's rule (0 when the window does not fit).
  int64_t out_h() const;
  int64_t out_w() const;
  // Rows of the im2col matrix (channels * kernel_h * kernel_w); columns are out_h * out_w.
  int64_t col_rows() const { return channels * kernel_h * kernel_w; }
  int64_t col_cols() const { return out_h() * out_w(); }
  // The input element (-1 when it falls in the padding) that im2col entry (row, col) reads,
  // as an offset within one image of `channels` planes.
  int64_t SourceOffset(int64_t row, int64_t col) const;
};

// The window of `op` (Conv: read_ceil_mode false; MaxPool: true) over NCHW `x` with a 2-D
// `kernel`, resolved by the shared window geometry (graph/ops/geometry/window.h): auto_pad
// becomes explicit pads. Errors name `op`: bad attributes, a window that does not fit, overflow.
Expected<Window2d> MakeWindow2d(std::string_view op, const Attributes& attributes,
                                const std::vector<int64_t>& x, const std::vector<int64_t>& kernel,
                                bool read_ceil_mode);

// col [images][col_rows][col_cols] from x [images][channels][in_h][in_w].
Status Im2Col(const float* x, const Window2d& w, int64_t images, float* col, cudaStream_t stream);
// dx [images][channels][in_h][in_w] += the col entries folded back (atomics; dx zeroed by the
// caller when it is not accumulating).
Status Col2ImAdd(const float* col, const Window2d& w, int64_t images, float* dx,
                 cudaStream_t stream);

// Max pooling of x [planes][in_h][in_w] into y [planes][out_h][out_w]; `argmax` (fp32 holding the
// index within the plane) when not null. Padding never wins.
Status MaxPoolForward(const float* x, const Window2d& w, int64_t planes, float* y, float* argmax,
                      cudaStream_t stream);
// dx (zeroed by the caller) += dy routed to the argmax.
Status MaxPoolBackward(const float* dy, const float* argmax, const Window2d& w, int64_t planes,
                       float* dx, cudaStream_t stream);

// Training batch norm of x [n][c][spatial]: per-channel batch mean and invstd = 1/sqrt(var+eps)
// (biased variance) written to mean/invstd [c], y = (x - mean) * invstd * scale + bias.
Status BatchNormForward(const float* x, const float* scale, const float* bias, float epsilon,
                        int64_t n, int64_t c, int64_t spatial, float* y, float* mean, float* invstd,
                        cudaStream_t stream);
// dx, dscale, dbias (each overwritten, any may be null).
Status BatchNormBackward(const float* x, const float* scale, const float* mean, const float* invstd,
                         const float* dy, int64_t n, int64_t c, int64_t spatial, float* dx,
                         float* dscale, float* dbias, cudaStream_t stream);

// ONNX training-mode running statistics from the batch statistics of BatchNormForward:
// out_mean = momentum * in_mean + (1 - momentum) * mean, out_var likewise with the unbiased batch
// variance (count / (count - 1) * (1/invstd^2 - epsilon)), as PyTorch does.
Status BatchNormRunningUpdate(const float* mean, const float* invstd, float epsilon, int64_t count,
                              float momentum, const float* in_mean, const float* in_var,
                              float* out_mean, float* out_var, int64_t c, cudaStream_t stream);

}  // namespace memplan::cuda
