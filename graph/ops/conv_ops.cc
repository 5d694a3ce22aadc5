// Conv and ConvTranspose (any spatial rank; auto_pad, pads, strides, dilations, groups).
//
// FLOPs (multiply-add = 2):
//   Conv:          2 * N*Cout*prod(out spatial) * (Cin/groups)*prod(kernel)  [+ N*Cout*prod(out)]
//                  = 2 * elements(Y) * elements of one filter W[m]           [+ elements(Y)]
//   ConvTranspose: 2 * N*Cin*prod(in spatial) * (Cout/groups)*prod(kernel)   [+ elements(Y)]
//                  = 2 * elements(X) * W.dims[1]*prod(kernel)                [+ elements(Y)]
// The bracketed term is the bias add. Backward computes grad-input and grad-weight, each a
// convolution of the same size: backward_flops_factor 2.

#include "graph/checked_math.h"
#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/window_rules.h"

namespace memplan {
namespace {

// The spatial kernel sizes from the weight's dims 2.. when they are all constant.
std::optional<std::vector<int64_t>> KernelFromWeight(const Shape& weight) {
  if (!weight.known || weight.rank() < 3) return std::nullopt;
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < weight.rank(); ++i) {
    auto c = weight.dims[i].constant_value();
    if (!c) return std::nullopt;
    kernel.push_back(*c);
  }
  return kernel;
}

// Elements of one filter slice W[m] (or W[c] for ConvTranspose): W.dims[1] * prod(kernel).
Dim FilterElements(const Shape& weight) {
  Dim n = 1;
  for (size_t i = 1; i < weight.rank(); ++i) n *= weight.dims[i];
  return n;
}

struct ConvInputs {
  const TensorInfo* x;
  const TensorInfo* w;
  std::optional<WindowAttributes> window;  // nullopt when shapes are too unknown to say more
};

Expected<ConvInputs> ReadConvInputs(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* w, RequiredInput(ctx, 1));
  ConvInputs in{x, w, std::nullopt};
  if (!x->shape.known || !w->shape.known) return in;
  if (x->shape.rank() < 3) {
    return MakeError(NodeError(ctx.node, "input must have rank >= 3 ([N, C, spatial...]), got " +
                                             std::to_string(x->shape.rank())));
  }
  if (w->shape.rank() != x->shape.rank()) {
    return MakeError(NodeError(ctx.node, "weight rank " + std::to_string(w->shape.rank()) +
                                             " differs from input rank " +
                                             std::to_string(x->shape.rank())));
  }
  size_t spatial = x->shape.rank() - 2;
  std::vector<int64_t> kernel = KernelFromWeight(w->shape).value_or(std::vector<int64_t>{});
  if (kernel.empty() && !ctx.attrs().Has("kernel_shape")) return in;
  MEMPLAN_TRY(in.window, ReadWindowAttributes(ctx.node, spatial, kernel));
  return in;
}

int64_t Groups(const OpContext& ctx) { return ctx.attrs().GetInt("group", 1); }

Expected<std::vector<TensorInfo>> ConvShape(const OpContext& ctx) {
  MEMPLAN_TRY(ConvInputs in, ReadConvInputs(ctx));
  auto outs = EmptyOutputs(ctx);
  if (outs.empty()) return outs;
  outs[0].dtype = in.x->dtype;
  if (!in.window) return outs;  // shape stays unknown
  const Shape& xs = in.x->shape;
  const Shape& ws = in.w->shape;
  int64_t groups = Groups(ctx);
  if (groups <= 0) return MakeError(NodeError(ctx.node, "group must be positive"));
  auto cin = xs.dims[1].constant_value();
  auto w_cin = ws.dims[1].constant_value();
  // A group near 2^61 times the weight's channels overflows; that is a mismatch, not UB.
  std::optional<int64_t> expected_cin;
  if (w_cin) expected_cin = CheckedMul(*w_cin, groups);
  if (cin && w_cin && (!expected_cin || *cin != *expected_cin)) {
    return MakeError(
        NodeError(ctx.node, "input has " + std::to_string(*cin) + " channels but weight expects " +
                                std::to_string(*w_cin) + " x group " + std::to_string(groups)));
  }
  Shape y;
  y.dims = {xs.dims[0], ws.dims[0]};
  for (size_t a = 0; a < in.window->spatial_rank(); ++a) {
    MEMPLAN_TRY(std::optional<Dim> d, WindowOutputDim(ctx.node, xs.dims[a + 2], *in.window, a));
    if (!d) d = FreshDim(ctx, "conv_out");
    if (!d) return outs;
    if (auto c = d->constant_value(); c && *c <= 0) {
      return MakeError(NodeError(ctx.node, "output spatial size " + std::to_string(*c) +
                                               " is not positive (kernel larger than padded "
                                               "input)"));
    }
    y.dims.push_back(*d);
  }
  outs[0].shape = std::move(y);
  return outs;
}

