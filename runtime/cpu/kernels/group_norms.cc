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

// The C/G channels of each group normalised together over their spatial elements, then scale and
// B per channel or per group. InstanceNormalization is the case G = C.
struct GroupLayout {
  ChannelLayout channels;
  int64_t groups = 1;
  int64_t PerGroup() const { return channels.channels / groups; }
  int64_t Width() const { return PerGroup() * channels.spatial; }  // elements per group
  int64_t Count() const { return channels.batch * groups; }        // (n, group) pairs
  // The scale/bias entry of channel c: per channel, or per group when there are G of them.
  int64_t AffineIndex(int64_t c, int64_t entries) const {
    return entries == channels.channels ? c : c / PerGroup();
  }
};

// y = scale * (x - mean) * invstd + B per group of `layout`; mean and invstd get one entry per
// (n, group), in that order. scale and bias have `entries` values (C, or G).
void GroupNormRows(const GroupLayout& layout, double epsilon, const float* x, const float* scale,
                   const float* bias, int64_t entries, float* y, float* mean, float* invstd) {
  const int64_t width = layout.Width(), per_group = layout.PerGroup();
  const int64_t spatial = layout.channels.spatial;
  const ChannelLayout group_layout{1, layout.Count(), width};
  ParallelFor(layout.Count(), ChannelGrain(group_layout), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* p = x + r * width;
      const auto [m, inv] = MomentsOf(p, width, epsilon);
      mean[r] = static_cast<float>(m);
      invstd[r] = static_cast<float>(inv);
      const int64_t first_channel = (r % layout.groups) * per_group;
      for (int64_t k = 0; k < per_group; ++k) {
        const int64_t e = layout.AffineIndex(first_channel + k, entries);
        const float a = static_cast<float>(scale[e] * inv);
        const float b = static_cast<float>(bias[e] - m * scale[e] * inv);
        const float* in = p + k * spatial;
        float* out = y + r * width + k * spatial;
        for (int64_t s = 0; s < spatial; ++s) out[s] = a * in[s] + b;
      }
    }
  });
}

// native_group_norm_backward: per group, dxhat = dY * scale_c and
// dX = invstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)); the scale and B gradients sum each
// channel's (or group's) planes in batch order (deterministic). Null outputs are not wanted.
void GroupNormRowsBackward(const GroupLayout& layout, const float* dy, const float* x,
                           const float* mean, const float* invstd, const float* scale,
                           int64_t entries, float* dx, float* dscale, float* dbias) {
  const int64_t width = layout.Width(), per_group = layout.PerGroup();
  const int64_t spatial = layout.channels.spatial, channels = layout.channels.channels;
  // Per (n, channel): sum of dY and of dY * xhat, reduced into scale/B entries afterwards.
  std::vector<double> plane_dy(static_cast<size_t>(layout.channels.batch * channels));
  std::vector<double> plane_dy_xhat(plane_dy.size());
  const ChannelLayout group_layout{1, layout.Count(), width};
  ParallelFor(layout.Count(), ChannelGrain(group_layout), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const double m = mean[r], inv = invstd[r];
      const int64_t first_channel = (r % layout.groups) * per_group;
      double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
      for (int64_t k = 0; k < per_group; ++k) {
        const double w = scale[layout.AffineIndex(first_channel + k, entries)];
        const float* g = dy + r * width + k * spatial;
        const float* p = x + r * width + k * spatial;
        double a = 0.0, b = 0.0;
        for (int64_t s = 0; s < spatial; ++s) {
          const double xhat = (p[s] - m) * inv;
          a += g[s];
          b += g[s] * xhat;
        }
        plane_dy[static_cast<size_t>(r * per_group + k)] = a;
        plane_dy_xhat[static_cast<size_t>(r * per_group + k)] = b;
        sum_dxhat += w * a;
        sum_dxhat_xhat += w * b;
      }
      if (dx == nullptr) continue;
      const auto count = static_cast<double>(width);
      for (int64_t k = 0; k < per_group; ++k) {
        const double w = scale[layout.AffineIndex(first_channel + k, entries)];
        const float* g = dy + r * width + k * spatial;
        const float* p = x + r * width + k * spatial;
        float* out = dx + r * width + k * spatial;
        for (int64_t s = 0; s < spatial; ++s) {
          const double xhat = (p[s] - m) * inv;
          out[s] = static_cast<float>(
              inv * (w * g[s] - sum_dxhat / count - xhat * sum_dxhat_xhat / count));
        }
      }
    }
  });
  std::vector<double> scale_sum(static_cast<size_t>(entries)), bias_sum(scale_sum.size());
  for (int64_t n = 0; n < layout.channels.batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const auto e = static_cast<size_t>(layout.AffineIndex(c, entries));
      scale_sum[e] += plane_dy_xhat[static_cast<size_t>(n * channels + c)];
      bias_sum[e] += plane_dy[static_cast<size_t>(n * channels + c)];
    }
  }
  for (int64_t e = 0; e < entries; ++e) {
    if (dscale != nullptr) dscale[e] = static_cast<float>(scale_sum[static_cast<size_t>(e)]);
    if (dbias != nullptr) dbias[e] = static_cast<float>(bias_sum[static_cast<size_t>(e)]);
  }
}

