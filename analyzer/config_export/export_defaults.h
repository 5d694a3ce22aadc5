#pragma once
// What a plan is made with when the user leaves it open and names where it will run: the regime
// (--amp-mode, --optimizer-impl) the export target runs under each strategy, and the strategies
// --parallel auto may try for it. Beside the export targets so a new target states its defaults
// in one place; `analyze` (tools/memplan/analyze_command.cc) only calls these. Without a target,
// the strategy's engine decides (analyzer/parallel/engine_regime.h: ZeRO runs DeepSpeed's
// master weights and FusedAdam).

#include <optional>
#include <vector>

#include "analyzer/config_export/export_target.h"
#include "analyzer/derivation/program_derivation.h"
#include "analyzer/parallel/engine_regime.h"

namespace memplan {

// Sets program.amp_mode and program.optimizer_impl, those `given` leaves open, to what `target`
// runs under `strategy` (nullopt: one GPU), or without a target to what the strategy's engine
// runs (unchanged for one GPU, DDP and FSDP). For torchtune also FSDP's per-block wrapping
// (unless --engine-options names a policy) and an fp32 unchunked loss (unless --loss-dtype or
// --loss-chunks says otherwise), as its recipes run.
void ApplyExportRegime(std::optional<ExportTarget> target, std::optional<ParallelStrategy> strategy,
                       RegimeChoice given, ProgramOptions& program);

// The strategies `--parallel auto` does not try for `target`: those its export refuses
// (DeepSpeed has no hybrid-shard; the PyTorch target's scripts run no ZeRO stage; torchtune's
// distributed recipes run FSDP only).
std::vector<ParallelStrategy> ExportTargetExcludedStrategies(ExportTarget target);

}  // namespace memplan
