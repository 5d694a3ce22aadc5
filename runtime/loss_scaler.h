#pragma once
// Dynamic loss scaling with torch.cuda.amp.GradScaler's rules: the loss is multiplied by `scale`
// before backward; gradients are unscaled (x 1/scale) before the optimizer; a step whose
// gradients hold inf/NaN is skipped and the scale backs off; after `growth_interval` clean steps
// in a row the scale grows.

#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace memplan {

struct LossScalerOptions {
  float init_scale = 65536.0f;     // 2^16, GradScaler's default
  float growth_factor = 2.0f;      // multiply after growth_interval clean steps
  float backoff_factor = 0.5f;     // multiply after a step with inf/NaN gradients
  int64_t growth_interval = 2000;  // clean steps before growing
};

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(LossScalerOptions options = {});

  float scale() const { return scale_; }
  // Clean steps since the last growth or backoff.
  int64_t growth_tracker() const { return growth_tracker_; }

  // Multiplies every defined gradient by 1/scale in place; returns true when any element is inf
  // or NaN ("found_inf"), in which case the optimizer step must be skipped.
  bool UnscaleAndCheck(const std::vector<Tensor>& gradients) const;

  // Records the outcome of one step and adjusts the scale (GradScaler.update). Returns true when
  // the step was applied (no inf/NaN), false when it was skipped.
  bool Update(bool found_inf);

 private:
  LossScalerOptions options_;
  float scale_;
  int64_t growth_tracker_ = 0;
};

}  // namespace memplan