float* DataOrNull(Tensor& t) { return t.defined() ? t.mutable_data() : nullptr; }

// GroupNormalization: scale and B per channel (opset 21, and what the group_norm fusion writes)
// or per group (opset 18's [G]). Keeps "mean" and "invstd" [N, G] (the registry's mean and
// rstd), as native_group_norm does.
Expected<GroupLayout> GroupsOf(const Attributes& attrs, const TensorShape& x, int64_t entries) {
  constexpr std::string_view kOp = "GroupNormalization";
  GroupLayout layout;
  MEMPLAN_TRY(layout.channels, LayoutOf(x, kOp));
  layout.groups = attrs.GetInt("num_groups", 0);
  if (layout.groups <= 0 || layout.channels.channels % layout.groups != 0)
    return MakeError("GroupNormalization: num_groups " + std::to_string(layout.groups) +
                     " does not divide " + std::to_string(layout.channels.channels) + " channels");
  if (entries != layout.channels.channels && entries != layout.groups)
    return MakeError("GroupNormalization: scale has " + std::to_string(entries) +
                     " entries, neither the channels nor the groups");
  return layout;
}

Expected<ForwardResult> GroupNormForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = "GroupNormalization";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "input"));
  MEMPLAN_TRY(Tensor bias, RequireTensor(args.inputs, 2, kOp, "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  MEMPLAN_TRY(GroupLayout layout, GroupsOf(attrs, x.shape(), scale.numel()));
  if (bias.numel() != scale.numel()) return MakeError("GroupNormalization: B and scale differ");
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  Tensor mean = NewExtra(ctx, {layout.channels.batch, layout.groups}, DType::kFloat32);
  Tensor invstd = NewExtra(ctx, {layout.channels.batch, layout.groups}, DType::kFloat32);
  GroupNormRows(layout, attrs.GetFloat("epsilon", 1e-5), x.data(), scale.data(), bias.data(),
                scale.numel(), y.mutable_data(), mean.mutable_data(), invstd.mutable_data());
  return OutputWithSavedExtras(std::move(y), args.num_outputs,
                               {{"mean", std::move(mean)}, {"invstd", std::move(invstd)}});
}

Expected<InputGradients> GroupNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "GroupNormalization";
  MEMPLAN_TRY(const SavedNormalization saved,
              ReadSavedNormalization(args, kOp, StatisticsAt::kExtras));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  const int64_t entries = saved.scale.numel();
  MEMPLAN_TRY(GroupLayout layout,
              GroupsOf(AttributesOf(args.attributes), saved.x.shape(), entries));
  Tensor dx = args.NeedsGrad(0) ? NewOverwrittenInputGradient(ctx, args, 0) : Tensor();
  Tensor dscale = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor dbias = args.NeedsGrad(2) ? NewInputGradient(ctx, args, 2) : Tensor();
  GroupNormRowsBackward(layout, saved.dy.data(), saved.x.data(), saved.mean.data(),
                        saved.invstd.data(), saved.scale.data(), entries, DataOrNull(dx),
                        DataOrNull(dscale), DataOrNull(dbias));
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dscale), std::move(dbias));
}

