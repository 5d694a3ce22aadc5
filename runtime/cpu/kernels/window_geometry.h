#pragma once
// Sliding-window geometry shared by Conv and the pooling ops: ONNX attributes (kernel_shape,
// strides, dilations, pads, auto_pad, ceil_mode) resolved against a concrete input. 1-D windows
// are lifted to 2-D with a height of 1, so the kernels have one 2-D loop nest.

#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/attributes.h"
#include "graph/expected.h"
#include "runtime/tensor.h"

namespace memplan {

struct WindowAxis {
  int64_t input = 1;
  int64_t output = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;

  // Input coordinate of output position `out` and kernel tap `tap` (may fall in the padding).
  int64_t InputIndex(int64_t out, int64_t tap) const {
    return out * stride - pad_begin + tap * dilation;
  }
  // Half-open range [first, last) of output positions whose tap `tap` lands inside the input.
  struct Range {
    int64_t first;
    int64_t last;
  };
  Range ValidOutputs(int64_t tap) const;
};

struct WindowGeometry {
  int64_t batch = 0;
  int64_t channels = 0;
  int64_t spatial_rank = 2;  // 1 or 2 as given; the axes below are always 2-D
  WindowAxis h;
  WindowAxis w;

  // The output shape [N, C_out, spatial...] in the input's spatial rank.
  TensorShape OutputShape(int64_t out_channels) const;
};

// `input` is [N, C, spatial...] with 1 or 2 spatial dims; `kernel` is the window's spatial size
// (from kernel_shape or the weight). ceil_mode is read only when `allow_ceil_mode`.
Expected<WindowGeometry> ComputeWindowGeometry(std::string_view op, const Attributes& attributes,
                                               const TensorShape& input,
                                               const std::vector<int64_t>& kernel,
                                               bool allow_ceil_mode);

}  // namespace memplan
