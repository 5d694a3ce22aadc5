#pragma once
// The plan flags shared by every verb that plans (analyze, verify, baseline, check, report,
// profile, explain) as a request: GPU, batch targets, precision, optimizer, loss, allocator model.
// Which flags exist, their names, defaults and help come from the one table in
// analyzer/baseline/plan_flags.h; tools/memplan/plan_flags.h binds them to CLI11, and this file
// resolves their text into a PlanRequest. Errors are one-line usage errors (exit 2).

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/baseline/plan_flags.h"
#include "analyzer/config_export/export_target.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/pipeline/model_request.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/planning/planner.h"
#include "analyzer/planning/strategy_search.h"
#include "analyzer/vocabulary/attention_mode.h"
#include "analyzer/vocabulary/fusion_set_names.h"
#include "analyzer/vocabulary/parallel_strategy.h"
#include "graph/expected.h"
#include "graph/fine_tuning.h"
#include "graph/fusion/fusion_set.h"
#include "graph/graph.h"

namespace memplan {

// The plan flags as typed. Values are kept as text and validated by ResolvePlanFlags so errors
// use memplan's own one-line messages. The analysis flags (--batch, --dim, --batch-dim) live in
// `analysis`, every other flag of kPlanFlagTable in `text` (integers and strings) or `switches`.
struct PlanArguments {
  // Every plan-only text holds its table default (empty when the flag has none).
  PlanArguments();

  AnalysisFlags analysis;
  std::map<std::string, std::string, std::less<>> text;  // by table key: "gpu" -> "24G"
  std::map<std::string, bool, std::less<>> switches;     // by table key: "clip_grad" -> true

  // The text of a plan-only kText or kPositiveInt flag. REQUIRES: `key` names one.
  std::string& Text(std::string_view key);
  const std::string& Text(std::string_view key) const;
  // The value of a kSwitch flag. REQUIRES: `key` names one.
  bool& Switch(std::string_view key);
  bool Switch(std::string_view key) const;
};

struct PlanRequest {
  AnalysisRequest analysis;
  PlannerOptions planner;
  SearchOptions search;  // precision and recompute choices for the joint search
  // --gpus N with --parallel auto (or without --parallel): try every strategy
  // (analyzer/planning/strategy_search.h) instead of planning planner.program.data_parallel's.
  bool parallel_auto = false;
  // Strategies parallel_auto does not try: those the --export target cannot run (DeepSpeed has
  // no hybrid-shard).
  std::vector<ParallelStrategy> parallel_excluded;
  // Which regime settings the user fixed (--amp-mode, --optimizer-impl); the others follow the
  // strategy's engine or the --export target (analyzer/config_export/export_defaults.h), for a
  // fixed --parallel in planner.program and for each strategy parallel_auto tries through
  // strategy_regime.
  RegimeChoice regime_given;
  StrategyRegime strategy_regime;
  // --attention: applied to the graph when it is loaded (analyzer/derivation/attention_plan.h).
  AttentionMode attention = AttentionMode::kAuto;
  // --fused-loss: applied to the graph after attention (analyzer/derivation/fused_loss_plan.h); the
  // requested loss stays in planner.program.loss until the rewrite says what the program plans.
  bool fused_loss = false;
  // --train/--freeze/--lora: applied to the graph right after import (LoadPlannedModel).
  FineTuneOptions finetune;
  // --fusions: which import fusions the importer applies (graph/fusion/fusion_table.h).
  FusionSet fusions = FusionSet::kFusedOps;
  // --tp: tensor-parallel ranks per replica, applied to the graph after the fused loss
  // (ApplyRequestedTensorParallel); planner.program.data_parallel then holds --gpus / tp ranks.
  int64_t tensor_parallel = 1;
};

// Puts request.planner.program in the regime `target` runs (without a target: the fixed
// strategy's engine) for the settings request.regime_given leaves open, sets strategy_regime so
// --parallel auto plans each strategy so, and excludes the strategies the target's export
// refuses (analyzer/config_export/export_defaults.h).
void SetExportRegime(std::optional<ExportTarget> target, PlanRequest& request);

// Validates every flag (sizes, enums, positive integers). --batch N is the micro-batch (it binds
// the batch symbol), the same as --micro-batch N. REQUIRES: --gpu given (the caller says which
// verbs need it) when `require_gpu`.
Expected<PlanRequest> ResolvePlanFlags(const PlanArguments& flags, bool require_gpu);

}  // namespace memplan