// InstanceNormalization: group normalization with one channel per group (G = C), scale and B per
// channel. PyTorch runs it as batch_norm on [1, N*C, ...] with the weight repeated N times, and
// keeps what that keeps (the registry's saved set): "repeated_weight", "save_mean" and
// "save_invstd", [N*C] each (the kernel's "mean" and "invstd", runtime/compute_steps.cc). The
// statistics are [N, C] row-major, the same values GroupNormRows writes for G = C.
Expected<GroupLayout> InstancesOf(const TensorShape& x) {
  GroupLayout layout;
  MEMPLAN_TRY(layout.channels, LayoutOf(x, "InstanceNormalization"));
  if (layout.channels.channels <= 0)
    return MakeError("InstanceNormalization: input has no channels");
  layout.groups = layout.channels.channels;
  return layout;
}

Expected<ForwardResult> InstanceNormForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = "InstanceNormalization";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(Tensor scale, RequireTensor(args.inputs, 1, kOp, "input"));
  MEMPLAN_TRY(Tensor bias, RequireTensor(args.inputs, 2, kOp, "input"));
  MEMPLAN_TRY(GroupLayout layout, InstancesOf(x.shape()));
  const int64_t channels = layout.channels.channels, planes = layout.Count();
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(scale, channels, kOp, "scale"));
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(bias, channels, kOp, "B"));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  Tensor repeated = NewExtra(ctx, {planes}, scale.dtype());
  Tensor mean = NewExtra(ctx, {planes}, DType::kFloat32);
  Tensor invstd = NewExtra(ctx, {planes}, DType::kFloat32);
  for (int64_t r = 0; r < planes; ++r) repeated.mutable_data()[r] = scale.data()[r % channels];
  GroupNormRows(layout, AttributesOf(args.attributes).GetFloat("epsilon", 1e-5), x.data(),
                scale.data(), bias.data(), channels, y.mutable_data(), mean.mutable_data(),
                invstd.mutable_data());
  return OutputWithSavedExtras(std::move(y), args.num_outputs,
                               {{"repeated_weight", std::move(repeated)},
                                {"mean", std::move(mean)},
                                {"invstd", std::move(invstd)}});
}

// The weight backward reads is the saved repeated weight, whose first C entries are the scale.
Expected<InputGradients> InstanceNormBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = "InstanceNormalization";
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "saved input"));
  MEMPLAN_TRY(Tensor repeated, RequireExtra(args, "repeated_weight", kOp));
  MEMPLAN_TRY(Tensor mean, RequireExtra(args, "mean", kOp));
  MEMPLAN_TRY(Tensor invstd, RequireExtra(args, "invstd", kOp));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, kOp));
  MEMPLAN_TRY(GroupLayout layout, InstancesOf(x.shape()));
  const int64_t channels = layout.channels.channels;
  MEMPLAN_RETURN_IF_ERROR(CheckPerChannel(repeated, layout.Count(), kOp, "repeated_weight"));
  Tensor dx = args.NeedsGrad(0) ? NewOverwrittenInputGradient(ctx, args, 0) : Tensor();
  Tensor dscale = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor dbias = args.NeedsGrad(2) ? NewInputGradient(ctx, args, 2) : Tensor();
  GroupNormRowsBackward(layout, dy.data(), x.data(), mean.data(), invstd.data(), repeated.data(),
                        channels, DataOrNull(dx), DataOrNull(dscale), DataOrNull(dbias));
  return WithRoundedGradients(std::move(grads), std::move(dx), std::move(dscale), std::move(dbias));
}

}  // namespace

void RegisterGroupNormKernels(KernelRegistry& registry) {
  registry.Register("InstanceNormalization", &InstanceNormForward, &InstanceNormBackward);
  registry.Register("GroupNormalization", &GroupNormForward, &GroupNormBackward);
}

}  // namespace memplan
