// BatchNormalization (training: batch statistics, running-statistics update; inference: the
// given statistics) and LayerNormalization. Both keep "mean" and "invstd" (fp32) for backward,
// as PyTorch's native_batch_norm / native_layer_norm do.

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

// A channel-major view of [N, C, spatial...]: element (n, c, s) is at (n * C + c) * S + s.
struct ChannelLayout {
  int64_t batch = 0, channels = 0, spatial = 1;
  int64_t Count() const { return batch * spatial; }  // elements per channel
  int64_t Offset(int64_t n, int64_t c) const { return (n * channels + c) * spatial; }
};

// Channels handed to one thread: each owns its statistics and its slice of every output.
int64_t ChannelGrain(const ChannelLayout& layout) {
  return std::max<int64_t>(
      1, ElementwiseGrain(/*cost_per_item=*/4) / std::max<int64_t>(1, layout.Count()));
}

Expected<ChannelLayout> LayoutOf(const TensorShape& x) {
  if (x.size() < 2) return MakeError("BatchNormalization: input must be [N, C, ...]");
  ChannelLayout layout;
  layout.batch = x[0];
  layout.channels = x[1];
  for (size_t i = 2; i < x.size(); ++i) layout.spatial *= x[i];
  return layout;
}

Status CheckPerChannel(const Tensor& t, int64_t channels, std::string_view role) {
  if (t.numel() != channels) {
    return MakeError("BatchNormalization: " + std::string(role) + " has " +
                     std::to_string(t.numel()) + " elements for " + std::to_string(channels) +
                     " channels");
  }
  return OkStatus();
}

