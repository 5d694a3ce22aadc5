#include "analyzer/precision/amp_regime.h"

#include "analyzer/precision/precision_policy.h"

namespace memplan {

AmpRegime RegimeOf(Precision precision, AmpMode mode) {
  AmpRegime r;
  r.precision = precision;
  r.mode = mode;
  r.working = WorkingDType(precision);
  if (!r.mixed()) return r;  // fp32: every tensor keeps its graph dtype, optimizer state fp32
  switch (mode) {
    case AmpMode::kAutocast:
      r.parameter = DType::kFloat32;
      r.gradient = DType::kFloat32;
      r.optimizer_state = DType::kFloat32;
      r.casts_weights_per_forward = true;
      r.casts_activations_per_op = true;
      r.promotes_in_kernel = true;
      r.placed_by_op_category = true;
      r.forward_parameter = DType::kFloat32;
      break;
    case AmpMode::kMasterWeights:
      r.parameter = DType::kFloat32;
      r.working_copy = r.working;
      r.gradient = r.working;
      r.optimizer_state = DType::kFloat32;
      r.placed_by_op_category = true;
      r.forward_parameter = r.working;
      break;
    case AmpMode::kPure:
      r.parameter = r.working;
      r.gradient = r.working;
      r.optimizer_state = r.working;
      r.placed_by_op_category = false;
      r.forward_parameter = r.working;
      break;
  }
  return r;
}

}  // namespace memplan
