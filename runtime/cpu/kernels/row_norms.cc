// The norms over the trailing dims of each row: LayerNormalization keeps "mean" and "invstd"
// (fp32) as native_layer_norm does; RMSNormalization (and ORT's SimplifiedLayerNormalization)
// keeps rstd ("invstd"), as _fused_rms_norm does. ORT's SkipLayerNormalization and
// SkipSimplifiedLayerNormalization run the layer / RMS norm rows on input + skip (+ bias) and keep
// that sum besides the statistics.

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/kernels/normalization_common.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

using namespace normalization;  // NOLINT(google-build-using-namespace): this family's helpers

// LayerNormalization: rows are the dims before `axis`, each normalised over the dims from `axis`.
struct RowLayout {
  int64_t axis = 0;
  int64_t rows = 1;
  int64_t width = 1;
  TensorShape stats_shape;  // x's dims before axis, then ones (ONNX's Mean/InvStdDev shape)
};

Expected<RowLayout> RowsOf(const Attributes& attrs, const TensorShape& x,
                           std::string_view op = "LayerNormalization") {
  RowLayout layout;
  const auto rank = static_cast<int64_t>(x.size());
  MEMPLAN_TRY(layout.axis, NormalizeAxis(attrs.GetInt("axis", -1), rank, op));
  for (int64_t i = 0; i < rank; ++i) {
    const auto d = static_cast<size_t>(i);
    (i < layout.axis ? layout.rows : layout.width) *= x[d];
    layout.stats_shape.push_back(i < layout.axis ? x[d] : 1);
  }
  return layout;
}

// The rows of a layer norm (each `layout.width` long, scale and optional bias per element): y,
// and each row's mean and invstd.
void LayerNormRows(const RowLayout& layout, double epsilon, const float* x, const Tensor& scale,
                   const Tensor& bias, Tensor& y, Tensor& mean, Tensor& invstd) {
  for (int64_t r = 0; r < layout.rows; ++r) {
    const float* p = x + r * layout.width;
    float* q = y.mutable_data() + r * layout.width;
    const auto [m, inv] = MomentsOf(p, layout.width, epsilon);
    mean.mutable_data()[r] = static_cast<float>(m);
    invstd.mutable_data()[r] = static_cast<float>(inv);
    for (int64_t i = 0; i < layout.width; ++i) {
      const double b = bias.defined() ? bias.data()[i] : 0.0;
      q[i] = static_cast<float>((p[i] - m) * inv * scale.data()[i] + b);
    }
  }
}

// native_layer_norm_backward over the rows: dX (into `dx` when non-null) and the scale and bias
// gradients' per-element sums over rows (accumulated in double).
void LayerNormRowsBackward(const RowLayout& layout, const float* dy, const float* x,
                           const float* mean, const float* invstd, const float* scale, float* dx,
                           std::vector<double>& scale_sum, std::vector<double>& bias_sum) {
  const auto width = static_cast<double>(layout.width);
  for (int64_t r = 0; r < layout.rows; ++r) {
    const float* g = dy + r * layout.width;
    const float* p = x + r * layout.width;
    const double m = mean[r], inv = invstd[r];
    double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
    for (int64_t i = 0; i < layout.width; ++i) {
      const double xhat = (p[i] - m) * inv;
      const double dxhat = static_cast<double>(g[i]) * scale[i];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      scale_sum[static_cast<size_t>(i)] += g[i] * xhat;
      bias_sum[static_cast<size_t>(i)] += g[i];
    }
    if (dx == nullptr) continue;
    float* out = dx + r * layout.width;
    for (int64_t i = 0; i < layout.width; ++i) {
      const double xhat = (p[i] - m) * inv;
      const double dxhat = static_cast<double>(g[i]) * scale[i];
      out[i] =
          static_cast<float>(inv * (dxhat - sum_dxhat / width - xhat * sum_dxhat_xhat / width));
    }
  }
}