Expected<ForwardResult> BatchNormForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = "BatchNormalization";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "input"));
  MEMPLAN_TRY(Tensor bias, RequireTensor(args.inputs, 2, kOp, "input"));
  MEMPLAN_TRY(Tensor running_mean, RequireTensor(args.inputs, 3, kOp, "input"));
  MEMPLAN_TRY(Tensor running_var, RequireTensor(args.inputs, 4, kOp, "input"));
  MEMPLAN_TRY(ChannelLayout layout, LayoutOf(x.shape()));
  const int64_t channels = layout.channels;
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(scale, channels, "scale"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(bias, channels, "B"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(running_mean, channels, "input_mean"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(running_var, channels, "input_var"));
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
      double m, var;
      if (ctx.training) {
        double sum = 0.0;
        for (int64_t n = 0; n < layout.batch; ++n) {
          const float* p = x.data() + layout.Offset(n, c);
          for (int64_t s = 0; s < layout.spatial; ++s) sum += p[s];
        }
        m = sum / static_cast<double>(count);
        double squares = 0.0;
        for (int64_t n = 0; n < layout.batch; ++n) {
          const float* p = x.data() + layout.Offset(n, c);
          for (int64_t s = 0; s < layout.spatial; ++s) squares += (p[s] - m) * (p[s] - m);
        }
        var = squares / static_cast<double>(count);  // biased: what normalises the batch
        if (new_mean.defined()) {
          // The running variance uses the unbiased estimate, as PyTorch does.
          const double unbiased = squares / static_cast<double>(count - 1);
          new_mean.mutable_data()[c] =
              static_cast<float>(momentum * running_mean.data()[c] + (1.0 - momentum) * m);
          new_var.mutable_data()[c] =
              static_cast<float>(momentum * running_var.data()[c] + (1.0 - momentum) * unbiased);
        }
      } else {
        m = running_mean.data()[c];
        var = running_var.data()[c];
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

Expected<Tensor> RequireExtra(const BackwardArgs& args, const std::string& name,
                              std::string_view op) {
  auto it = args.extras.find(name);
  if (it == args.extras.end() || !it->second.defined()) {
    return MakeError(std::string(op) + ": saved '" + name + "' from forward is missing");
  }
  return it->second;
}

// What both normalization backwards read: the output gradient, the saved input and scale, and
// forward's per-group mean and invstd.
struct SavedNormalization {
  Tensor dy, x, scale, mean, invstd;
};

Expected<SavedNormalization> ReadSavedNormalization(const BackwardArgs& args, std::string_view op) {
  SavedNormalization saved;
  MEMPLAN_TRY(saved.dy, RequireTensor(args.grad_outputs, 0, op, "output gradient"));
  MEMPLAN_TRY(saved.x, RequireTensor(args.inputs, 0, op, "saved input"));
  MEMPLAN_TRY(saved.scale, RequireTensor(args.inputs, 1, op, "saved input"));
  MEMPLAN_TRY(saved.mean, RequireExtra(args, "mean", op));
  MEMPLAN_TRY(saved.invstd, RequireExtra(args, "invstd", op));
  return saved;
}

Expected<InputGradients> BatchNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "BatchNormalization";
  MEMPLAN_TRY(const SavedNormalization saved, ReadSavedNormalization(args, kOp));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  MEMPLAN_TRY(ChannelLayout layout, LayoutOf(saved.x.shape()));
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

// LayerNormalization: rows are the dims before `axis`, each normalised over the dims from `axis`.
struct RowLayout {
  int64_t axis = 0;
  int64_t rows = 1;
  int64_t width = 1;
  TensorShape stats_shape;  // x's dims before axis, then ones (ONNX's Mean/InvStdDev shape)
};

Expected<RowLayout> RowsOf(const Attributes& attrs, const TensorShape& x) {
  RowLayout layout;
  const auto rank = static_cast<int64_t>(x.size());
  MEMPLAN_TRY(layout.axis, NormalizeAxis(attrs.GetInt("axis", -1), rank, "LayerNormalization"));
  for (int64_t i = 0; i < rank; ++i) {
    const auto d = static_cast<size_t>(i);
    (i < layout.axis ? layout.rows : layout.width) *= x[d];
    layout.stats_shape.push_back(i < layout.axis ? x[d] : 1);
  }
  return layout;
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
  for (int64_t r = 0; r < layout.rows; ++r) {
    const float* p = x.data() + r * layout.width;
    float* q = y.mutable_data() + r * layout.width;
    double sum = 0.0;
    for (int64_t i = 0; i < layout.width; ++i) sum += p[i];
    const double m = sum / static_cast<double>(layout.width);
    double squares = 0.0;
    for (int64_t i = 0; i < layout.width; ++i) squares += (p[i] - m) * (p[i] - m);
    const double inv = 1.0 / std::sqrt(squares / static_cast<double>(layout.width) + epsilon);
    mean.mutable_data()[r] = static_cast<float>(m);
    invstd.mutable_data()[r] = static_cast<float>(inv);
    for (int64_t i = 0; i < layout.width; ++i) {
      const double b = bias.defined() ? bias.data()[i] : 0.0;
      q[i] = static_cast<float>((p[i] - m) * inv * scale.data()[i] + b);
    }
  }
  return OutputWithSavedExtras(std::move(y), args.num_outputs,
                               {{"mean", std::move(mean)}, {"invstd", std::move(invstd)}});
}

Expected<InputGradients> LayerNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "LayerNormalization";
  MEMPLAN_TRY(const SavedNormalization saved, ReadSavedNormalization(args, kOp));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, kOp));
  MEMPLAN_TRY(RowLayout layout, RowsOf(AttributesOf(args.attributes), saved.x.shape()));
  Tensor dx = args.NeedsGrad(0) ? NewInputGradient(ctx, args, 0) : Tensor();
  Tensor dscale = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor dbias =
      args.InputPresent(2) && args.NeedsGrad(2) ? NewInputGradient(ctx, args, 2) : Tensor();
  // Scale/bias gradients sum over rows: accumulate in double, round once.
  std::vector<double> scale_sum(static_cast<size_t>(layout.width), 0.0);
  std::vector<double> bias_sum(static_cast<size_t>(layout.width), 0.0);
  const auto width = static_cast<double>(layout.width);
  for (int64_t r = 0; r < layout.rows; ++r) {
    const float* g = saved.dy.data() + r * layout.width;
    const float* p = saved.x.data() + r * layout.width;
    const double m = saved.mean.data()[r], inv = saved.invstd.data()[r];
    double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
    for (int64_t i = 0; i < layout.width; ++i) {
      const double xhat = (p[i] - m) * inv;
      const double dxhat = static_cast<double>(g[i]) * saved.scale.data()[i];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      scale_sum[static_cast<size_t>(i)] += g[i] * xhat;
      bias_sum[static_cast<size_t>(i)] += g[i];
    }
    if (!dx.defined()) continue;
    float* out = dx.mutable_data() + r * layout.width;
    for (int64_t i = 0; i < layout.width; ++i) {
      const double xhat = (p[i] - m) * inv;
      const double dxhat = static_cast<double>(g[i]) * saved.scale.data()[i];
      out[i] =
          static_cast<float>(inv * (dxhat - sum_dxhat / width - xhat * sum_dxhat_xhat / width));
    }
  }
  for (int64_t i = 0; i < layout.width; ++i) {
    if (dscale.defined())
      dscale.mutable_data()[i] = static_cast<float>(scale_sum[static_cast<size_t>(i)]);
    if (dbias.defined())
      dbias.mutable_data()[i] = static_cast<float>(bias_sum[static_cast<size_t>(i)]);
  }
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dscale), std::move(dbias));
}

}  // namespace

void RegisterNormalizationKernels(KernelRegistry& registry) {
  registry.Register("BatchNormalization", &BatchNormForward, &BatchNormBackward);
  registry.Register("LayerNormalization", &LayerNormForward, &LayerNormBackward);
}

}  // namespace memplan
