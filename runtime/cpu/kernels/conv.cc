// Conv and ConvTranspose, 1-D, 2-D and 3-D, with groups, strides, pads, dilations and bias, as
// im2col + GEMM per (image, group). The columns matrix has one row per (input channel, tap) and one
// column per output position, holding the input value that position reads through that tap (0 in
// the padding). With R = in_per_group·KD·KH·KW rows and P = OD·OH·OW columns (KD = OD = 1 below
// 3-D):
//   forward  Y_g[out_per_group, P]  = W_g[out_per_group, R] · col[R, P]   (+ bias)
//   weight   dW_g[out_per_group, R] += dY_g · col^T                        (summed over images)
//   input    dcol[R, P] = W_g^T · dY_g, then col2im adds each entry back onto the input it read.
// A 1x1 convolution with unit strides and no padding reads its input as the columns directly.
// The columns live in a scratch buffer outside the executor's allocator, as a convolution
// library's workspace would; the plan's memory accounting does not include it.

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/gemm_core.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/kernels/window_geometry.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

struct ConvPlan {
  WindowGeometry geometry;
  int64_t groups = 1;
  int64_t out_channels = 0;
  int64_t in_per_group = 0;
  int64_t out_per_group = 0;

  int64_t Taps() const { return geometry.d.kernel * PlaneTaps(); }
  int64_t PlaneTaps() const { return geometry.h.kernel * geometry.w.kernel; }
  // One channel's input and output: a volume of d planes of h x w.
  int64_t InPlane() const { return geometry.d.input * InSlice(); }
  int64_t OutPlane() const { return geometry.d.output * OutSlice(); }  // P
  int64_t InSlice() const { return geometry.h.input * geometry.w.input; }
  int64_t OutSlice() const { return geometry.h.output * geometry.w.output; }
  int64_t ColumnRows() const { return in_per_group * Taps(); }  // R
  // True when the columns matrix of an image group is that group's input itself.
  bool InputIsColumns() const {
    const WindowGeometry& g = geometry;
    const auto identity = [](const WindowAxis& a) {
      return a.kernel == 1 && a.stride == 1 && a.pad_begin == 0 && a.pad_end == 0;
    };
    return identity(g.d) && identity(g.h) && identity(g.w);
  }
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
  MEMPLAN_TRY(plan.geometry, ComputeWindowGeometry("Conv", attrs, x, kernel, false,
                                                   /*max_spatial_rank=*/3));
  return plan;
}

// Rows of a [rows, row_length] loop handed to one thread: about one elementwise chunk of items.
int64_t RowGrain(int64_t row_length) {
  return std::max<int64_t>(1, ElementwiseGrain() / std::max<int64_t>(1, row_length));
}

// Calls body(oh, ih, first, last, w_offset) for the output rows whose tap (kh, kw) lands inside
// the input: out[oh][ow] reads in[ih][ow * stride_w + w_offset] for ow in [first, last).
template <class Body>
void ForEachTapRow(const WindowGeometry& g, int64_t kh, int64_t kw, Body&& body) {
  const WindowAxis::Range rows = g.h.ValidOutputs(kh);
  const WindowAxis::Range cols = g.w.ValidOutputs(kw);
  for (int64_t oh = rows.first; oh < rows.last; ++oh) {
    body(oh, g.h.InputIndex(oh, kh), cols.first, cols.last, g.w.InputIndex(0, kw));
  }
}

// Calls body(od, id) for the output depths whose depth tap `kd` lands inside the input (id, the
// input depth it reads), and outside(od) for the others, in order. Below 3-D: body(0, 0).
template <class Body, class Outside>
void ForEachTapDepth(const WindowGeometry& g, int64_t kd, Body&& body, Outside&& outside) {
  const WindowAxis::Range depths = g.d.ValidOutputs(kd);
  for (int64_t od = 0; od < g.d.output; ++od) {
    if (od >= depths.first && od < depths.last) {
      body(od, g.d.InputIndex(od, kd));
    } else {
      outside(od);
    }
  }
}