Expected<std::vector<TensorInfo>> ConvTransposeShape(const OpContext& ctx) {
  MEMPLAN_TRY(ConvInputs in, ReadConvInputs(ctx));
  auto outs = EmptyOutputs(ctx);
  if (outs.empty()) return outs;
  outs[0].dtype = in.x->dtype;
  if (!in.window) return outs;
  const Shape& xs = in.x->shape;
  const Shape& ws = in.w->shape;
  int64_t groups = Groups(ctx);
  if (groups <= 0) return MakeError(NodeError(ctx.node, "group must be positive"));
  size_t spatial = in.window->spatial_rank();
  Shape y;
  y.dims = {xs.dims[0], ws.dims[1] * Dim(groups)};
  std::vector<int64_t> output_shape = ctx.attrs().GetInts("output_shape");
  std::vector<int64_t> output_padding =
      ctx.attrs().GetInts("output_padding", std::vector<int64_t>(spatial, 0));
  if (output_padding.size() != spatial) {
    return MakeError(NodeError(ctx.node, "output_padding needs one value per spatial axis"));
  }
  for (size_t a = 0; a < spatial; ++a) {
    if (!output_shape.empty()) {
      // output_shape may list N and C too; its last `spatial` values are the spatial sizes.
      if (output_shape.size() < spatial) {
        return MakeError(NodeError(ctx.node, "output_shape has fewer values than spatial axes"));
      }
      const int64_t size = output_shape[output_shape.size() - spatial + a];
      if (size < 1) {
        return MakeError(NodeError(ctx.node, "output_shape gives spatial axis " +
                                                 std::to_string(a) + " the size " +
                                                 std::to_string(size) + "; it must be positive"));
      }
      y.dims.push_back(Dim(size));
    } else {
      Dim size = TransposedWindowOutputDim(xs.dims[a + 2], *in.window, a, output_padding[a]);
      // Pads larger than the transposed window leave nothing (torch: "Output size is too small").
      if (auto c = size.constant_value(); c && *c < 1) {
        return MakeError(NodeError(
            ctx.node, "spatial axis " + std::to_string(a) + " of the output would have the size " +
                          std::to_string(*c) + " (pads larger than the transposed window)"));
      }
      y.dims.push_back(std::move(size));
    }
  }
  outs[0].shape = std::move(y);
  return outs;
}

Dim BiasFlops(const OpContext& ctx) {
  if (!ctx.has_input(2) || ctx.outputs.empty() || !ctx.outputs[0].shape.known) return 0;
  return ctx.outputs[0].shape.NumElements();
}

OpCost ConvCost(const OpContext& ctx) {
  if (ctx.inputs.size() < 2 || ctx.outputs.empty() || !ctx.outputs[0].shape.known ||
      !ctx.inputs[1].shape.known) {
    return IoCost(ctx, 0);
  }
  Dim flops = Dim(2) * ctx.outputs[0].shape.NumElements() * FilterElements(ctx.inputs[1].shape);
  return IoCost(ctx, flops + BiasFlops(ctx));
}

OpCost ConvTransposeCost(const OpContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[0].shape.known || !ctx.inputs[1].shape.known) {
    return IoCost(ctx, 0);
  }
  Dim flops = Dim(2) * ctx.inputs[0].shape.NumElements() * FilterElements(ctx.inputs[1].shape);
  return IoCost(ctx, flops + BiasFlops(ctx));
}

OpSchema ConvSchema(const char* op_type, ShapeRule shape, CostRule cost) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = std::move(shape);
  s.cost = std::move(cost);
  // convolution: input, weight, bias: convolution_backward(grad, input, weight, bias->sizes(),
  // ..., grad_input_mask): one joint formula, so input and weight are both always saved.
  s.saved_for_backward = WhenDifferentiable(AlwaysSave({SaveInput(0), SaveInput(1)}));
  s.backward_flops_factor = kContractionBackwardFactor;
  s.amp = AmpCategory::kFp16Safe;
  s.saved_source = DerivativesSource(
      "convolution: convolution_backward(grad, input, weight, bias->sym_sizes(), "
      "...) saves input and weight (transposed=true for ConvTranspose)");
  s.amp_source =
      AutocastSource("lower_precision_fp list (conv1d/2d/3d, conv_transpose1d/2d/3d, convolution)");
  return s;
}

// Conv and ConvTranspose: a linear layer with weight W (slot 1) and a per-output-channel bias B
// (slot 2).
OpSchema ConvLayerSchema(const char* op_type, ShapeRule shape, CostRule cost) {
  OpSchema s = ConvSchema(op_type, std::move(shape), std::move(cost));
  s.is_linear_layer = true;
  s.weight_inputs = {1, 2};
  s.channel_bias_input = 2;
  return s;
}

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
  registry.Register(ConvLayerSchema("Conv", ConvShape, ConvCost));
  registry.Register(ConvLayerSchema("ConvTranspose", ConvTransposeShape, ConvTransposeCost));
}

}  // namespace memplan
