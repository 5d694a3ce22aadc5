#include "graph/ops/geometry/window.h"
#include "runtime/cuda/kernels/conv_kernels.h"

namespace memplan::cuda {

int64_t Window2d::out_h() const {
  return PaddedWindowOutput(in_h, kernel_h, stride_h, dilation_h, pad_top, pad_bottom, ceil_mode)
      .value_or(0);
}

int64_t Window2d::out_w() const {
  return PaddedWindowOutput(in_w, kernel_w, stride_w, dilation_w, pad_left, pad_right, ceil_mode)
      .value_or(0);
}

int64_t Window2d::SourceOffset(int64_t row, int64_t col) const {
  const int64_t kw = row % kernel_w;
  const int64_t kh = (row / kernel_w) % kernel_h;
  const int64_t ch = row / (kernel_w * kernel_h);
  const int64_t ow = col % out_w();
  const int64_t oh = col / out_w();
  const int64_t ih = oh * stride_h - pad_top + kh * dilation_h;
  const int64_t iw = ow * stride_w - pad_left + kw * dilation_w;
  if (ih < 0 || ih >= in_h || iw < 0 || iw >= in_w) return -1;
  return (ch * in_h + ih) * in_w + iw;
}

}  // namespace memplan::cuda
