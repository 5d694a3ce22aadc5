#pragma once
// Sliding-window geometry of Conv, ConvTranspose, MaxPool and AveragePool: the one place that
// reads kernel_shape/strides/dilations/pads/auto_pad/ceil_mode and turns them into output sizes
// and padding. The registry's shape rules (symbolic sizes), the CPU kernels and the CUDA ops
// (concrete sizes) all call it, as ONNX Runtime's ConvAttributes serves its CPU and CUDA kernels.
//
// Per axis, with span = dilation * (kernel - 1) + 1:
//   NOTSET: out = floor_or_ceil((in + pad_begin + pad_end - span) / stride) + 1
//   VALID:  the same with zero pads
//   SAME_*: out = ceil(in / stride); total = max(0, (out - 1) * stride + span - in) split in two
//           halves, the odd one at the end (SAME_UPPER) or at the beginning (SAME_LOWER).
// With ceil_mode the last window must start inside the input or its leading padding (PyTorch's
// pooling_output_shape, ONNX opset >= 19).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/attributes.h"
#include "graph/dim.h"
#include "graph/expected.h"

namespace memplan {

enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };

struct WindowAttributes {
  std::vector<int64_t> kernel;     // one per spatial axis, positive
  std::vector<int64_t> strides;    // positive, default 1
  std::vector<int64_t> dilations;  // positive, default 1
  // [x1_begin, x2_begin, ..., x1_end, x2_end, ...], non-negative, default 0; all 0 unless NOTSET
  // (VALID and SAME_* derive their padding).
  std::vector<int64_t> pads;
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;

  size_t spatial_rank() const { return kernel.size(); }
  int64_t pad_begin(size_t axis) const { return pads[axis]; }
  int64_t pad_end(size_t axis) const { return pads[axis + kernel.size()]; }
  bool same_padding() const {
    return auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower;
  }
};

// Reads the window attributes for `spatial_rank` axes. `kernel` is the kernel size used when
// kernel_shape is absent (Conv: the weight's spatial dims). ceil_mode is read only when
// `read_ceil_mode` (Conv has none). Errors say what is wrong without naming the node (callers
// prefix it): lists of the wrong length, non-positive kernels/strides/dilations, negative pads,
// an unknown auto_pad.
Expected<WindowAttributes> ReadWindowAttributes(const Attributes& attributes, size_t spatial_rank,
                                                std::vector<int64_t> kernel, bool read_ceil_mode);

// One spatial axis resolved against a concrete input size.
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

// Output size of one axis with explicit padding (the NOTSET formula above), or nullopt when an
// intermediate overflows int64. May be <= 0 when the window does not fit the padded input.
// REQUIRES: kernel, stride, dilation positive.
std::optional<int64_t> PaddedWindowOutput(int64_t input, int64_t kernel, int64_t stride,
                                          int64_t dilation, int64_t pad_begin, int64_t pad_end,
                                          bool ceil_mode);

// Resolves axis `axis` of `window` for an input of size `input` (SAME padding, output size).
// Errors: the window does not fit the padded input; a size overflows int64 (pads near 2^63).
Expected<WindowAxis> ResolveWindowAxis(const WindowAttributes& window, size_t axis, int64_t input);

// Output size of one axis over a symbolic input. Constant inputs go through ResolveWindowAxis
// (and its errors); symbolic ones are exact when the division is exact in the polynomial ring
// (stride 1 always is), nullopt otherwise (the caller makes a fresh symbol).
Expected<std::optional<Dim>> WindowOutputDim(const Dim& in, const WindowAttributes& window,
                                             size_t axis);

// Output size of one axis of ConvTranspose without output_shape:
//   NOTSET/VALID: stride*(in-1) + output_padding + dilation*(kernel-1) + 1 - pad_begin - pad_end
//   SAME_*:       in * stride.
Dim TransposedWindowOutputDim(const Dim& in, const WindowAttributes& window, size_t axis,
                              int64_t output_padding);

}  // namespace memplan