// One h x w slice of a columns row: the output positions of one output depth read through tap
// (kh, kw) from the input slice `in`.
void Im2ColSlice(const WindowGeometry& g, int64_t kh, int64_t kw, const float* in, float* row) {
  const int64_t sw = g.w.stride, width = g.w.output, slice = g.h.output * width;
  // Zeros where the tap reads padding: the output rows it misses whole, then the edges of the
  // rows it reads (filling only these, not the whole row first, halves the stores).
  const WindowAxis::Range rows = g.h.ValidOutputs(kh);
  const int64_t last_row = std::min(rows.last, g.h.output);
  const int64_t first_row = std::min(rows.first, last_row);
  std::fill(row, row + first_row * width, 0.0f);
  std::fill(row + last_row * width, row + slice, 0.0f);
  ForEachTapRow(
      g, kh, kw, [&](int64_t oh, int64_t ih, int64_t first, int64_t last, int64_t w_offset) {
        float* out_row = row + oh * width;
        // An empty range may start past the row's end (ValidOutputs clamps none).
        last = std::min(last, width);
        first = std::min(first, last);
        std::fill(out_row, out_row + first, 0.0f);
        std::fill(out_row + last, out_row + width, 0.0f);
        // Index arithmetic, not a row pointer offset by w_offset: that pointer may
        // lie before the buffer (left padding), which is undefined even unread.
        const float* in_row = in + ih * g.w.input;
        if (sw == 1 && first < last) {
          std::copy(in_row + (first + w_offset), in_row + (last + w_offset), out_row + first);
        } else {
          for (int64_t ow = first; ow < last; ++ow) out_row[ow] = in_row[ow * sw + w_offset];
        }
      });
}

// col[R, P] from the in_per_group input volumes at `input`. Rows are independent: threaded.
void Im2Col(const ConvPlan& plan, const float* input, float* col) {
  const WindowGeometry& g = plan.geometry;
  const int64_t taps = plan.Taps(), plane_taps = plan.PlaneTaps(), plane = plan.OutPlane();
  const int64_t out_slice = plan.OutSlice(), in_slice = plan.InSlice();
  ParallelFor(plan.ColumnRows(), RowGrain(plane), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t tap = r % taps, kd = tap / plane_taps;
      const int64_t kh = (tap % plane_taps) / g.w.kernel, kw = tap % g.w.kernel;
      const float* in = input + (r / taps) * plan.InPlane();
      float* row = col + r * plane;
      ForEachTapDepth(
          g, kd,
          [&](int64_t od, int64_t id) {
            Im2ColSlice(g, kh, kw, in + id * in_slice, row + od * out_slice);
          },
          [&](int64_t od) { std::fill(row + od * out_slice, row + (od + 1) * out_slice, 0.0f); });
    }
  });
}

// input += col2im(col): each entry goes back onto the input element it was read from. Threaded
// over input channels (each owns its volume); a channel adds its taps in one fixed order.
void Col2ImAccumulate(const ConvPlan& plan, const float* col, float* input) {
  const WindowGeometry& g = plan.geometry;
  const int64_t taps = plan.Taps(), plane_taps = plan.PlaneTaps(), plane = plan.OutPlane();
  const int64_t out_slice = plan.OutSlice(), in_slice = plan.InSlice(), sw = g.w.stride;
  ParallelFor(plan.in_per_group, RowGrain(taps * plane), [&](int64_t c0, int64_t c1) {
    for (int64_t channel = c0; channel < c1; ++channel) {
      float* in = input + channel * plan.InPlane();
      for (int64_t tap = 0; tap < taps; ++tap) {
        const float* row = col + (channel * taps + tap) * plane;
        const int64_t kh = (tap % plane_taps) / g.w.kernel, kw = tap % g.w.kernel;
        ForEachTapDepth(
            g, tap / plane_taps,
            [&](int64_t od, int64_t id) {
              ForEachTapRow(
                  g, kh, kw,
                  [&](int64_t oh, int64_t ih, int64_t first, int64_t last, int64_t w_offset) {
                    const float* col_row = row + od * out_slice + oh * g.w.output;
                    float* in_row = in + id * in_slice + ih * g.w.input;
                    for (int64_t ow = first; ow < last; ++ow)
                      in_row[ow * sw + w_offset] += col_row[ow];
                  });
            },
            [](int64_t) {});
      }
    }
  });
}

