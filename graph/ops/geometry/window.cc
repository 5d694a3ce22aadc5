#include "graph/ops/geometry/window.h"

#include <algorithm>

#include "graph/checked_math.h"

namespace memplan {
namespace {

// Floor and ceil of a / b for b > 0 and any sign of a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? a / b + (a % b != 0) : -(-a / b); }

std::optional<AutoPad> ParseAutoPad(const std::string& text) {
  if (text == "NOTSET") return AutoPad::kNotSet;
  if (text == "VALID") return AutoPad::kValid;
  if (text == "SAME_UPPER") return AutoPad::kSameUpper;
  if (text == "SAME_LOWER") return AutoPad::kSameLower;
  return std::nullopt;
}

// dilation * (kernel - 1) + 1, or nullopt on overflow.
std::optional<int64_t> Span(int64_t kernel, int64_t dilation) {
  auto scaled = CheckedMul(dilation, kernel - 1);
  return scaled ? CheckedAdd(*scaled, 1) : std::nullopt;
}

Error Overflow(size_t axis) {
  return Error{"window sizes of spatial axis " + std::to_string(axis) + " overflow int64"};
}

}  // namespace

Expected<WindowAttributes> ReadWindowAttributes(const Attributes& attributes, size_t spatial_rank,
                                                std::vector<int64_t> kernel, bool read_ceil_mode) {
  WindowAttributes w;
  w.kernel = attributes.GetInts("kernel_shape", std::move(kernel));
  w.strides = attributes.GetInts("strides", std::vector<int64_t>(spatial_rank, 1));
  w.dilations = attributes.GetInts("dilations", std::vector<int64_t>(spatial_rank, 1));
  w.pads = attributes.GetInts("pads", std::vector<int64_t>(2 * spatial_rank, 0));
  w.ceil_mode = read_ceil_mode && attributes.GetInt("ceil_mode", 0) != 0;

  auto wrong_length = [&](const char* name, size_t got, size_t want) {
    return MakeError(std::string(name) + " has " + std::to_string(got) +
                     " values but the input has " + std::to_string(spatial_rank) +
                     " spatial axes (expected " + std::to_string(want) + ")");
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
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0)
      return MakeError("kernel_shape, strides and dilations must be positive");
  }
  for (int64_t p : w.pads) {
    if (p < 0) return MakeError("pads must not be negative");
  }
  const std::string auto_pad = attributes.GetString("auto_pad", "NOTSET");
  std::optional<AutoPad> parsed = ParseAutoPad(auto_pad);
  if (!parsed) return MakeError("unknown auto_pad '" + auto_pad + "'");
  w.auto_pad = *parsed;
  // VALID means no padding; SAME_* derive the padding from the output size.
  if (w.auto_pad != AutoPad::kNotSet) std::fill(w.pads.begin(), w.pads.end(), 0);
  return w;
}

WindowAxis::Range WindowAxis::ValidOutputs(int64_t tap) const {
  // 0 <= out * stride - pad_begin + tap * dilation < input
  const int64_t offset = pad_begin - tap * dilation;
  const int64_t first = std::max<int64_t>(0, CeilDiv(offset, stride));
  const int64_t last = std::min<int64_t>(output, FloorDiv(input - 1 + offset, stride) + 1);
  return {first, std::max(first, last)};
}

std::optional<int64_t> PaddedWindowOutput(int64_t input, int64_t kernel, int64_t stride,
                                          int64_t dilation, int64_t pad_begin, int64_t pad_end,
                                          bool ceil_mode) {
  std::optional<int64_t> span = Span(kernel, dilation);
  std::optional<int64_t> padded = CheckedAdd(input, pad_begin);
  if (padded) padded = CheckedAdd(*padded, pad_end);
  if (!span || !padded) return std::nullopt;
  const int64_t room = *padded - *span;  // both non-negative: cannot overflow
  int64_t out = (ceil_mode ? CeilDiv(room, stride) : FloorDiv(room, stride)) + 1;
  // With ceil_mode the last window must start inside the input or its leading padding.
  if (ceil_mode && room >= 0) {
    std::optional<int64_t> last_start = CheckedMul(out - 1, stride);
    if (!last_start || *last_start >= input + pad_begin) --out;
  }
  return out;
}

Expected<WindowAxis> ResolveWindowAxis(const WindowAttributes& window, size_t axis, int64_t input) {
  WindowAxis a;
  a.input = input;
  a.kernel = window.kernel[axis];
  a.stride = window.strides[axis];
  a.dilation = window.dilations[axis];
  std::optional<int64_t> span = Span(a.kernel, a.dilation);
  if (!span) return Overflow(axis);
  if (window.same_padding()) {
    a.output = CeilDiv(input, a.stride);
    std::optional<int64_t> reach = CheckedMul(a.output - 1, a.stride);
    if (reach) reach = CheckedAdd(*reach, *span);
    if (!reach) return Overflow(axis);
    const int64_t total = std::max<int64_t>(0, *reach - input);
    const int64_t half = total / 2;
    a.pad_begin = window.auto_pad == AutoPad::kSameUpper ? half : total - half;
    a.pad_end = total - a.pad_begin;
  } else {
    a.pad_begin = window.pad_begin(axis);
    a.pad_end = window.pad_end(axis);
    std::optional<int64_t> out = PaddedWindowOutput(input, a.kernel, a.stride, a.dilation,
                                                    a.pad_begin, a.pad_end, window.ceil_mode);
    if (!out) return Overflow(axis);
    a.output = *out;
  }
  if (a.output <= 0 || input + a.pad_begin + a.pad_end < *span) {
    return MakeError("a window of span " + std::to_string(*span) + " does not fit spatial axis " +
                     std::to_string(axis) + " of size " + std::to_string(input) + " padded by " +
                     std::to_string(a.pad_begin) + " + " + std::to_string(a.pad_end));
  }
  return a;
}

Expected<std::optional<Dim>> WindowOutputDim(const Dim& in, const WindowAttributes& window,
                                             size_t axis) {
  if (auto c = in.constant_value()) {
    MEMPLAN_TRY(WindowAxis resolved, ResolveWindowAxis(window, axis, *c));
    return std::optional<Dim>(Dim(resolved.output));
  }
  const int64_t stride = window.strides[axis];
  if (window.same_padding()) return stride == 1 ? std::optional<Dim>(in) : std::nullopt;
  std::optional<int64_t> span = Span(window.kernel[axis], window.dilations[axis]);
  std::optional<int64_t> pads = CheckedAdd(window.pad_begin(axis), window.pad_end(axis));
  if (!span || !pads) return Overflow(axis);
  // Dim arithmetic is itself checked: an overflow poisons the Dim and is reported when bound.
  Dim room = in + Dim(*pads) - Dim(*span);
  if (stride == 1) return std::optional<Dim>(room + Dim(1));
  if (auto exact = room.DivideExactly(Dim(stride))) return std::optional<Dim>(*exact + Dim(1));
  return std::optional<Dim>();
}

Dim TransposedWindowOutputDim(const Dim& in, const WindowAttributes& window, size_t axis,
                              int64_t output_padding) {
  const int64_t stride = window.strides[axis];
  if (window.same_padding()) return in * Dim(stride);
  const Dim span = Dim(window.dilations[axis]) * Dim(window.kernel[axis] - 1) + Dim(1);
  return Dim(stride) * (in - Dim(1)) + Dim(output_padding) + span - Dim(window.pad_begin(axis)) -
         Dim(window.pad_end(axis));
}

}  // namespace memplan
