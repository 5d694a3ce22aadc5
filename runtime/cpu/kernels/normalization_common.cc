#include "runtime/cpu/kernels/normalization_common.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan::normalization {

int64_t ChannelGrain(const ChannelLayout& layout) {
  return std::max<int64_t>(
      1, ElementwiseGrain(/*cost_per_item=*/4) / std::max<int64_t>(1, layout.Count()));
}

Expected<ChannelLayout> LayoutOf(const TensorShape& x, std::string_view op) {
  if (x.size() < 2) return MakeError(std::string(op) + ": input must be [N, C, ...]");
  ChannelLayout layout;
  layout.batch = x[0];
  layout.channels = x[1];
  for (size_t i = 2; i < x.size(); ++i) layout.spatial *= x[i];
  return layout;
}

Status CheckPerChannel(const Tensor& t, int64_t channels, std::string_view op,
                       std::string_view role) {
  if (t.numel() != channels) {
    return MakeError(std::string(op) + ": " + std::string(role) + " has " +
                     std::to_string(t.numel()) + " elements for " + std::to_string(channels) +
                     " channels");
  }
  return OkStatus();
}

Moments MomentsOf(const float* p, int64_t n, double epsilon) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += p[i];
  const double m = sum / static_cast<double>(n);
  double squares = 0.0;
  for (int64_t i = 0; i < n; ++i) squares += (p[i] - m) * (p[i] - m);
  return {m, 1.0 / std::sqrt(squares / static_cast<double>(n) + epsilon)};
}

Expected<SavedNormalization> ReadSavedNormalization(const BackwardArgs& args, std::string_view op,
                                                    StatisticsAt statistics) {
  SavedNormalization saved;
  MEMPLAN_TRY(saved.dy, RequireTensor(args.grad_outputs, 0, op, "output gradient"));
  MEMPLAN_TRY(saved.x, RequireTensor(args.inputs, 0, op, "saved input"));
  MEMPLAN_TRY(saved.scale, RequireTensor(args.inputs, 1, op, "saved input"));
  if (statistics == StatisticsAt::kOutputsOrExtras) {
    MEMPLAN_TRY(saved.mean, SavedOutputOrExtra(args, 1, "mean", op));
    MEMPLAN_TRY(saved.invstd, SavedOutputOrExtra(args, 2, "invstd", op));
  } else {
    MEMPLAN_TRY(saved.mean, RequireExtra(args, "mean", op));
    MEMPLAN_TRY(saved.invstd, RequireExtra(args, "invstd", op));
  }
  return saved;
}

}  // namespace memplan::normalization