// An uninitialised buffer for a columns matrix (every entry is written before it is read).
std::unique_ptr<float[]> ColumnsBuffer(const ConvPlan& plan) {
  return std::make_unique_for_overwrite<float[]>(
      static_cast<size_t>(plan.ColumnRows() * plan.OutPlane()));
}

// The three products of a convolution, on raw buffers laid out as the plan says; each adds into
// its output (zeroed by the caller, or holding the bias). Conv and ConvTranspose share them: a
// transposed convolution is the adjoint of the Conv from its output to its input.

// Where one image's group starts in each operand of a convolution: its input channels, its
// output channels and its weight rows (element offsets into x, y and w).
struct ImageGroup {
  int64_t input = 0;
  int64_t output = 0;
  int64_t weight = 0;
};

// Calls fn(ImageGroup) for every image and group, images outermost.
template <class Fn>
void ForEachImageGroup(const ConvPlan& plan, Fn fn) {
  const WindowGeometry& g = plan.geometry;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t group = 0; group < plan.groups; ++group) {
      const int64_t first_out = group * plan.out_per_group;
      fn(ImageGroup{.input = (n * g.channels + group * plan.in_per_group) * plan.InPlane(),
                    .output = (n * plan.out_channels + first_out) * plan.OutPlane(),
                    .weight = first_out * plan.ColumnRows()});
    }
  }
}

// The scratch columns matrix of `plan`, or null when its input already is the columns matrix.
std::unique_ptr<float[]> ColumnsScratch(const ConvPlan& plan) {
  return plan.InputIsColumns() ? nullptr : ColumnsBuffer(plan);
}

// The columns matrix of one image's group at `input`: `input` itself when `scratch` is null
// (ColumnsScratch), otherwise im2col(input) written into `scratch`.
const float* ColumnsOf(const ConvPlan& plan, const float* input, float* scratch) {
  if (scratch == nullptr) return input;
  Im2Col(plan, input, scratch);
  return scratch;
}

// y += conv(x, w): per image and group, im2col then one GEMM.
void ConvolveInto(const ConvPlan& plan, const float* x, const float* w, float* y) {
  const int64_t rows = plan.ColumnRows(), plane = plan.OutPlane();
  const std::unique_ptr<float[]> scratch = ColumnsScratch(plan);
  ForEachImageGroup(plan, [&](const ImageGroup& at) {
    GemmAccumulate(false, false, plan.out_per_group, plane, rows, 1.0f, w + at.weight,
                   ColumnsOf(plan, x + at.input, scratch.get()), y + at.output);
  });
}

// dx += conv's input gradient from dy: per image and group, W^T dY then col2im.
void ConvolveInputGradientInto(const ConvPlan& plan, const float* w, const float* dy, float* dx) {
  const int64_t rows = plan.ColumnRows(), plane = plan.OutPlane();
  const std::unique_ptr<float[]> scratch = ColumnsScratch(plan);
  ForEachImageGroup(plan, [&](const ImageGroup& at) {
    if (scratch == nullptr) {  // the columns are the input: accumulate straight into dX
      GemmAccumulate(true, false, rows, plane, plan.out_per_group, 1.0f, w + at.weight,
                     dy + at.output, dx + at.input);
    } else {
      std::fill(scratch.get(), scratch.get() + rows * plane, 0.0f);
      GemmAccumulate(true, false, rows, plane, plan.out_per_group, 1.0f, w + at.weight,
                     dy + at.output, scratch.get());
      Col2ImAccumulate(plan, scratch.get(), dx + at.input);
    }
  });
}

// dw += conv's weight gradient: per image and group, dY times im2col(x)^T.
void ConvolveWeightGradientInto(const ConvPlan& plan, const float* x, const float* dy, float* dw) {
  const int64_t rows = plan.ColumnRows(), plane = plan.OutPlane();
  const std::unique_ptr<float[]> scratch = ColumnsScratch(plan);
  ForEachImageGroup(plan, [&](const ImageGroup& at) {
    GemmAccumulate(false, true, plan.out_per_group, rows, plane, 1.0f, dy + at.output,
                   ColumnsOf(plan, x + at.input, scratch.get()), dw + at.weight);
  });
}

