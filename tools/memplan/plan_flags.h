#pragma once
// The plan flags shared by every verb that plans (analyze, verify, baseline, check, report,
// profile): GPU, batch targets, precision, optimizer, loss, allocator model. Which flags exist,
// their names, defaults and help come from the one table in analyzer/baseline/plan_flags.h; this
// file binds them to CLI11 and resolves them into PlannerOptions. Errors are one-line usage
// errors (exit 2).

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/baseline/plan_flags.h"
#include "analyzer/config_export/export_target.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
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
#include "tools/memplan/cli_common.h"

namespace memplan::cli {

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

// Adds the analysis flags plus one option per plan-only entry of kPlanFlagTable (--gpu,
// --global-batch, --precision, ...). A verb may change a default first (verify: --precision fp32);
// --help shows every default. `gpu_required`: the verb cannot plan without --gpu (its
// ResolvePlanFlags call passes require_gpu = true), and --help marks the flag "(required)".
void AddPlanFlags(CLI::App& command, PlanArguments& flags, bool gpu_required = false);

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

// Imports the model and applies the request's fine-tuning changes (--train, --freeze, --lora).
// Every verb that plans loads its model through this. Errors are bad input (exit 2).
Expected<Graph> LoadPlannedModel(const PlanRequest& request);

// Applies the request's --attention to its loaded graph. The plan's precision says whether SDPA
// could run a fused kernel: an fp32-only plan keeps grouped-query attention eager
// (ApplyAttentionMode's fp32_only).
Expected<AttentionPlan> ApplyRequestedAttention(Graph& graph, const PlanRequest& request);

// Applies the request's --tp to its graph (loaded, attention and fused loss applied) and puts
// the split in request.planner.tensor_parallel, where the planner costs its all-reduces.
Status ApplyRequestedTensorParallel(Graph& graph, PlanRequest& request);

// Binds the request's --dim values (and not the batch) for `graph` into request.planner.bindings.
Status BindPlanSymbols(const Graph& graph, PlanRequest& request);

// The graph a request plans on, prepared the one way every planning verb uses, once it is loaded
// (LoadPlannedModel: fine-tuning applied) where it stays: --attention applied, the --dim values
// bound, the loss fused (--fused-loss; after binding, since its logits tile is sized with the
// bound dims) and --tp applied. `request` gains the bindings (they name `graph`'s symbols, so the
// graph must not move afterwards), the loss the program plans (the fused loss's) and the
// tensor-parallel split. Returns what the rewrites did, for the report.
struct ModelRewrites {
  AttentionPlan attention;   // --attention as applied to the graph
  FusedLossPlan fused_loss;  // --fused-loss as applied to the graph (after attention)
};
Expected<ModelRewrites> PrepareLoadedModel(Graph& graph, PlanRequest& request);

}  // namespace memplan::cli
