#pragma once
// Sliding-window geometry shared by Conv, ConvTranspose, MaxPool and AveragePool: reading
// kernel_shape/strides/dilations/pads/auto_pad and computing output spatial sizes over symbolic
// input sizes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/dim.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

struct WindowAttributes {
  std::vector<int64_t> kernel;      // one per spatial axis
  std::vector<int64_t> strides;     // default 1
  std::vector<int64_t> dilations;   // default 1
  std::vector<int64_t> pads;        // [x1_begin, x2_begin, ..., x1_end, x2_end, ...], default 0
  std::string auto_pad = "NOTSET";  // NOTSET, VALID, SAME_UPPER, SAME_LOWER
  bool ceil_mode = false;

  size_t spatial_rank() const { return kernel.size(); }
  int64_t pad_begin(size_t axis) const { return pads[axis]; }
  int64_t pad_end(size_t axis) const { return pads[axis + kernel.size()]; }
};

// Reads the window attributes of `node` for `spatial_rank` axes. `kernel` is the kernel size
// (Conv: the weight's spatial dims when kernel_shape is absent). Errors name the node: lists of
// the wrong length, non-positive strides/dilations/kernels, negative pads, unknown auto_pad.
Expected<WindowAttributes> ReadWindowAttributes(const Node& node, size_t spatial_rank,
                                                std::vector<int64_t> kernel);

// Output size of one axis of a convolution/pooling window:
//   NOTSET/VALID: floor_or_ceil((in + pad_begin + pad_end - dilation*(kernel-1) - 1) / stride) + 1
//                 with ceil_mode's rule that the last window must start inside the input or the
//                 left padding (PyTorch pooling_output_shape, ONNX opset >= 19);
//   SAME_*:       ceil(in / stride).
// Exact for constant sizes, and for symbolic sizes whenever the division is exact in the
// polynomial ring (stride 1 always is). nullopt otherwise (the caller makes a fresh symbol).
std::optional<Dim> WindowOutputDim(const Dim& in, const WindowAttributes& window, size_t axis);

// Output size of one axis of ConvTranspose without output_shape:
//   NOTSET/VALID: stride*(in-1) + output_padding + dilation*(kernel-1) + 1 - pad_begin - pad_end
//   SAME_*:       in * stride.
Dim TransposedWindowOutputDim(const Dim& in, const WindowAttributes& window, size_t axis,
                              int64_t output_padding);

}  // namespace memplan