// bias_grad[c] += the sum of dY over images and positions of channel c ([N, channels, plane]).
void BiasGradientInto(const float* dy, int64_t batch, int64_t channels, int64_t plane,
                      float* bias_grad) {
  ParallelFor(channels, RowGrain(batch * plane), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t n = 0; n < batch; ++n) {
        const float* grad = dy + (n * channels + c) * plane;
        float sum = 0.0f;
        for (int64_t i = 0; i < plane; ++i) sum += grad[i];
        bias_grad[c] += sum;
      }
    }
  });
}

// y[n, c, ...] = bias[c] over [N, channels, plane].
void FillBias(const float* bias, int64_t batch, int64_t channels, int64_t plane, float* y) {
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      std::fill(y + (n * channels + c) * plane, y + (n * channels + c + 1) * plane, bias[c]);
}

Expected<ForwardResult> ConvForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Conv", "input"));
  MEMPLAN_TRY(Tensor w, RequireTensor(args.inputs, 1, "Conv", "input"));
  const Tensor bias = OptionalTensor(args.inputs, 2);
  MEMPLAN_TRY(ConvPlan plan, PlanConv(AttributesOf(args.attributes), x.shape(), w.shape()));
  const WindowGeometry& g = plan.geometry;
  Tensor y = NewOutput(ctx, g.OutputShape(plan.out_channels), x.dtype());
  if (bias.defined())
    FillBias(bias.data(), g.batch, plan.out_channels, plan.OutPlane(), y.mutable_data());
  ConvolveInto(plan, x.data(), w.data(), y.mutable_data());
  return RoundedSingleOutput(std::move(y));
}

// The backward of Conv and of ConvTranspose: the same three products of `plan`. For a transposed
// convolution `plan` is the adjoint Conv, whose input is dY and whose output gradient is x, so
// its forward gives dX and its weight gradient takes (dY, x).
Expected<InputGradients> ConvolutionBackward(const KernelContext& ctx, const BackwardArgs& args,
                                             std::string_view op, const ConvPlan& plan,
                                             bool transposed) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, op, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, op));
  const bool want_x = args.NeedsGrad(0);
  const bool want_w = args.NeedsGrad(1);
  const bool want_b = args.InputPresent(2) && args.NeedsGrad(2);
  Tensor dx = want_x ? NewInputGradient(ctx, args, 0) : Tensor();
  Tensor dw = want_w ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor db = want_b ? NewInputGradient(ctx, args, 2) : Tensor();
  if (want_b) {
    // The bias is per channel of the op's output: the adjoint Conv's input when transposed.
    const int64_t channels = transposed ? plan.geometry.channels : plan.out_channels;
    const int64_t plane = transposed ? plan.InPlane() : plan.OutPlane();
    BiasGradientInto(dy.data(), plan.geometry.batch, channels, plane, db.mutable_data());
  }
  if (want_w) {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, op, "saved input"));
    if (transposed) {
      ConvolveWeightGradientInto(plan, dy.data(), x.data(), dw.mutable_data());
    } else {
      ConvolveWeightGradientInto(plan, x.data(), dy.data(), dw.mutable_data());
    }
  }
  if (want_x) {
    MEMPLAN_TRY(Tensor w, RequireTensor(args.inputs, 1, op, "saved input"));
    if (transposed) {
      ConvolveInto(plan, dy.data(), w.data(), dx.mutable_data());
    } else {
      ConvolveInputGradientInto(plan, w.data(), dy.data(), dx.mutable_data());
    }
  }
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dw), std::move(db));
}

Expected<InputGradients> ConvBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(ConvPlan plan,
              PlanConv(AttributesOf(args.attributes), args.input_shapes[0], args.input_shapes[1]));
  return ConvolutionBackward(ctx, args, "Conv", plan, /*transposed=*/false);
}

