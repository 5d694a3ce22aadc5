#include "analyzer/config_export/export_defaults.h"

namespace memplan {

void ApplyExportRegime(std::optional<ExportTarget> target, std::optional<ParallelStrategy> strategy,
                       RegimeChoice given, ProgramOptions& program) {
  if (target) {
    if (!given.amp_mode_given)
      program.amp_mode = ExportTargetDefaultAmpMode(*target, strategy, program.offload.mode);
    if (!given.optimizer_impl_given)
      program.optimizer_impl = ExportTargetDefaultOptimizerImpl(*target, program.optimizer,
                                                                strategy, program.offload.mode);
    return;
  }
  if (!strategy) return;
  if (!given.amp_mode_given)
    program.amp_mode = EngineAmpMode(*strategy).value_or(kDefaultCliAmpMode);
  if (!given.optimizer_impl_given)
    program.optimizer_impl =
        EngineOptimizerImpl(*strategy, program.optimizer).value_or(kDefaultCliOptimizerImpl);
}

std::vector<ParallelStrategy> ExportTargetExcludedStrategies(ExportTarget target) {
  switch (target) {
    case ExportTarget::kDeepSpeed:
      return {ParallelStrategy::kHybridShard};
    case ExportTarget::kPytorchLoop:
      return {ParallelStrategy::kZero1, ParallelStrategy::kZero2, ParallelStrategy::kZero3};
    default:
      return {};
  }
}

}  // namespace memplan
