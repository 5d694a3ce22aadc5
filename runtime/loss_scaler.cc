#include "runtime/loss_scaler.h"

#include <cmath>

namespace memplan {

DynamicLossScaler::DynamicLossScaler(LossScalerOptions options)
    : options_(options), scale_(options.init_scale) {}

bool DynamicLossScaler::UnscaleAndCheck(const std::vector<Tensor>& gradients) const {
  // GradScaler computes the reciprocal in double and applies it in float.
  const auto inverse = static_cast<float>(1.0 / static_cast<double>(scale_));
  bool found_inf = false;
  for (const Tensor& g : gradients) {
    if (!g.defined()) continue;
    float* data = g.mutable_data();
    for (int64_t i = 0; i < g.numel(); ++i) {
      if (!std::isfinite(data[i])) found_inf = true;
      data[i] *= inverse;
    }
  }
  return found_inf;
}

bool DynamicLossScaler::Update(bool found_inf) {
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    return false;
  }
  if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  return true;
}

}  // namespace memplan