// ConvTranspose(x [N, Cin, H...], w [Cin, Cout/g, k...]) is the adjoint of the Conv that maps
// y [N, Cout, Hout...] to x with weight w (Conv's weight layout [out, in/g, k] with out = Cin):
// y = that Conv's input gradient from x, and its backward is that Conv's forward (dx) and weight
// gradient (dw). Hout = stride (H - 1) + output_padding + dilation (k - 1) + 1 - pads. Explicit
// pads only (auto_pad and output_shape are an error: torch writes pads and output_padding).
struct ConvTransposePlan {
  ConvPlan adjoint;    // the Conv from ConvTranspose's output to its input
  TensorShape output;  // ConvTranspose's output: that Conv's input
};

Expected<ConvTransposePlan> PlanConvTranspose(const Attributes& attrs, const TensorShape& x,
                                              const TensorShape& w) {
  if (w.size() != x.size() || x.size() < 3)
    return MakeError("ConvTranspose: input " + ShapeToString(x) + " and weight " +
                     ShapeToString(w) + " ranks do not match");
  if (attrs.GetString("auto_pad", "NOTSET") != "NOTSET" || attrs.Has("output_shape"))
    return MakeError(
        "ConvTranspose: the CPU kernel takes explicit pads (no auto_pad, no "
        "output_shape)");
  const size_t spatial = x.size() - 2;
  const int64_t groups = attrs.GetInt("group", 1);
  if (groups <= 0 || w[0] != x[1])
    return MakeError("ConvTranspose: input " + ShapeToString(x) + " does not fit weight " +
                     ShapeToString(w));
  const std::vector<int64_t> ones(spatial, 1), zeros(2 * spatial, 0), none(spatial, 0);
  const std::vector<int64_t> strides = attrs.GetInts("strides", ones);
  const std::vector<int64_t> dilations = attrs.GetInts("dilations", ones);
  const std::vector<int64_t> pads = attrs.GetInts("pads", zeros);
  const std::vector<int64_t> output_padding = attrs.GetInts("output_padding", none);
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial ||
      output_padding.size() != spatial)
    return MakeError(
        "ConvTranspose: strides, dilations, pads or output_padding have the wrong "
        "length");
  TensorShape y = {x[0], w[1] * groups};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t out = strides[d] * (x[2 + d] - 1) + output_padding[d] +
                        dilations[d] * (w[2 + d] - 1) + 1 - pads[d] - pads[spatial + d];
    if (out <= 0) return MakeError("ConvTranspose: the output would be empty");
    y.push_back(out);
  }
  MEMPLAN_TRY(ConvPlan plan, PlanConv(attrs, y, w));
  if (plan.geometry.OutputShape(plan.out_channels) != x)
    return MakeError("ConvTranspose: output_padding must be below the stride");
  return ConvTransposePlan{plan, y};
}

Expected<ForwardResult> ConvTransposeForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "ConvTranspose", "input"));
  MEMPLAN_TRY(Tensor w, RequireTensor(args.inputs, 1, "ConvTranspose", "input"));
  const Tensor bias = OptionalTensor(args.inputs, 2);
  MEMPLAN_TRY(ConvTransposePlan transposed,
              PlanConvTranspose(AttributesOf(args.attributes), x.shape(), w.shape()));
  const ConvPlan& plan = transposed.adjoint;
  const WindowGeometry& g = plan.geometry;
  Tensor y = NewOutput(ctx, transposed.output, x.dtype());
  if (bias.defined()) FillBias(bias.data(), g.batch, g.channels, plan.InPlane(), y.mutable_data());
  ConvolveInputGradientInto(plan, w.data(), x.data(), y.mutable_data());
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> ConvTransposeBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(
      ConvTransposePlan transposed,
      PlanConvTranspose(AttributesOf(args.attributes), args.input_shapes[0], args.input_shapes[1]));
  return ConvolutionBackward(ctx, args, "ConvTranspose", transposed.adjoint, /*transposed=*/true);
}

}  // namespace

void RegisterConvKernels(KernelRegistry& registry) {
  registry.Register("Conv", &ConvForward, &ConvBackward);
  registry.Register("ConvTranspose", &ConvTransposeForward, &ConvTransposeBackward);
}

}  // namespace memplan
