#include "analyzer/config_export/export_defaults.h"

namespace memplan {

namespace {

// torchtune's recipes (torchtune 0.6) as they run: FSDP2's fully_shard on every transformer layer
// (training.shard_model), and an unchunked loss on fp32 logits (TransformerDecoder.unembed
// returns self.output(h).float(); CEWithChunkedOutputLoss upcasts per chunk, which --loss-chunks
// plans).
void ApplyTorchtuneDefaults(RegimeChoice given, ProgramOptions& program) {
  if (program.data_parallel && !given.wrap_policy_given)
    program.data_parallel->fsdp_wrap_blocks = true;
  if (program.loss_dtype == LossDType::kAuto && program.loss_chunks == 0)
    program.loss_dtype = LossDType::kFp32;
}

}  // namespace

void ApplyExportRegime(std::optional<ExportTarget> target, std::optional<ParallelStrategy> strategy,
                       RegimeChoice given, ProgramOptions& program) {
  if (target == ExportTarget::kTorchtune) ApplyTorchtuneDefaults(given, program);
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
    case ExportTarget::kTorchtune: {
      // Its distributed recipes shard with FSDP2 only.
      std::vector<ParallelStrategy> excluded;
      for (const NamedValue<ParallelStrategy>& s : kParallelStrategyNames)
        if (s.value != ParallelStrategy::kFsdp) excluded.push_back(s.value);
      return excluded;
    }
    default:
      return {};
  }
}

}  // namespace memplan
