// Conv, 1-D and 2-D, with groups, strides, pads, dilations and bias. Direct loops whose innermost
// loop runs along an output row over the output positions whose tap lands inside the input, so
// there are no bounds checks inside and no im2col workspace.

#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/kernels/window_geometry.h"

namespace memplan {
namespace {

struct ConvPlan {
  WindowGeometry geometry;
  int64_t groups = 1;
  int64_t out_channels = 0;
  int64_t in_per_group = 0;
  int64_t out_per_group = 0;
};

Expected<ConvPlan> PlanConv(const Attributes& attrs, const TensorShape& x, const TensorShape& w) {
  if (w.size() != x.size() || x.size() < 3) {
    return MakeError("Conv: input " + ShapeToString(x) + " and weight " + ShapeToString(w) +
                     " ranks do not match");
  }
  ConvPlan plan;
  plan.groups = attrs.GetInt("group", 1);
  plan.out_channels = w[0];
  if (plan.groups <= 0 || x[1] % plan.groups != 0 || w[0] % plan.groups != 0 ||
      w[1] * plan.groups != x[1]) {
    return MakeError("Conv: channels of input " + ShapeToString(x) + " and weight " +
                     ShapeToString(w) + " do not fit group=" + std::to_string(plan.groups));
  }
  plan.in_per_group = w[1];
  plan.out_per_group = w[0] / plan.groups;
  const std::vector<int64_t> kernel(w.begin() + 2, w.end());
  const std::vector<int64_t> declared = attrs.GetInts("kernel_shape", kernel);
  if (declared != kernel) return MakeError("Conv: kernel_shape disagrees with the weight's shape");
  MEMPLAN_TRY(plan.geometry, ComputeWindowGeometry("Conv", attrs, x, kernel, false));
  return plan;
}

// Calls body(out_row, in_row, first, last, w_offset) for every (output row, tap) pair of one
// (output plane, input plane): out_row[ow] pairs with in_row[ow * stride_w + w_offset] for
// ow in [first, last).
template <class Body>
void ForEachTapRow(const WindowGeometry& g, int64_t kh, int64_t kw, Body&& body) {
  const WindowAxis::Range rows = g.h.ValidOutputs(kh);
  const WindowAxis::Range cols = g.w.ValidOutputs(kw);
  for (int64_t oh = rows.first; oh < rows.last; ++oh) {
    body(oh, g.h.InputIndex(oh, kh), cols.first, cols.last, g.w.InputIndex(0, kw));
  }
}

Expected<ForwardResult> ConvForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Conv", "input"));
  MEMPLAN_TRY(Tensor w, RequireTensor(args.inputs, 1, "Conv", "input"));
  const Tensor bias = OptionalTensor(args.inputs, 2);
  MEMPLAN_TRY(ConvPlan plan, PlanConv(AttributesOf(args.attributes), x.shape(), w.shape()));
  const WindowGeometry& g = plan.geometry;
  Tensor y = NewOutput(ctx, g.OutputShape(plan.out_channels), x.dtype());
  const int64_t in_plane = g.h.input * g.w.input, out_plane = g.h.output * g.w.output;
  const int64_t taps = g.h.kernel * g.w.kernel;
  const int64_t sw = g.w.stride;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < plan.out_channels; ++oc) {
      float* out = y.mutable_data() + (n * plan.out_channels + oc) * out_plane;
      if (bias.defined()) {
        for (int64_t i = 0; i < out_plane; ++i) out[i] = bias.data()[oc];
      }
      const int64_t group = oc / plan.out_per_group;
      for (int64_t icg = 0; icg < plan.in_per_group; ++icg) {
        const int64_t ic = group * plan.in_per_group + icg;
        const float* in = x.data() + (n * g.channels + ic) * in_plane;
        const float* kernel = w.data() + (oc * plan.in_per_group + icg) * taps;
        for (int64_t kh = 0; kh < g.h.kernel; ++kh) {
          for (int64_t kw = 0; kw < g.w.kernel; ++kw) {
            const float weight = kernel[kh * g.w.kernel + kw];
            ForEachTapRow(
                g, kh, kw,
                [&](int64_t oh, int64_t ih, int64_t first, int64_t last, int64_t w_offset) {
                  float* out_row = out + oh * g.w.output;
                  // Index arithmetic instead of a row pointer offset by w_offset: that pointer may
                  // lie before the buffer (left padding), which is undefined even unread.
                  const float* in_row = in + ih * g.w.input;
                  for (int64_t ow = first; ow < last; ++ow) {
                    out_row[ow] += weight * in_row[ow * sw + w_offset];
                  }
                });
          }
        }
      }
    }
  }
  RoundToOwnDType(y);
  return SingleOutput(std::move(y));
}

