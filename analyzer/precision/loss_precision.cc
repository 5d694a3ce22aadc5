#include "analyzer/precision/loss_precision.h"

#include "analyzer/precision/precision_policy.h"

namespace memplan {

DType FixedLossDType(LossDType requested) {
  switch (requested) {
    case LossDType::kAuto:
      return DType::kUndefined;
    case LossDType::kFp32:
      return DType::kFloat32;
    case LossDType::kBf16:
      return DType::kBFloat16;
    case LossDType::kFp16:
      return DType::kFloat16;
  }
  return DType::kUndefined;
}

DType AutoLossDType(const AmpRegime& regime, AmpCategory loss_amp, DType logits_dtype) {
  if (!regime.mixed() || !regime.placed_by_op_category) return DType::kUndefined;
  return CategoryDType(regime.working, loss_amp, {logits_dtype}, regime.forward_parameter);
}

DType LossComputeDType(LossDType requested, int64_t loss_chunks, const AmpRegime& regime,
                       AmpCategory loss_amp, DType logits_dtype) {
  if (requested != LossDType::kAuto) return FixedLossDType(requested);
  if (loss_chunks > 0) return DType::kFloat32;
  return AutoLossDType(regime, loss_amp, logits_dtype);
}

}  // namespace memplan
