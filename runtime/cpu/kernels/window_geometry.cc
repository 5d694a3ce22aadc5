#include "runtime/cpu/kernels/window_geometry.h"

#include <algorithm>
#include <string>

namespace memplan {
namespace {

// Floor and ceil of a / b for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

}  // namespace

WindowAxis::Range WindowAxis::ValidOutputs(int64_t tap) const {
  // 0 <= out * stride - pad_begin + tap * dilation < input
  const int64_t offset = pad_begin - tap * dilation;
  const int64_t first = std::max<int64_t>(0, CeilDiv(offset, stride));
  const int64_t last = std::min<int64_t>(output, FloorDiv(input - 1 + offset, stride) + 1);
  return {first, std::max(first, last)};
}

TensorShape WindowGeometry::OutputShape(int64_t out_channels) const {
  if (spatial_rank == 1) return {batch, out_channels, w.output};
  return {batch, out_channels, h.output, w.output};
}

Expected<WindowGeometry> ComputeWindowGeometry(std::string_view op, const Attributes& attributes,
                                               const TensorShape& input,
                                               const std::vector<int64_t>& kernel,
                                               bool allow_ceil_mode) {
  const std::string name(op);
  if (input.size() != 3 && input.size() != 4) {
    return MakeError(name + ": only 1-D and 2-D windows are supported, input is " +
                     ShapeToString(input));
  }
  const size_t rank = input.size() - 2;
  if (kernel.size() != rank) {
    return MakeError(name + ": kernel has " + std::to_string(kernel.size()) +
                     " dims for an input of spatial rank " + std::to_string(rank));
  }
  const std::vector<int64_t> strides = attributes.GetInts("strides", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> dilations =
      attributes.GetInts("dilations", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> pads = attributes.GetInts("pads", std::vector<int64_t>(2 * rank, 0));
  const std::string auto_pad = attributes.GetString("auto_pad", "NOTSET");
  const bool ceil_mode = allow_ceil_mode && attributes.GetInt("ceil_mode", 0) != 0;
  if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank) {
    return MakeError(name + ": strides/dilations/pads do not match spatial rank " +
                     std::to_string(rank));
  }

  WindowGeometry g;
  g.batch = input[0];
  g.channels = input[1];
  g.spatial_rank = static_cast<int64_t>(rank);
  for (size_t i = 0; i < rank; ++i) {
    // The last spatial axis is always w; a 2-D window's first axis is h.
    WindowAxis& axis = (i + 1 == rank) ? g.w : g.h;
    axis.input = input[2 + i];
    axis.kernel = kernel[i];
    axis.stride = strides[i];
    axis.dilation = dilations[i];
    if (axis.kernel <= 0 || axis.stride <= 0 || axis.dilation <= 0) {
      return MakeError(name + ": kernel, stride and dilation must be positive");
    }
    const int64_t span = axis.dilation * (axis.kernel - 1) + 1;
    if (auto_pad == "NOTSET" || auto_pad == "VALID") {
      if (auto_pad == "NOTSET") {
        axis.pad_begin = pads[i];
        axis.pad_end = pads[i + rank];
      }
      const int64_t room = axis.input + axis.pad_begin + axis.pad_end - span;
      if (room < 0) {
        return MakeError(name + ": window of span " + std::to_string(span) +
                         " does not fit input " + ShapeToString(input));
      }
      axis.output = (ceil_mode ? CeilDiv(room, axis.stride) : room / axis.stride) + 1;
      // PyTorch's rule: the last window must start inside the input or its leading padding.
      if (ceil_mode && (axis.output - 1) * axis.stride >= axis.input + axis.pad_begin) {
        --axis.output;
      }
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      axis.output = CeilDiv(axis.input, axis.stride);
      const int64_t total =
          std::max<int64_t>(0, (axis.output - 1) * axis.stride + span - axis.input);
      const int64_t small = total / 2;
      axis.pad_begin = auto_pad == "SAME_UPPER" ? small : total - small;
      axis.pad_end = total - axis.pad_begin;
    } else {
      return MakeError(name + ": unknown auto_pad '" + auto_pad + "'");
    }
  }
  return g;
}

}  // namespace memplan
