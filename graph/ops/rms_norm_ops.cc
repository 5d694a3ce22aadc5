// Transformer normalisations that exporters and ONNX Runtime's optimizer write as one node:
//   * RMSNormalization (ai.onnx opset 23) and SimplifiedLayerNormalization (ONNX Runtime's name for
//     the same op, registered both in the default domain, where ORT's fusion writes it, and in
//     com.microsoft): Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale;
//   * com.microsoft SkipLayerNormalization: LayerNorm(input + skip (+ bias)) over the last axis,
//     and SkipSimplifiedLayerNormalization: the same with RMS normalisation.
//
// Saved for backward follows PyTorch's fused kernels, which is what the user's module runs:
// _fused_rms_norm keeps input, weight and rstd; native_layer_norm keeps its input (here the
// residual sum), weight, bias, mean and rstd. Statistics have X's leading dims followed by ones
// and the accumulate dtype (StatisticsDType), like LayerNormalization's.
//
// FLOPs per input element: kRmsNormFlopsPerElement (square, accumulate, scale by rstd, scale by
// weight); the skip variants add one add per element for the residual sum and one for the bias.

#include "graph/ops/common_rules.h"
#include "graph/ops/normalization_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

constexpr int64_t kRmsNormFlopsPerElement = 4;
constexpr int64_t kResidualAddFlops = 1;

Expected<std::vector<TensorInfo>> SameAsInput0WithStats(const OpContext& ctx, int64_t axis,
                                                        size_t first_stat, size_t last_stat) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  if (outs.empty()) return outs;
  MEMPLAN_TRY(Shape stat, TrailingNormStatShape(ctx, axis));
  for (size_t i = first_stat; i <= last_stat && i < outs.size(); ++i) {
    outs[i].dtype = StatisticsDType(ctx.inputs[0].dtype);
    outs[i].shape = stat;
  }
  return outs;
}

std::string RmsSavedSource() {
  return DerivativesSource(
      "_fused_rms_norm(input, normalized_shape, weight, eps) -> (output, rstd): "
      "_fused_rms_norm_backward(grad, input, normalized_shape, rstd, weight, mask) saves "
      "input, weight and result1 (rstd, X.shape[:axis] + [1]*rest)");
}

std::string RmsAmpSource() {
  return AutocastSource("rms_norm is not listed, runs in its input's dtype (statistics in fp32)");
}

// ---------------------------------------------------------------- RMS normalisation
// Inputs X, scale; attribute axis (default -1); outputs Y and, for ORT's
// SimplifiedLayerNormalization, inv_std_var?.
OpSchema RmsNormSchema(const char* op_type, const char* domain) {
  OpSchema s;
  s.op_type = op_type;
  s.domain = domain;
  s.min_inputs = 2;  // X, scale
  s.infer_shapes = [](const OpContext& ctx) {
    return SameAsInput0WithStats(ctx, ctx.attrs().GetInt("axis", -1), 1, 1);
  };
  s.cost = PerInputElementCostRule(kRmsNormFlopsPerElement);
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1});
    const int64_t axis = ctx.attrs().GetInt("axis", -1);
    saved.push_back(OutputOrExtra(ctx, 1, "rstd", StatisticsDType(ctx.inputs[0].dtype),
                                  StatShapeOrUnknown(ctx, axis)));
    return saved;
  });
  s.backward_flops_factor = kNormalizationBackwardFactor;
  s.amp = AmpCategory::kFollowInputs;
  s.saved_source = RmsSavedSource();
  s.amp_source = RmsAmpSource();
  return s;
}

// ---------------------------------------------------------------- Skip normalisations
// SkipLayerNormalization: inputs input, skip, gamma, beta?, bias?; outputs output, mean?,
// inv_std_var?, input_skip_bias_sum?. SkipSimplifiedLayerNormalization: inputs input, skip,
// gamma, bias?; the same outputs (mean unused). Both normalise over the last axis.
OpSchema SkipNormSchema(const char* op_type, bool rms) {
  OpSchema s;
  s.op_type = op_type;
  s.domain = "com.microsoft";
  s.min_inputs = 3;  // input, skip, gamma
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, SameAsInput0WithStats(ctx, -1, 1, 2));
    if (outs.size() > 3 && outs[3].present) {
      outs[3].dtype = outs[0].dtype;
      outs[3].shape = outs[0].shape;
    }
    return outs;
  };
  const int64_t flops =
      (rms ? kRmsNormFlopsPerElement : kNormalizationFlopsPerElement) + 2 * kResidualAddFlops;
  s.cost = PerInputElementCostRule(flops);
  const size_t bias_slot = rms ? 3 : 4;
  s.saved_for_backward = WhenDifferentiable([rms](const OpContext& ctx) {
    // The residual sum is a new tensor the norm keeps (PyTorch: `h = x + skip; ln(h)`).
    const TensorInfo& x = ctx.inputs[0];
    std::vector<SavedTensor> saved{OutputOrExtra(ctx, 3, "input_skip_bias_sum", x.dtype, x.shape)};
    if (ctx.has_input(2)) saved.push_back(SaveInput(2));
    if (!rms && ctx.has_input(3)) saved.push_back(SaveInput(3));
    const DType stats = StatisticsDType(x.dtype);
    const Shape stat = StatShapeOrUnknown(ctx, -1);
    if (!rms) saved.push_back(OutputOrExtra(ctx, 1, "mean", stats, stat));
    saved.push_back(OutputOrExtra(ctx, 2, "rstd", stats, stat));
    return saved;
  });
  // input, skip, gamma, beta and bias all receive gradients.
  s.gradient_inputs = GradientsForFloatingInputsThrough(bias_slot);
  s.backward_flops_factor = kNormalizationBackwardFactor;
  s.amp = rms ? AmpCategory::kFollowInputs : AmpCategory::kFp32Required;
  s.saved_source =
      rms ? RmsSavedSource() + " (input = input + skip + bias, a new tensor)"
          : DerivativesSource(
                "add.Tensor saves nothing; native_layer_norm saves input (the sum input + "
                "skip + bias), weight, bias, result1 (mean) and result2 (rstd)");
  s.amp_source = rms ? RmsAmpSource() : AutocastSource("fp32 list (layer_norm, native_layer_norm)");
  return s;
}

}  // namespace

void RegisterRmsNormOps(OpRegistry& registry) {
  registry.Register(RmsNormSchema("RMSNormalization", ""));
  registry.Register(RmsNormSchema("SimplifiedLayerNormalization", ""));
  registry.Register(RmsNormSchema("SimplifiedLayerNormalization", "com.microsoft"));
  registry.Register(SkipNormSchema("SkipLayerNormalization", /*rms=*/false));
  registry.Register(SkipNormSchema("SkipSimplifiedLayerNormalization", /*rms=*/true));
}

}  // namespace memplan
