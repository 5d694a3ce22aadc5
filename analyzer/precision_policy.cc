#include "analyzer/precision_policy.h"

namespace memplan {
namespace {

int Width(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
      return 3;
    case DType::kFloat32:
      return 2;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

DType WorkingDType(Precision precision) {
  switch (precision) {
    case Precision::kFp16:
      return DType::kFloat16;
    case Precision::kBf16:
      return DType::kBFloat16;
    case Precision::kFp32:
      return DType::kUndefined;
  }
  return DType::kUndefined;
}

LossScaling DefaultLossScaling(Precision precision) {
  LossScaling scaling;
  scaling.mode = precision == Precision::kFp16 ? LossScalingMode::kDynamic : LossScalingMode::kNone;
  return scaling;
}

DType CategoryDType(DType working, AmpCategory amp,
                    const std::vector<DType>& activation_input_dtypes, DType no_activation_dtype) {
  switch (amp) {
    case AmpCategory::kFp16Safe:
      return working;
    case AmpCategory::kFp32Required:
      return DType::kFloat32;
    case AmpCategory::kFollowInputs: {
      DType widest = DType::kUndefined;
      for (DType d : activation_input_dtypes)
        if (Width(d) > Width(widest)) widest = d;
      return widest == DType::kUndefined ? no_activation_dtype : widest;
    }
  }
  return working;
}

DType ExecutionDType(const AmpRegime& regime, AmpCategory amp, std::optional<DType> override_dtype,
                     const std::vector<DType>& activation_input_dtypes) {
  if (!regime.mixed()) return DType::kUndefined;
  if (override_dtype) return *override_dtype;
  if (!regime.placed_by_op_category) return regime.working;
  return CategoryDType(regime.working, amp, activation_input_dtypes, regime.forward_parameter);
}

}  // namespace memplan
