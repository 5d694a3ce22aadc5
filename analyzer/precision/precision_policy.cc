#include "analyzer/precision/precision_policy.h"

#include "analyzer/vocabulary/enum_table.h"

namespace memplan {
namespace {

// How wide each floating dtype is, for the widest of an op's inputs; 0 for any other dtype.
constexpr EnumTable<DType, int, 4> kFloatWidths = {{
    {DType::kFloat64, 3},
    {DType::kFloat32, 2},
    {DType::kFloat16, 1},
    {DType::kBFloat16, 1},
}};

int Width(DType dtype) { return ValueOr(kFloatWidths, dtype, 0); }

}  // namespace

DType WorkingDType(Precision precision) { return ValueOf(kPrecisionWorkingDTypes, precision); }

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