Expected<ForwardResult> LayerNormForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = "LayerNormalization";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "input"));
  const Tensor bias = OptionalTensor(args.inputs, 2);
  const Attributes& attrs = AttributesOf(args.attributes);
  MEMPLAN_TRY(RowLayout layout, RowsOf(attrs, x.shape()));
  if (scale.numel() != layout.width || (bias.defined() && bias.numel() != layout.width)) {
    return MakeError("LayerNormalization: Scale/B must have one value per normalised element (" +
                     std::to_string(layout.width) + ")");
  }
  const double epsilon = attrs.GetFloat("epsilon", 1e-5);
  Tensor y = NewOutput(ctx, x.shape(), x.dtype());
  // The optional Mean/InvStdDev outputs and the saved extras are the same buffers.
  Tensor mean = args.num_outputs >= 2 ? NewOutput(ctx, layout.stats_shape, DType::kFloat32)
                                      : NewExtra(ctx, layout.stats_shape, DType::kFloat32);
  Tensor invstd = args.num_outputs >= 3 ? NewOutput(ctx, layout.stats_shape, DType::kFloat32)
                                        : NewExtra(ctx, layout.stats_shape, DType::kFloat32);
  LayerNormRows(layout, epsilon, x.data(), scale, bias, y, mean, invstd);
  return OutputWithSavedExtras(std::move(y), args.num_outputs,
                               {{"mean", std::move(mean)}, {"invstd", std::move(invstd)}});
}

Expected<InputGradients> LayerNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "LayerNormalization";
  MEMPLAN_TRY(const SavedNormalization saved,
              ReadSavedNormalization(args, kOp, StatisticsAt::kOutputsOrExtras));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, kOp));
  MEMPLAN_TRY(RowLayout layout, RowsOf(AttributesOf(args.attributes), saved.x.shape()));
  Tensor dx = args.NeedsGrad(0) ? NewInputGradient(ctx, args, 0) : Tensor();
  Tensor dscale = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor dbias =
      args.InputPresent(2) && args.NeedsGrad(2) ? NewInputGradient(ctx, args, 2) : Tensor();
  // Scale/bias gradients sum over rows: accumulate in double, round once.
  std::vector<double> scale_sum(static_cast<size_t>(layout.width), 0.0);
  std::vector<double> bias_sum(static_cast<size_t>(layout.width), 0.0);
  LayerNormRowsBackward(layout, saved.dy.data(), saved.x.data(), saved.mean.data(),
                        saved.invstd.data(), saved.scale.data(),
                        dx.defined() ? dx.mutable_data() : nullptr, scale_sum, bias_sum);
  for (int64_t i = 0; i < layout.width; ++i) {
    if (dscale.defined())
      dscale.mutable_data()[i] = static_cast<float>(scale_sum[static_cast<size_t>(i)]);
    if (dbias.defined())
      dbias.mutable_data()[i] = static_cast<float>(bias_sum[static_cast<size_t>(i)]);
  }
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dscale), std::move(dbias));
}

// The rows of an RMS norm (scale tiling each row): y and each row's rstd.
void RmsNormRows(const RowLayout& layout, double epsilon, const float* x, const Tensor& scale,
                 Tensor& y, Tensor& rstd) {
  const int64_t entries = scale.numel();
  for (int64_t r = 0; r < layout.rows; ++r) {
    const float* p = x + r * layout.width;
    double squares = 0.0;
    for (int64_t i = 0; i < layout.width; ++i) squares += static_cast<double>(p[i]) * p[i];
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(layout.width) + epsilon);
    rstd.mutable_data()[r] = static_cast<float>(inv);
    float* q = y.mutable_data() + r * layout.width;
    for (int64_t i = 0; i < layout.width; ++i)
      q[i] = static_cast<float>(p[i] * inv * scale.data()[i % entries]);
  }
}

// _fused_rms_norm_backward over the rows: with xhat = x rstd and g = dY scale,
// dX = rstd (g - xhat mean(g xhat)) (into `dx` when non-null); dScale's sums of dY xhat over rows
// (and repeats of the scale) accumulate in `scale_sum`.
void RmsNormRowsBackward(const RowLayout& layout, const float* dy, const float* x,
                         const float* rstd, const Tensor& scale, float* dx,
                         std::vector<double>& scale_sum) {
  const int64_t entries = scale.numel();
  const auto width = static_cast<double>(layout.width);
  for (int64_t r = 0; r < layout.rows; ++r) {
    const float* g = dy + r * layout.width;
    const float* p = x + r * layout.width;
    const double inv = rstd[r];
    double sum_g_xhat = 0.0;
    for (int64_t i = 0; i < layout.width; ++i) {
      const double xhat = p[i] * inv;
      sum_g_xhat += static_cast<double>(g[i]) * scale.data()[i % entries] * xhat;
      scale_sum[static_cast<size_t>(i % entries)] += g[i] * xhat;
    }
    if (dx == nullptr) continue;
    float* out = dx + r * layout.width;
    for (int64_t i = 0; i < layout.width; ++i) {
      const double xhat = p[i] * inv;
      out[i] = static_cast<float>(inv * (static_cast<double>(g[i]) * scale.data()[i % entries] -
                                         xhat * sum_g_xhat / width));
    }
  }
}

