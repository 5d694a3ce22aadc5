// Pad (pads as an attribute before opset 11, as input 1 after; optional axes input since 18)
// and Resize (output from the `sizes` input when it folds, or from `scales` known at import).
// Pad moves data only (0 FLOPs); Resize costs
// kResize*FlopsPerElement per output element depending on the interpolation mode.

#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

// Interpolation taps per output element: nearest reads one input, (bi)linear ~4 weighted
// reads, cubic ~16.
constexpr int64_t kResizeNearestFlopsPerElement = 1;
constexpr int64_t kResizeLinearFlopsPerElement = 4;
constexpr int64_t kResizeCubicFlopsPerElement = 16;

// The axes a pads/sizes list applies to: the `axes` attribute (Resize-18), input `axes_input`
// (Pad-18) when present, else all. nullopt when the axes input does not fold.
Expected<std::optional<std::vector<int64_t>>> ReadAxes(const OpContext& ctx,
                                                       std::optional<size_t> axes_input,
                                                       size_t rank) {
  std::vector<int64_t> axes;
  if (ctx.attrs().Has("axes")) {
    axes = ctx.attrs().GetInts("axes");
  } else if (axes_input && ctx.has_input(*axes_input)) {
    auto folded = ConstantInts(ctx.inputs[*axes_input]);
    if (!folded) return std::optional<std::vector<int64_t>>{};
    axes = *folded;
  } else {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& a : axes) {
    MEMPLAN_TRY(a, NormalizeAxis(a, rank, ctx.node));
  }
  return std::optional<std::vector<int64_t>>{axes};
}

// The error when a per-axis list (pads, scales, sizes) has the wrong number of values for its
// axes; `expectation` adds how many were due where that is not one per axis.
std::string AxesCountError(const OpContext& ctx, const std::string& list, size_t values,
                           size_t axes, const std::string& expectation = "") {
  return NodeError(ctx.node, list + " has " + std::to_string(values) + " values for " +
                                 std::to_string(axes) + " axes" + expectation);
}

// `shape` with the dim at each of `axes` replaced by resize(i, dim), i the axis's place in `axes`
// (the index into a pads, scales or sizes list); nullopt as soon as resize gives nullopt.
std::optional<Shape> ResizeAxes(
    Shape shape, const std::vector<int64_t>& axes,
    const std::function<std::optional<Dim>(size_t i, const Dim& dim)>& resize) {
  for (size_t i = 0; i < axes.size(); ++i) {
    Dim& d = shape.dims[static_cast<size_t>(axes[i])];
    std::optional<Dim> resized = resize(i, d);
    if (!resized) return std::nullopt;
    d = *resized;
  }
  return shape;
}

Expected<std::vector<TensorInfo>> PadShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputInInput0DType(ctx));
  const TensorInfo& x = ctx.inputs[0];
  if (outs.empty() || !x.shape.known) return outs;
  std::vector<Dim> pads;
  if (ctx.attrs().Has("pads")) {
    for (int64_t p : ctx.attrs().GetInts("pads")) pads.push_back(Dim(p));
  } else if (ctx.has_input(1) && ctx.inputs[1].contents) {
    pads = *ctx.inputs[1].contents;  // may be symbolic (pads computed from Shape)
  } else {
    return outs;
  }
  MEMPLAN_TRY(auto axes, ReadAxes(ctx, /*axes_input=*/3, x.shape.rank()));
  if (!axes) return outs;
  if (pads.size() != 2 * axes->size()) {
    return MakeError(
        AxesCountError(ctx, "pads", pads.size(), axes->size(), " (expected twice as many)"));
  }
  // pads lists every axis's begin, then every axis's end.
  std::optional<Shape> y =
      ResizeAxes(x.shape, *axes, [&](size_t i, const Dim& d) -> std::optional<Dim> {
        Dim padded = d + pads[i] + pads[i + axes->size()];
        if (auto c = padded.constant_value(); c && *c < 0) return std::nullopt;
        return padded;
      });
  if (!y) return MakeError(NodeError(ctx.node, "padding makes a dimension negative"));
  outs[0].shape = *std::move(y);
  return outs;
}

// constant_pad_nd: constant_pad_nd_backward(grad, pad) keeps no tensor; reflection_pad*d and
// replication_pad*d (ONNX "reflect"/"edge") keep self; circular padding ("wrap") is built from
// slices and copies, which keep none.
std::vector<SavedTensor> PadSaved(const OpContext& ctx) {
  std::string mode = ctx.attrs().GetString("mode", "constant");
  if (mode == "reflect" || mode == "edge") return {SaveInput(0)};
  return {};
}

OpSchema PadSchema() {
  return WindowedSchema(
      "Pad", PadShape, [](const OpContext& ctx) { return IoCost(ctx, /*flops=*/0); },
      "constant_pad_nd saves nothing; reflection_pad{1,2,3}d and replication_pad{1,2,3}d save self",
      WhenDifferentiable(PadSaved), GradientOnlyForFloatingInput0());
}

std::string FormatScale(double scale) {
  std::ostringstream out;
  out << scale;
  return out.str();
}

