// Dropout with a seeded mask, Bernoulli (stochastic depth's mask, dropout written by hand) and
// the RandomUniformLike / RandomNormalLike draws.
// The draws come from a counter-based generator (SplitMix64 of seed + element index), so they
// depend only on the seed and the element, which is what lets a recomputed forward reproduce
// them exactly.

#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/counter_rng.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// The drop probability: input 1 (opset 12+) or the `ratio` attribute (older), default 0.5.
Expected<double> DropRatio(const Attributes* attributes, const std::vector<Tensor>& inputs) {
  double ratio = AttributesOf(attributes).GetFloat("ratio", 0.5);
  if (inputs.size() > 1 && inputs[1].defined()) ratio = inputs[1].data()[0];
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    return MakeError("Dropout: ratio " + std::to_string(ratio) + " is outside [0, 1)");
  }
  return ratio;
}

Expected<ForwardResult> DropoutForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Dropout", "input"));
  MEMPLAN_TRY(double ratio, DropRatio(args.attributes, args.inputs));
  // The mask is the optional ONNX output and the saved extra at once: one buffer.
  Tensor mask = args.num_outputs >= 2 ? NewOutput(ctx, x.shape(), DType::kBool)
                                      : NewExtra(ctx, x.shape(), DType::kBool);
  Tensor y = NewOutput(ctx, x.shape(), x.dtype());
  const bool active = ctx.training && ratio > 0.0;
  const auto scale = static_cast<float>(1.0 / (1.0 - ratio));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = !active || DropoutUniform(ctx.seed, i) >= ratio;
    mask.mutable_data()[i] = keep ? 1.0f : 0.0f;
    y.mutable_data()[i] = keep ? (active ? x.data()[i] * scale : x.data()[i]) : 0.0f;
  }
  return OutputWithSavedExtras(std::move(y), args.num_outputs, {{"mask", std::move(mask)}});
}

// dx = dy * mask / (1 - ratio), the scale recomputed from the ratio (a constant input or an
// attribute), like native_dropout_backward's scalar argument.
Expected<InputGradients> DropoutBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "Dropout", [&](const Tensor& dy) -> Expected<Tensor> {
    if (args.InputPresent(1) && !(args.inputs.size() > 1 && args.inputs[1].defined())) {
      return MakeError("Dropout: backward needs the ratio input (a constant)");
    }
    MEMPLAN_TRY(double ratio, DropRatio(args.attributes, args.inputs));
    Tensor dx = NewInputGradient(ctx, args, 0);
    // p == 0: PyTorch returns the input and saves no mask (the registry's DropoutSaved), so the
    // gradient is the output's, read from nothing forward kept.
    if (ratio == 0.0) {
      for (int64_t i = 0; i < dx.numel(); ++i) dx.mutable_data()[i] = dy.data()[i];
      return dx;
    }
    MEMPLAN_TRY(Tensor mask, SavedOutputOrExtra(args, 1, "mask", "Dropout"));
    const bool active = ctx.training;
    const auto scale = static_cast<float>(active ? 1.0 / (1.0 - ratio) : 1.0);
    for (int64_t i = 0; i < dx.numel(); ++i) {
      dx.mutable_data()[i] = dy.data()[i] * mask.data()[i] * scale;
    }
    return dx;
  });
}

// The random draws' result type: the `dtype` attribute's, else the input's.
Expected<DType> DrawDType(const Attributes* attributes, DType input, std::string_view op) {
  const Attributes& attrs = AttributesOf(attributes);
  if (!attrs.Has("dtype")) return input;
  const int64_t code = attrs.GetInt("dtype", 0);
  const std::optional<DType> wanted = DTypeFromOnnx(static_cast<int32_t>(code));
  if (!wanted) return MakeError(std::string(op) + ": unknown dtype " + std::to_string(code));
  return *wanted;
}

// Bernoulli(p): 1 with probability p[i], else 0, in the `dtype` attribute's type (else p's). The
// executor's seed (per node and micro-batch) replaces the node's own `seed` attribute, so a
// recomputed forward draws the same values. With the draws off (ctx.training false: verify's
// accumulation check, as for Dropout) every element is 1 where p > 0: the mask that keeps all.
Expected<ForwardResult> BernoulliForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor p, RequireTensor(args.inputs, 0, "Bernoulli", "input"));
  MEMPLAN_TRY(DType dtype, DrawDType(args.attributes, p.dtype(), "Bernoulli"));
  Tensor y = NewOverwrittenOutput(ctx, p.shape(), dtype);
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double probability = p.data()[i];
    if (!(probability >= 0.0 && probability <= 1.0))
      return MakeError("Bernoulli: probability " + std::to_string(probability) +
                       " is outside [0, 1]");
    const bool one = ctx.training ? DropoutUniform(ctx.seed, i) < probability : probability > 0.0;
    y.mutable_data()[i] = one ? 1.0f : 0.0f;
  }
  return SingleOutput(std::move(y));
}

// RandomUniformLike (U[low, high), defaults 0 and 1) and RandomNormalLike (N(mean, scale^2), Box-
// Muller over two uniform draws): input's shape, the `dtype` attribute's type (else input's),
// seeded by the executor like Bernoulli. With the draws off (verify's accumulation check) every
// element is the distribution's mean, so split and whole batches compute the same.
template <bool kNormal>
Expected<ForwardResult> RandomLikeForward(const KernelContext& ctx, const ForwardArgs& args) {
  const char* op = kNormal ? "RandomNormalLike" : "RandomUniformLike";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, op, "input"));
  MEMPLAN_TRY(DType dtype, DrawDType(args.attributes, x.dtype(), op));
  const Attributes& attrs = AttributesOf(args.attributes);
  const double a = attrs.GetFloat(kNormal ? "mean" : "low", 0.0);
  const double b = attrs.GetFloat(kNormal ? "scale" : "high", 1.0);
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), dtype);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = kNormal ? a : (a + b) / 2.0;
    if (ctx.training) {
      const double u = DropoutUniform(ctx.seed, 2 * i);
      if (kNormal) {
        const double u2 = 1.0 - DropoutUniform(ctx.seed, 2 * i + 1);  // (0, 1]: log is finite
        v = a + b * std::sqrt(-2.0 * std::log(u2)) * std::cos(2.0 * std::numbers::pi * u);
      } else {
        v = a + (b - a) * u;
      }
    }
    y.mutable_data()[i] = static_cast<float>(v);
  }
  return RoundedSingleOutput(std::move(y));
}

}  // namespace

void RegisterDropoutKernels(KernelRegistry& registry) {
  registry.Register("Dropout", &DropoutForward, &DropoutBackward);
  registry.Register("Bernoulli", &BernoulliForward, nullptr);  // no gradient
  registry.Register("RandomUniformLike", &RandomLikeForward<false>, nullptr);
  registry.Register("RandomNormalLike", &RandomLikeForward<true>, nullptr);
}

}  // namespace memplan