// RMSNormalization (opset 23) and ONNX Runtime's SimplifiedLayerNormalization: each row (the dims
// from `axis` on) scaled by rstd = 1 / sqrt(mean(x^2) + epsilon), then by `scale` (one value per
// normalised element, or fewer repeated: a scale over the trailing dims only). rstd is output 1
// when the node declares it (ORT's inv_std_var) and the registry's saved "rstd" (the kernels'
// "invstd", as LayerNorm's).
Expected<ForwardResult> RmsNormForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = "RMSNormalization";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  MEMPLAN_TRY(RowLayout layout, RowsOf(attrs, x.shape(), kOp));
  if (scale.numel() == 0 || layout.width % scale.numel() != 0)
    return MakeError("RMSNormalization: scale's " + std::to_string(scale.numel()) +
                     " values do not tile the " + std::to_string(layout.width) +
                     " normalised elements of a row");
  const double epsilon = attrs.GetFloat("epsilon", 1e-5);
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  Tensor rstd = args.num_outputs >= 2 ? NewOutput(ctx, layout.stats_shape, DType::kFloat32)
                                      : NewExtra(ctx, layout.stats_shape, DType::kFloat32);
  RmsNormRows(layout, epsilon, x.data(), scale, y, rstd);
  return OutputWithSavedExtras(std::move(y), args.num_outputs, {{"invstd", std::move(rstd)}});
}

// _fused_rms_norm_backward (RmsNormRowsBackward).
Expected<InputGradients> RmsNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "RMSNormalization";
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "saved input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "saved input"));
  MEMPLAN_TRY(Tensor rstd, SavedOutputOrExtra(args, 1, "invstd", kOp));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, kOp));
  MEMPLAN_TRY(RowLayout layout, RowsOf(AttributesOf(args.attributes), x.shape(), kOp));
  const int64_t entries = scale.numel();
  Tensor dx = args.NeedsGrad(0) ? NewOverwrittenInputGradient(ctx, args, 0) : Tensor();
  Tensor dscale = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  std::vector<double> scale_sum(static_cast<size_t>(entries), 0.0);
  RmsNormRowsBackward(layout, dy.data(), x.data(), rstd.data(), scale,
                      dx.defined() ? dx.mutable_data() : nullptr, scale_sum);
  if (dscale.defined())
    for (int64_t e = 0; e < entries; ++e)
      dscale.mutable_data()[e] = static_cast<float>(scale_sum[static_cast<size_t>(e)]);
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dscale), Tensor());
}

// ONNX Runtime's com.microsoft SkipLayerNormalization (input, skip, gamma, beta?, bias?) and
// SkipSimplifiedLayerNormalization (input, skip, gamma, bias?): the layer norm / RMS norm of
// sum = input + skip (+ bias) over the last axis H. skip is input's shape or repeats over its
// leading dims ([1, S, H] or [S, H] for [B, S, H]); gamma, beta and bias are [H]. Outputs output,
// mean?, inv_std_var? and input_skip_bias_sum? (the sum); the RMS form computes no mean (a
// declared mean output is zeros). epsilon defaults to ORT's 1e-12.
//
// What the registry saves (graph/ops/rms_norm_ops.cc SkipNormSchema): the sum, gamma, beta (the
// layer norm, when given) and the statistics, each the declared output or else the extra
// ("input_skip_bias_sum", "mean", "invstd" for the registry's rstd). Backward is the norm's at
// the sum (LayerNormRowsBackward / RmsNormRowsBackward) plus the gradient of a declared sum
// output (the residual the next layer reads): that is input's, skip's summed over its repeats,
// and bias's summed over rows.
struct SkipNormOp {
  std::string_view name;
  bool rms;
  size_t bias;  // the bias input's slot
};
constexpr SkipNormOp kSkipLayerNorm = {"SkipLayerNormalization", false, 4};
constexpr SkipNormOp kSkipSimplifiedLayerNorm = {"SkipSimplifiedLayerNormalization", true, 3};
constexpr size_t kSkipSumOutput = 3, kSkipMeanOutput = 1, kSkipInvStdOutput = 2;

