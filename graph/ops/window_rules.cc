#include "graph/ops/window_rules.h"

#include <algorithm>

#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }

}  // namespace

Expected<WindowAttributes> ReadWindowAttributes(const Node& node, size_t spatial_rank,
                                                std::vector<int64_t> kernel) {
  const Attributes& attrs = node.attributes;
  WindowAttributes w;
  w.kernel = attrs.GetInts("kernel_shape", std::move(kernel));
  w.strides = attrs.GetInts("strides", std::vector<int64_t>(spatial_rank, 1));
  w.dilations = attrs.GetInts("dilations", std::vector<int64_t>(spatial_rank, 1));
  w.pads = attrs.GetInts("pads", std::vector<int64_t>(2 * spatial_rank, 0));
  w.auto_pad = attrs.GetString("auto_pad", "NOTSET");
  w.ceil_mode = attrs.GetInt("ceil_mode", 0) != 0;

  auto wrong_length = [&](const char* name, size_t got, size_t want) {
    return MakeError(NodeError(node, std::string(name) + " has " + std::to_string(got) +
                                         " values but the input has " +
                                         std::to_string(spatial_rank) + " spatial axes (expected " +
                                         std::to_string(want) + ")"));
  };
  if (w.kernel.size() != spatial_rank)
    return wrong_length("kernel_shape", w.kernel.size(), spatial_rank);
  if (w.strides.size() != spatial_rank)
    return wrong_length("strides", w.strides.size(), spatial_rank);
  if (w.dilations.size() != spatial_rank)
    return wrong_length("dilations", w.dilations.size(), spatial_rank);
  if (w.pads.size() != 2 * spatial_rank)
    return wrong_length("pads", w.pads.size(), 2 * spatial_rank);
  for (size_t i = 0; i < spatial_rank; ++i) {
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0) {
      return MakeError(NodeError(node, "kernel_shape, strides and dilations must be positive"));
    }
  }
  for (int64_t p : w.pads) {
    if (p < 0) return MakeError(NodeError(node, "pads must not be negative"));
  }
  if (w.auto_pad != "NOTSET" && w.auto_pad != "VALID" && w.auto_pad != "SAME_UPPER" &&
      w.auto_pad != "SAME_LOWER") {
    return MakeError(NodeError(node, "unknown auto_pad '" + w.auto_pad + "'"));
  }
  // VALID means no padding; SAME_* derive the padding from the output size.
  if (w.auto_pad != "NOTSET") std::fill(w.pads.begin(), w.pads.end(), 0);
  return w;
}

std::optional<Dim> WindowOutputDim(const Dim& in, const WindowAttributes& w, size_t axis) {
  int64_t stride = w.strides[axis];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    if (auto c = in.constant_value()) return Dim(CeilDiv(*c, stride));
    return stride == 1 ? std::optional<Dim>(in) : std::nullopt;
  }
  int64_t effective_kernel = w.dilations[axis] * (w.kernel[axis] - 1) + 1;
  int64_t pad_begin = w.pad_begin(axis);
  Dim span = in + Dim(pad_begin + w.pad_end(axis) - effective_kernel);
  if (auto c = span.constant_value()) {
    int64_t out = (w.ceil_mode ? CeilDiv(*c, stride) : FloorDiv(*c, stride)) + 1;
    // PyTorch/ONNX: with ceil_mode the last window must start inside the input or left padding.
    auto in_c = in.constant_value();
    if (w.ceil_mode && in_c && (out - 1) * stride >= *in_c + pad_begin) --out;
    return Dim(out);
  }
  if (stride == 1) return span + Dim(1);
  if (auto exact = span.DivideExactly(Dim(stride))) return *exact + Dim(1);
  return std::nullopt;
}

Dim TransposedWindowOutputDim(const Dim& in, const WindowAttributes& w, size_t axis,
                              int64_t output_padding) {
  int64_t stride = w.strides[axis];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return in * Dim(stride);
  int64_t effective_kernel = w.dilations[axis] * (w.kernel[axis] - 1) + 1;
  return Dim(stride) * (in - Dim(1)) +
         Dim(output_padding + effective_kernel - w.pad_begin(axis) - w.pad_end(axis));
}

}  // namespace memplan