// dX[ih,iw] += W[tap] dY[oh,ow]; dW[tap] += X[ih,iw] dY[oh,ow]; dB = sum of dY per channel.
Expected<InputGradients> ConvBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Conv", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "Conv"));
  MEMPLAN_TRY(ConvPlan plan,
              PlanConv(AttributesOf(args.attributes), args.input_shapes[0], args.input_shapes[1]));
  const WindowGeometry& g = plan.geometry;
  const bool want_x = args.NeedsGrad(0);
  const bool want_w = args.NeedsGrad(1);
  const bool want_b = args.InputPresent(2) && args.NeedsGrad(2);
  Tensor x, w;
  if (want_w) {
    MEMPLAN_TRY(x, RequireTensor(args.inputs, 0, "Conv", "saved input"));
  }
  if (want_x) {
    MEMPLAN_TRY(w, RequireTensor(args.inputs, 1, "Conv", "saved input"));
  }
  Tensor dx = want_x ? NewInputGradient(ctx, args, 0) : Tensor();
  Tensor dw = want_w ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor db = want_b ? NewInputGradient(ctx, args, 2) : Tensor();
  const int64_t in_plane = g.h.input * g.w.input, out_plane = g.h.output * g.w.output;
  const int64_t taps = g.h.kernel * g.w.kernel;
  const int64_t sw = g.w.stride;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oc = 0; oc < plan.out_channels; ++oc) {
      const float* grad = dy.data() + (n * plan.out_channels + oc) * out_plane;
      if (want_b) {
        float sum = 0.0f;
        for (int64_t i = 0; i < out_plane; ++i) sum += grad[i];
        db.mutable_data()[oc] += sum;
      }
      const int64_t group = oc / plan.out_per_group;
      for (int64_t icg = 0; icg < plan.in_per_group; ++icg) {
        const int64_t ic = group * plan.in_per_group + icg;
        const int64_t in_offset = (n * g.channels + ic) * in_plane;
        const int64_t kernel_offset = (oc * plan.in_per_group + icg) * taps;
        for (int64_t kh = 0; kh < g.h.kernel; ++kh) {
          for (int64_t kw = 0; kw < g.w.kernel; ++kw) {
            const int64_t tap = kernel_offset + kh * g.w.kernel + kw;
            const float weight = want_x ? w.data()[tap] : 0.0f;
            float weight_grad = 0.0f;
            ForEachTapRow(
                g, kh, kw,
                [&](int64_t oh, int64_t ih, int64_t first, int64_t last, int64_t w_offset) {
                  const float* grad_row = grad + oh * g.w.output;
                  const int64_t row = in_offset + ih * g.w.input;
                  if (want_x) {
                    float* dx_row = dx.mutable_data() + row;
                    for (int64_t ow = first; ow < last; ++ow) {
                      dx_row[ow * sw + w_offset] += weight * grad_row[ow];
                    }
                  }
                  if (want_w) {
                    const float* x_row = x.data() + row;
                    for (int64_t ow = first; ow < last; ++ow) {
                      weight_grad += x_row[ow * sw + w_offset] * grad_row[ow];
                    }
                  }
                });
            if (want_w) dw.mutable_data()[tap] += weight_grad;
          }
        }
      }
    }
  }
  for (size_t i = 0; i < 3; ++i) {
    Tensor* t = i == 0 ? &dx : i == 1 ? &dw : &db;
    if (!t->defined()) continue;
    RoundToOwnDType(*t);
    grads[i] = std::move(*t);
  }
  return grads;
}

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register("Conv", &ConvForward, &ConvBackward);
}

}  // namespace memplan