// Rows of H over the last axis of `x`, with the checks of skip and the [H] inputs.
Expected<RowLayout> SkipRowsOf(const SkipNormOp& op, const TensorShape& x,
                               const TensorShape& skip) {
  MEMPLAN_TRY(RowLayout layout, RowsOf(Attributes(), x, op.name));
  const int64_t skip_numel = NumElements(skip);
  if (skip.empty() || skip.back() != layout.width || skip_numel == 0 ||
      NumElements(x) % skip_numel != 0)
    return MakeError(std::string(op.name) + ": skip " + ShapeToString(skip) + " is neither input " +
                     ShapeToString(x) + "'s shape nor repeated over it");
  return layout;
}

Status CheckHidden(const SkipNormOp& op, const Tensor& t, const RowLayout& layout,
                   std::string_view role) {
  if (t.defined() && t.numel() != layout.width)
    return MakeError(std::string(op.name) + ": " + std::string(role) + " has " +
                     std::to_string(t.numel()) + " values for a hidden size of " +
                     std::to_string(layout.width));
  return OkStatus();
}

Expected<ForwardResult> SkipNormForward(const SkipNormOp& op, const KernelContext& ctx,
                                        const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, op.name, "input"));
  MEMPLAN_TRY(Tensor skip, RequireTensor(args.inputs, 1, op.name, "input"));
  MEMPLAN_TRY(Tensor gamma, RequireTensor(args.inputs, 2, op.name, "input"));
  const Tensor beta = op.rms ? Tensor() : OptionalTensor(args.inputs, 3);
  const Tensor bias = OptionalTensor(args.inputs, op.bias);
  MEMPLAN_TRY(RowLayout layout, SkipRowsOf(op, x.shape(), skip.shape()));
  MEMPLAN_RETURN_IF_ERROR(CheckHidden(op, gamma, layout, "gamma"));
  MEMPLAN_RETURN_IF_ERROR(CheckHidden(op, beta, layout, "beta"));
  MEMPLAN_RETURN_IF_ERROR(CheckHidden(op, bias, layout, "bias"));
  const double epsilon = AttributesOf(args.attributes).GetFloat("epsilon", 1e-12);
  // Each declared output and the extra of the same name are one buffer.
  auto output_or_extra = [&](size_t output, const TensorShape& shape, DType dtype) {
    return args.num_outputs > static_cast<int>(output) ? NewOutput(ctx, shape, dtype)
                                                       : NewExtra(ctx, shape, dtype);
  };
  Tensor sum = output_or_extra(kSkipSumOutput, x.shape(), x.dtype());
  const int64_t skip_numel = skip.numel();
  for (int64_t i = 0; i < x.numel(); ++i)
    sum.mutable_data()[i] = x.data()[i] + skip.data()[i % skip_numel] +
                            (bias.defined() ? bias.data()[i % layout.width] : 0.0f);
  RoundToOwnDType(sum);
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  Tensor mean = output_or_extra(kSkipMeanOutput, layout.stats_shape, DType::kFloat32);
  Tensor invstd = output_or_extra(kSkipInvStdOutput, layout.stats_shape, DType::kFloat32);
  if (op.rms)
    RmsNormRows(layout, epsilon, sum.data(), gamma, y, invstd);
  else
    LayerNormRows(layout, epsilon, sum.data(), gamma, beta, y, mean, invstd);
  RoundToOwnDType(y);
  ForwardResult result;
  result.outputs.push_back(std::move(y));
  const Tensor declared[] = {mean, invstd, sum};
  for (int j = 1; j < args.num_outputs && j <= 3; ++j) result.outputs.push_back(declared[j - 1]);
  result.extras["input_skip_bias_sum"] = std::move(sum);
  if (!op.rms) result.extras["mean"] = std::move(mean);
  result.extras["invstd"] = std::move(invstd);
  return result;
}