// One resized dim from a scale: floor(d * scale), as ONNX defines it. A symbolic d is scaled only
// by a whole number (F.interpolate's scale_factor=2), where the product is exact.
std::optional<Dim> ScaledDim(const Dim& d, double scale) {
  if (!(scale > 0.0) || scale > 1e9) return std::nullopt;
  if (auto c = d.constant_value())
    return Dim(static_cast<int64_t>(std::floor(static_cast<double>(*c) * scale)));
  if (scale != std::floor(scale)) return std::nullopt;
  return d * Dim(static_cast<int64_t>(scale));
}

// A scale that is not positive (0, negative, NaN) or that floors a known dim to nothing: torch's
// interpolate refuses both ("Input and output sizes should be greater than 0"), and the plan would
// hold an empty or negative tensor.
Status RefuseEmptyResize(const OpContext& ctx, const Shape& x, const std::vector<int64_t>& axes,
                         const std::vector<double>& scales) {
  for (size_t i = 0; i < scales.size(); ++i) {
    const std::string which = "scales[" + std::to_string(i) + "] ";
    if (!(scales[i] > 0.0) || !std::isfinite(scales[i])) {
      return MakeError(NodeError(ctx.node, which + "is " + FormatScale(scales[i]) +
                                               "; a scale must be positive and finite"));
    }
    const Dim& d = x.dims[static_cast<size_t>(axes[i])];
    if (auto c = d.constant_value();
        c && *c > 0 && std::floor(static_cast<double>(*c) * scales[i]) < 1.0) {
      return MakeError(NodeError(ctx.node, which + FormatScale(scales[i]) + " resizes axis " +
                                               std::to_string(axes[i]) + " of size " +
                                               std::to_string(*c) + " to nothing"));
    }
  }
  return OkStatus();
}

// Resize(X, roi?, scales?, sizes?) -> Y (opset 10: Resize(X, scales)). The output comes from a
// folded `sizes` input or from `scales` known at import (Value::float_values: torch writes
// F.interpolate's scale_factor as a Concat of two Constants, which ONNX's own inference does not
// follow).
Expected<std::vector<TensorInfo>> ResizeShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputInInput0DType(ctx));
  const TensorInfo& x = ctx.inputs[0];
  if (outs.empty() || !x.shape.known) return outs;
  MEMPLAN_TRY(auto axes, ReadAxes(ctx, /*axes_input=*/std::nullopt, x.shape.rank()));
  if (!axes) return outs;
  const size_t scales_input = ctx.inputs.size() == 2 ? 1 : 2;
  const bool has_sizes = ctx.inputs.size() > 2 && ctx.has_input(3) && ctx.inputs[3].contents &&
                         !ctx.inputs[3].contents->empty();
  if (!has_sizes && ctx.has_input(scales_input) && ctx.inputs[scales_input].float_values &&
      !ctx.inputs[scales_input].float_values->empty()) {
    const std::vector<double>& scales = *ctx.inputs[scales_input].float_values;
    if (scales.size() != axes->size()) {
      return MakeError(AxesCountError(ctx, "scales", scales.size(), axes->size()));
    }
    MEMPLAN_RETURN_IF_ERROR(RefuseEmptyResize(ctx, x.shape, *axes, scales));
    std::optional<Shape> y =
        ResizeAxes(x.shape, *axes, [&](size_t i, const Dim& d) { return ScaledDim(d, scales[i]); });
    if (y) outs[0].shape = *std::move(y);
    return outs;
  }
  if (!has_sizes) return outs;
  const std::vector<Dim>& sizes = *ctx.inputs[3].contents;
  if (sizes.size() != axes->size()) {
    return MakeError(AxesCountError(ctx, "sizes", sizes.size(), axes->size()));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (auto c = sizes[i].constant_value(); c && *c < 1) {
      return MakeError(NodeError(ctx.node, "sizes[" + std::to_string(i) + "] is " +
                                               std::to_string(*c) +
                                               "; an output size must be positive"));
    }
  }
  outs[0].shape = *ResizeAxes(x.shape, *axes,
                              [&](size_t i, const Dim&) { return std::optional<Dim>(sizes[i]); });
  return outs;
}

OpCost ResizeCost(const OpContext& ctx) {
  std::string mode = ctx.attrs().GetString("mode", "nearest");
  int64_t per = mode == "linear"  ? kResizeLinearFlopsPerElement
                : mode == "cubic" ? kResizeCubicFlopsPerElement
                                  : kResizeNearestFlopsPerElement;
  return PerOutputElementCost(ctx, per);
}

OpSchema ResizeSchema() {
  return WindowedSchema("Resize", ResizeShape, ResizeCost,
                        "upsample_nearest*/upsample_(bi|tri)linear*/upsample_bicubic2d backward "
                        "takes output_size and self.sym_sizes() only: no tensor saved",
                        /*saved=*/nullptr, GradientOnlyForFloatingInput0());
}

}  // namespace

void RegisterResamplingOps(OpRegistry& registry) {
  registry.Register(PadSchema());
  registry.Register(ResizeSchema());
}

}  // namespace memplan
