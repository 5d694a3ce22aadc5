// BatchNormalization: training normalises each channel over the batch (batch statistics, the
// running statistics updated as PyTorch does); inference uses the given statistics. Keeps "mean"
// and "invstd" (fp32, [C]) for backward, as native_batch_norm does.

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

// One channel's statistics over the batch: the biased variance normalises it, the unbiased one
// updates the running variance (as PyTorch does).
struct BatchMoments {
  double mean = 0.0, biased_variance = 0.0, unbiased_variance = 0.0;
};
BatchMoments ChannelMoments(const float* x, const ChannelLayout& layout, int64_t c) {
  const int64_t count = layout.Count();
  double sum = 0.0;
  for (int64_t n = 0; n < layout.batch; ++n) {
    const float* p = x + layout.Offset(n, c);
    for (int64_t s = 0; s < layout.spatial; ++s) sum += p[s];
  }
  const double m = sum / static_cast<double>(count);
  double squares = 0.0;
  for (int64_t n = 0; n < layout.batch; ++n) {
    const float* p = x + layout.Offset(n, c);
    for (int64_t s = 0; s < layout.spatial; ++s) squares += (p[s] - m) * (p[s] - m);
  }
  return {m, squares / static_cast<double>(count), squares / static_cast<double>(count - 1)};
}

Expected<ForwardResult> BatchNormForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = "BatchNormalization";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "input"));
  MEMPLAN_TRY(Tensor bias, RequireTensor(args.inputs, 2, kOp, "input"));
  MEMPLAN_TRY(Tensor running_mean, RequireTensor(args.inputs, 3, kOp, "input"));
  MEMPLAN_TRY(Tensor running_var, RequireTensor(args.inputs, 4, kOp, "input"));
  MEMPLAN_TRY(ChannelLayout layout, LayoutOf(x.shape(), kOp));
  const int64_t channels = layout.channels;
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(scale, channels, kOp, "scale"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(bias, channels, kOp, "B"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(running_mean, channels, kOp, "input_mean"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(running_var, channels, kOp, "input_var"));
  const Attributes& attrs = AttributesOf(args.attributes);
  const double epsilon = attrs.GetFloat("epsilon", 1e-5);
  // ONNX momentum weighs the old running value (PyTorch's momentum m exports as 1 - m).
  const double momentum = attrs.GetFloat("momentum", 0.9);
  const int64_t count = layout.Count();
  if (ctx.training && count < 2) {
    return MakeError("BatchNormalization: training needs more than one value per channel");
  }

  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());  // every channel's planes
  Tensor mean = NewExtra(ctx, {channels}, DType::kFloat32);
  Tensor invstd = NewExtra(ctx, {channels}, DType::kFloat32);
  Tensor new_mean, new_var;
  if (ctx.training && args.num_outputs >= 3) {
    new_mean = NewOutput(ctx, {channels}, running_mean.dtype());
    new_var = NewOutput(ctx, {channels}, running_var.dtype());
  }
  ParallelFor(channels, ChannelGrain(layout), [&](int64_t first_channel, int64_t last_channel) {
    for (int64_t c = first_channel; c < last_channel; ++c) {
      double m = running_mean.data()[c], var = running_var.data()[c];
      if (ctx.training) {
        const BatchMoments batch = ChannelMoments(x.data(), layout, c);
        m = batch.mean;
        var = batch.biased_variance;
        if (new_mean.defined()) {
          new_mean.mutable_data()[c] =
              static_cast<float>(momentum * running_mean.data()[c] + (1.0 - momentum) * m);
          new_var.mutable_data()[c] = static_cast<float>(
              momentum * running_var.data()[c] + (1.0 - momentum) * batch.unbiased_variance);
        }
      }
      const double inv = 1.0 / std::sqrt(var + epsilon);
      mean.mutable_data()[c] = static_cast<float>(m);
      invstd.mutable_data()[c] = static_cast<float>(inv);
      const float a = static_cast<float>(scale.data()[c] * inv);
      const float b = static_cast<float>(bias.data()[c] - m * scale.data()[c] * inv);
      for (int64_t n = 0; n < layout.batch; ++n) {
        const float* p = x.data() + layout.Offset(n, c);
        float* q = y.mutable_data() + layout.Offset(n, c);
        for (int64_t s = 0; s < layout.spatial; ++s) q[s] = a * p[s] + b;
      }
    }
  });
  RoundToOwnDType(y);
  ForwardResult result;
  result.outputs.push_back(std::move(y));
  if (args.num_outputs >= 3) {
    // Inference mode has no running-statistics outputs to produce; pass the inputs through.
    result.outputs.push_back(new_mean.defined() ? new_mean : running_mean);
    result.outputs.push_back(new_var.defined() ? new_var : running_var);
  }
  result.extras["mean"] = std::move(mean);
  result.extras["invstd"] = std::move(invstd);
  return result;
}

Expected<InputGradients> BatchNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "BatchNormalization";
  MEMPLAN_TRY(const SavedNormalization saved,
              ReadSavedNormalization(args, kOp, StatisticsAt::kExtras));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  MEMPLAN_TRY(ChannelLayout layout, LayoutOf(saved.x.shape(), kOp));
  // Every channel's planes (dx) and entries (dscale, dbias) are written.
  Tensor dx = args.NeedsGrad(0) ? NewOverwrittenInputGradient(ctx, args, 0) : Tensor();
  Tensor dscale = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor dbias = args.NeedsGrad(2) ? NewInputGradient(ctx, args, 2) : Tensor();
  const auto count = static_cast<double>(layout.Count());
  ParallelFor(
      layout.channels, ChannelGrain(layout), [&](int64_t first_channel, int64_t last_channel) {
        for (int64_t c = first_channel; c < last_channel; ++c) {
          const double m = saved.mean.data()[c], inv = saved.invstd.data()[c];
          double sum_dy = 0.0, sum_dy_xhat = 0.0;
          for (int64_t n = 0; n < layout.batch; ++n) {
            const float* g = saved.dy.data() + layout.Offset(n, c);
            const float* p = saved.x.data() + layout.Offset(n, c);
            for (int64_t s = 0; s < layout.spatial; ++s) {
              sum_dy += g[s];
              sum_dy_xhat += g[s] * (p[s] - m) * inv;
            }
          }
          if (dscale.defined()) dscale.mutable_data()[c] = static_cast<float>(sum_dy_xhat);
          if (dbias.defined()) dbias.mutable_data()[c] = static_cast<float>(sum_dy);
          if (!dx.defined()) continue;
          const double k = saved.scale.data()[c] * inv;
          for (int64_t n = 0; n < layout.batch; ++n) {
            const float* g = saved.dy.data() + layout.Offset(n, c);
            const float* p = saved.x.data() + layout.Offset(n, c);
            float* out = dx.mutable_data() + layout.Offset(n, c);
            for (int64_t s = 0; s < layout.spatial; ++s) {
              if (ctx.training) {
                // Batch statistics depend on x: dx = k (dy - mean(dy) - xhat mean(dy xhat)).
                const double xhat = (p[s] - m) * inv;
                out[s] =
                    static_cast<float>(k * (g[s] - sum_dy / count - xhat * sum_dy_xhat / count));
              } else {
                out[s] = static_cast<float>(k * g[s]);
              }
            }
          }
        }
      });
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dscale), std::move(dbias));
}

}  // namespace

void RegisterBatchNormKernels(KernelRegistry& registry) {
  registry.Register("BatchNormalization", &BatchNormForward, &BatchNormBackward);
}

}  // namespace memplan