Expected<InputGradients> SkipNormBackward(const SkipNormOp& op, const KernelContext& ctx,
                                          const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, op.name, "output gradient"));
  MEMPLAN_TRY(Tensor sum, SavedOutputOrExtra(args, kSkipSumOutput, "input_skip_bias_sum", op.name));
  MEMPLAN_TRY(Tensor gamma, RequireTensor(args.inputs, 2, op.name, "saved input"));
  Tensor mean;
  if (!op.rms) {
    MEMPLAN_TRY(mean, SavedOutputOrExtra(args, kSkipMeanOutput, "mean", op.name));
  }
  MEMPLAN_TRY(Tensor invstd, SavedOutputOrExtra(args, kSkipInvStdOutput, "invstd", op.name));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, op.name));
  MEMPLAN_TRY(RowLayout layout, SkipRowsOf(op, args.input_shapes[0], args.input_shapes[1]));
  if (sum.numel() != dy.numel() || gamma.numel() != layout.width)
    return MakeError(std::string(op.name) + ": the saved sum " + ShapeToString(sum.shape()) +
                     " or gamma does not match the output gradient " + ShapeToString(dy.shape()));
  // The sum's gradient: the norm's, plus the declared sum output's own.
  Tensor dsum = NewOverwrittenInputGradient(ctx, args, 0);
  std::vector<double> gamma_sum(static_cast<size_t>(layout.width), 0.0);
  std::vector<double> beta_sum(gamma_sum.size(), 0.0);
  if (op.rms)
    RmsNormRowsBackward(layout, dy.data(), sum.data(), invstd.data(), gamma, dsum.mutable_data(),
                        gamma_sum);
  else
    LayerNormRowsBackward(layout, dy.data(), sum.data(), mean.data(), invstd.data(), gamma.data(),
                          dsum.mutable_data(), gamma_sum, beta_sum);
  const Tensor dresidual = OptionalTensor(args.grad_outputs, kSkipSumOutput);
  if (dresidual.defined()) {
    if (dresidual.numel() != dsum.numel())
      return MakeError(std::string(op.name) + ": input_skip_bias_sum's gradient " +
                       ShapeToString(dresidual.shape()) + " is not the input's shape");
    for (int64_t i = 0; i < dsum.numel(); ++i) dsum.mutable_data()[i] += dresidual.data()[i];
  }
  // skip's and bias's gradients sum dsum over skip's repeats and over rows.
  auto reduced = [&](size_t input, int64_t period) {
    Tensor d = NewInputGradient(ctx, args, input);
    std::vector<double> total(static_cast<size_t>(period), 0.0);
    for (int64_t i = 0; i < dsum.numel(); ++i)
      total[static_cast<size_t>(i % period)] += dsum.data()[i];
    for (int64_t e = 0; e < period; ++e)
      d.mutable_data()[e] = static_cast<float>(total[static_cast<size_t>(e)]);
    RoundToOwnDType(d);
    return d;
  };
  auto per_hidden = [&](const std::vector<double>& total, size_t input) {
    Tensor d = NewInputGradient(ctx, args, input);
    for (int64_t e = 0; e < layout.width; ++e)
      d.mutable_data()[e] = static_cast<float>(total[static_cast<size_t>(e)]);
    RoundToOwnDType(d);
    return d;
  };
  if (args.NeedsGrad(1)) grads[1] = reduced(1, NumElements(args.input_shapes[1]));
  if (args.NeedsGrad(2)) grads[2] = per_hidden(gamma_sum, 2);
  if (!op.rms && args.InputPresent(3) && args.NeedsGrad(3)) grads[3] = per_hidden(beta_sum, 3);
  if (args.InputPresent(op.bias) && args.NeedsGrad(op.bias))
    grads[op.bias] = reduced(op.bias, layout.width);
  if (args.NeedsGrad(0)) {
    PutRoundedGradient(grads, 0, std::move(dsum));
  }
  return grads;
}

}  // namespace

void RegisterRowNormKernels(KernelRegistry& registry) {
  registry.Register("LayerNormalization", &LayerNormForward, &LayerNormBackward);
  registry.Register("RMSNormalization", &RmsNormForward, &RmsNormBackward);
  // ONNX Runtime's contrib op is the same op (X, scale; axis, epsilon; Y, inv_std_var?) in both
  // domains it registers: ORT's fusion writes the default-domain one.
  registry.Register("SimplifiedLayerNormalization", &RmsNormForward, &RmsNormBackward);
  registry.Register("SimplifiedLayerNormalization", &RmsNormForward, &RmsNormBackward,
                    "com.microsoft");
  registry.Register(kSkipLayerNorm.name, &ForwardFor<kSkipLayerNorm, SkipNormForward>,
                    &BackwardFor<kSkipLayerNorm, SkipNormBackward>, "com.microsoft");
  registry.Register(kSkipSimplifiedLayerNorm.name,
                    &ForwardFor<kSkipSimplifiedLayerNorm, SkipNormForward>,
                    &BackwardFor<kSkipSimplifiedLayerNorm, SkipNormBackward>, "com.microsoft");
}

}  // namespace memplan
