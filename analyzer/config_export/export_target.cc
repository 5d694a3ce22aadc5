#include "analyzer/config_export/export_target.h"

#include <string>

#include "analyzer/parallel/engine_regime.h"

namespace memplan {

Expected<ExportTarget> ParseExportTarget(std::string_view name) {
  if (std::optional<ExportTarget> target = FindName(kExportTargetNames, name)) return *target;
  return MakeError("unknown export target '" + std::string(name) +
                   "' (expected one of: " + JoinNames(kExportTargetNames) + ")");
}

bool ExportTargetRuns(ExportTarget target, AmpMode mode, std::optional<ParallelStrategy> strategy,
                      OffloadMode offload) {
  const bool zero = strategy && IsZeroStage(*strategy);
  // torchtune refuses ZeRO plans itself (export_config.cc): its regime is the model's dtype.
  if (zero && target != ExportTarget::kPytorchLoop && target != ExportTarget::kTorchtune)
    return mode == EngineAmpMode(*strategy);
  switch (target) {
    case ExportTarget::kDeepSpeed:
      return mode == AmpMode::kMasterWeights;
    case ExportTarget::kAccelerate:
      if (OffloadsOptimizer(offload)) return mode == AmpMode::kMasterWeights;
      return mode == AmpMode::kAutocast;
    case ExportTarget::kHfTrainer:
    case ExportTarget::kHfTrainerJson:
      return mode == AmpMode::kAutocast;
    case ExportTarget::kLightning:
      return mode == AmpMode::kAutocast || mode == AmpMode::kPure;
    case ExportTarget::kTorchtune:
      return mode == AmpMode::kPure;
    case ExportTarget::kPytorchLoop:
      // The FSDP2 script's MixedPrecisionPolicy(param_dtype=half) runs master weights too.
      return mode == AmpMode::kAutocast || mode == AmpMode::kPure ||
             (mode == AmpMode::kMasterWeights && strategy && IsFsdp(*strategy));
  }
  return false;
}

AmpMode ExportTargetDefaultAmpMode(ExportTarget target, std::optional<ParallelStrategy> strategy,
                                   OffloadMode offload) {
  if (ExportTargetRuns(target, kDefaultCliAmpMode, strategy, offload)) return kDefaultCliAmpMode;
  if (ExportTargetRuns(target, AmpMode::kMasterWeights, strategy, offload))
    return AmpMode::kMasterWeights;
  return AmpMode::kPure;
}

std::optional<OptimizerImpl> ExportTargetFixedOptimizerImpl(
    ExportTarget target, OptimizerKind optimizer, std::optional<ParallelStrategy> strategy,
    OffloadMode offload) {
  const bool adam = optimizer == OptimizerKind::kAdam || optimizer == OptimizerKind::kAdamW;
  if (!adam) return std::nullopt;
  const bool zero = strategy && IsZeroStage(*strategy);
  const bool deepspeed_engine =
      target == ExportTarget::kDeepSpeed ||
      ((target == ExportTarget::kHfTrainer || target == ExportTarget::kHfTrainerJson) && zero);
  if (deepspeed_engine || (OffloadsOptimizer(offload) && target == ExportTarget::kAccelerate))
    return OptimizerImpl::kFused;
  return std::nullopt;
}

bool ExportTargetRunsOptimizerImpl(ExportTarget target, OptimizerKind optimizer, OptimizerImpl impl,
                                   std::optional<ParallelStrategy> strategy, OffloadMode offload) {
  const bool adam = optimizer == OptimizerKind::kAdam || optimizer == OptimizerKind::kAdamW;
  if (!adam) return true;
  if (ExportTargetFixedOptimizerImpl(target, optimizer, strategy, offload) == OptimizerImpl::kFused)
    return true;
  if (target == ExportTarget::kHfTrainer || target == ExportTarget::kHfTrainerJson)
    return impl != OptimizerImpl::kForLoop;
  return true;
}

OptimizerImpl ExportTargetDefaultOptimizerImpl(ExportTarget target, OptimizerKind optimizer,
                                               std::optional<ParallelStrategy> strategy,
                                               OffloadMode offload) {
  return ExportTargetFixedOptimizerImpl(target, optimizer, strategy, offload)
      .value_or(kDefaultCliOptimizerImpl);
}

bool ExportTargetOffloads(ExportTarget target, OffloadMode offload) {
  switch (offload) {
    case OffloadMode::kNone:
      return true;
    case OffloadMode::kOptimizer:
      return target == ExportTarget::kDeepSpeed || target == ExportTarget::kAccelerate;
    case OffloadMode::kOptimizerAndParams:
      return target == ExportTarget::kDeepSpeed || target == ExportTarget::kAccelerate ||
             target == ExportTarget::kTorchtune;
    case OffloadMode::kActivations:
      return target == ExportTarget::kPytorchLoop || target == ExportTarget::kDeepSpeed ||
             target == ExportTarget::kAccelerate || target == ExportTarget::kTorchtune;
  }
  return false;
}

}  // namespace memplan
