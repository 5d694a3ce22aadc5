// Resize in the modes exporters write for F.interpolate and nn.Upsample: "nearest" (nearest_mode
// floor, ceil, round_prefer_floor, round_prefer_ceil) and "linear" (bilinear and its N-d kin),
// with coordinate_transformation_mode half_pixel, pytorch_half_pixel, align_corners or
// asymmetric; the output size from `sizes` or from `scales` (opset 10's second input, opset 11's
// third), optionally on `axes` (opset 18). Each axis maps every output coordinate to at most two
// input coordinates with weights, and the resize applies axis by axis (linear interpolation is
// separable; the weights sum as torch's upsample kernels weigh). Backward applies the transposed
// maps in reverse axis order: each output gradient goes back to the elements it read, as
// upsample_*_backward does. Not covered (an error naming it): cubic, tf_crop_and_resize (roi),
// half_pixel_symmetric, antialias, keep_aspect_ratio_policy other than stretch.

#include <cmath>
#include <string>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// What output coordinate o of one axis reads: inputs first[o] and second[o] with weights.
struct AxisMap {
  int64_t in = 1, out = 1;
  std::vector<int64_t> first, second;
  std::vector<float> first_weight, second_weight;
};

// The input coordinate (fractional) output coordinate `o` stands for.
Expected<double> SourceCoordinate(const std::string& transform, int64_t o, double scale, int64_t in,
                                  int64_t out) {
  const double x = static_cast<double>(o);
  if (transform == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (transform == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (transform == "align_corners")
    return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  if (transform == "asymmetric") return x / scale;
  return MakeError("Resize: coordinate_transformation_mode '" + transform +
                   "' is not supported by the CPU kernel");
}

int64_t NearestIndex(const std::string& rounding, double x) {
  if (rounding == "floor") return static_cast<int64_t>(std::floor(x));
  if (rounding == "ceil") return static_cast<int64_t>(std::ceil(x));
  const double down = std::floor(x);
  if (x - down == 0.5)
    return static_cast<int64_t>(rounding == "round_prefer_ceil" ? down + 1.0 : down);
  return static_cast<int64_t>(std::round(x));
}

Expected<AxisMap> MapAxis(const Attributes& attrs, int64_t in, int64_t out, double scale) {
  const std::string mode = attrs.GetString("mode", "nearest");
  const std::string transform = attrs.GetString("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = attrs.GetString("nearest_mode", "round_prefer_floor");
  AxisMap map;
  map.in = in;
  map.out = out;
  const auto clamp = [in](int64_t i) { return i < 0 ? 0 : (i >= in ? in - 1 : i); };
  for (int64_t o = 0; o < out; ++o) {
    MEMPLAN_TRY(double x, SourceCoordinate(transform, o, scale, in, out));
    if (mode == "nearest") {
      map.first.push_back(clamp(NearestIndex(rounding, x)));
      map.second.push_back(map.first.back());
      map.first_weight.push_back(1.0f);
      map.second_weight.push_back(0.0f);
    } else if (mode == "linear") {
      // Beyond the edges the nearest edge element, as torch clamps the source index.
      const double low = std::floor(x);
      const auto lambda = static_cast<float>(x - low);
      map.first.push_back(clamp(static_cast<int64_t>(low)));
      map.second.push_back(clamp(static_cast<int64_t>(low) + 1));
      map.first_weight.push_back(1.0f - lambda);
      map.second_weight.push_back(lambda);
    } else {
      return MakeError("Resize: mode '" + mode + "' is not supported by the CPU kernel");
    }
  }
  return map;
}

struct ResizePlan {
  std::vector<AxisMap> axes;  // by axis of the input (in == out and identity where unchanged)
  TensorShape output;
};

Expected<ResizePlan> PlanResize(const Attributes& attrs, const std::vector<Tensor>& inputs,
                                const TensorShape& x) {
  if (attrs.GetInt("antialias", 0) != 0)
    return MakeError("Resize: antialias is not supported by the CPU kernel");
  if (attrs.GetString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return MakeError("Resize: keep_aspect_ratio_policy other than stretch is not supported");
  const auto rank = static_cast<int64_t>(x.size());
  std::vector<int64_t> axes;
  for (int64_t a : attrs.GetInts("axes", {})) {
    MEMPLAN_TRY(int64_t axis, NormalizeAxis(a, rank, "Resize"));
    axes.push_back(axis);
  }
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  // Opset 10: (X, scales). Opset 11 on: (X, roi, scales, sizes).
  const bool opset10 = inputs.size() == 2;
  const Tensor scales_input = OptionalTensor(inputs, opset10 ? 1 : 2);
  const Tensor sizes_input = opset10 ? Tensor() : OptionalTensor(inputs, 3);
  std::vector<double> scale(x.size(), 1.0);
  ResizePlan plan;
  plan.output = x;
  if (sizes_input.defined() && sizes_input.numel() > 0) {
    const std::vector<int64_t> sizes = sizes_input.ToInt64Vector();
    if (sizes.size() != axes.size())
      return MakeError("Resize: " + std::to_string(sizes.size()) + " sizes for " +
                       std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto d = static_cast<size_t>(axes[i]);
      if (sizes[i] < 0) return MakeError("Resize: a negative size");
      plan.output[d] = sizes[i];
      scale[d] = x[d] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(x[d]);
    }
  } else if (scales_input.defined() && scales_input.numel() > 0) {
    if (scales_input.numel() != static_cast<int64_t>(axes.size()))
      return MakeError("Resize: " + std::to_string(scales_input.numel()) + " scales for " +
                       std::to_string(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto d = static_cast<size_t>(axes[i]);
      const double s = scales_input.data()[i];
      if (!(s > 0.0) || !std::isfinite(s)) return MakeError("Resize: a scale that is not positive");
      scale[d] = s;
      plan.output[d] = static_cast<int64_t>(std::floor(static_cast<double>(x[d]) * s));
    }
  } else {
    return MakeError("Resize: neither scales nor sizes is given");
  }
  if (attrs.GetString("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    return MakeError("Resize: tf_crop_and_resize (a roi) is not supported by the CPU kernel");
  for (size_t d = 0; d < x.size(); ++d) {
    AxisMap map;
    map.in = x[d];
    map.out = plan.output[d];
    if (plan.output[d] != x[d] || scale[d] != 1.0) {
      if (x[d] == 0 && plan.output[d] > 0) return MakeError("Resize: cannot resize an empty axis");
      MEMPLAN_TRY(map, MapAxis(attrs, x[d], plan.output[d], scale[d]));
    }
    plan.axes.push_back(std::move(map));
  }
  return plan;
}

bool IsIdentity(const AxisMap& map) { return map.first.empty(); }

// `in` of shape `shape` resampled along `axis` by `map` (shape[axis] becomes map.out).
std::vector<float> ResampleAxis(const std::vector<float>& in, TensorShape& shape, size_t axis,
                                const AxisMap& map) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<float> out(static_cast<size_t>(outer * map.out * inner));
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t o = 0; o < map.out; ++o) {
      const auto u = static_cast<size_t>(o);
      const float* a = in.data() + (b * map.in + map.first[u]) * inner;
      const float* c = in.data() + (b * map.in + map.second[u]) * inner;
      float* y = out.data() + (b * map.out + o) * inner;
      for (int64_t e = 0; e < inner; ++e)
        y[e] = map.first_weight[u] * a[e] + map.second_weight[u] * c[e];
    }
  }
  shape[axis] = map.out;
  return out;
}

// The adjoint of ResampleAxis: `grad` of the resampled shape back to map.in along `axis`.
std::vector<float> ResampleAxisBackward(const std::vector<float>& grad, TensorShape& shape,
                                        size_t axis, const AxisMap& map) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<float> out(static_cast<size_t>(outer * map.in * inner), 0.0f);
  for (int64_t b = 0; b < outer; ++b) {
    for (int64_t o = 0; o < map.out; ++o) {
      const auto u = static_cast<size_t>(o);
      const float* g = grad.data() + (b * map.out + o) * inner;
      float* a = out.data() + (b * map.in + map.first[u]) * inner;
      float* c = out.data() + (b * map.in + map.second[u]) * inner;
      for (int64_t e = 0; e < inner; ++e) {
        a[e] += map.first_weight[u] * g[e];
        c[e] += map.second_weight[u] * g[e];
      }
    }
  }
  shape[axis] = map.in;
  return out;
}

Expected<ForwardResult> ResizeForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Resize", "input"));
  MEMPLAN_TRY(ResizePlan plan, PlanResize(AttributesOf(args.attributes), args.inputs, x.shape()));
  std::vector<float> values(x.data(), x.data() + x.numel());
  TensorShape shape = x.shape();
  for (size_t d = 0; d < plan.axes.size(); ++d)
    if (!IsIdentity(plan.axes[d])) values = ResampleAxis(values, shape, d, plan.axes[d]);
  Tensor y = NewOverwrittenOutput(ctx, plan.output, x.dtype());
  std::copy(values.begin(), values.end(), y.mutable_data());
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> ResizeBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "Resize", [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(ResizePlan plan,
                PlanResize(AttributesOf(args.attributes), args.inputs, args.input_shapes[0]));
    if (NumElements(plan.output) != dy.numel())
      return MakeError("Resize: the output gradient does not match the resized shape");
    std::vector<float> values(dy.data(), dy.data() + dy.numel());
    TensorShape shape = plan.output;
    for (size_t d = plan.axes.size(); d-- > 0;)
      if (!IsIdentity(plan.axes[d])) values = ResampleAxisBackward(values, shape, d, plan.axes[d]);
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    std::copy(values.begin(), values.end(), dx.mutable_data());
    return dx;
  });
}

}  // namespace

void RegisterResizeKernels(KernelRegistry& registry) {
  registry.Register("Resize", &ResizeForward, &ResizeBackward);
}

}  // namespace memplan
