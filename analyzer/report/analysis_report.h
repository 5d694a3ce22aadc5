#pragma once
// The result of `memplan analyze` rendered three ways: the memplan/1 JSON (docs/json_schema.md),
// human text readable in 80 columns, and markdown (the HTML page: html_report.h). All read the
// same AnalysisReport, whose plan_report holds the plan's facts once, so they never disagree;
// JSON keys are written in a fixed order for byte-identical output.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/alternatives/alternatives_report.h"
#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/planning/planner.h"
#include "analyzer/planning/strategy_search.h"
#include "analyzer/program/step_phase.h"
#include "analyzer/report/advice.h"
#include "analyzer/report/plan_report.h"
#include "graph/fusion/fusion_set.h"
#include "graph/graph.h"

namespace memplan {

struct AnalysisReport {
  std::string model_path;
  std::string model_name;  // file stem
  const Graph* graph = nullptr;
  const PlannerOptions* options = nullptr;
  const TrainingPlan* plan = nullptr;
  std::vector<AdviceItem> advice;
  std::vector<std::string> warnings;  // the inference-export ones first
  // The model looks like an inference (eval-mode) export (InferenceExportWarnings, advice.h):
  // the plan is for the model as exported and underestimates training memory. Reports say so
  // before the plan ("inference_export" in the JSON).
  bool inference_export = false;
  // The plan's typed facts (plan_report.h), built once from the planner's result by
  // FillPlanReport; the writers render them and the exports consume them.
  PlanReport plan_report;
  // The segment boundaries the plan keeps in memory, by node name (plan.checkpoints).
  std::vector<std::string> checkpoint_nodes;
  std::string choice_explanation;  // one sentence on why this plan (the joint search fills it)
  // Data parallel (--gpus): every strategy planned (one for a fixed --parallel, all for auto)
  // and why the chosen one (analyzer/planning/strategy_search.h).
  std::vector<StrategyOutcome> strategies;
  std::string parallel_explanation;
  // --attention as applied to the graph (null: not reported, e.g. a plan read back from JSON).
  const AttentionPlan* attention = nullptr;
  // --fused-loss as applied to the graph (null: not reported, as for attention).
  const FusedLossPlan* fused_loss = nullptr;
  // --fusions: the import fusions the planned graph was read with (plan.fusions).
  FusionSet fusions = FusionSet::kFusedOps;
  // When nothing fits: the alternatives planned (analyzer/alternatives/), null when they were not
  // searched (the plan fits, or the verb does not search them).
  const AlternativesReport* alternatives = nullptr;
};

// Builds report.plan_report from the plan, options and rewrites the report points at; called once,
// when the report is assembled (REQUIRES: graph, options and plan set).
void FillPlanReport(AnalysisReport& report);

// The plan fits only because the caching allocator releases fully free cached segments when a
// cudaMalloc fails (PlanTraining's ReservedUnderCapacity): the unconstrained reserved peak is
// over the budget, the peak under the budget is not ("fits_by_releasing_cache").
bool FitsByReleasingCache(const TrainingPlan& plan, const PlannerOptions& options);

// A memory category in a sentence: its name with spaces ("optimizer state").
std::string MemoryCategoryWords(MemoryCategory category);

// The sentence reports put before the plan when report.inference_export.
std::string InferenceExportText(const AnalysisReport& report);

// The writers, one file each beside analysis_report.cc: analysis_report_json.cc (memplan/1) and
// analysis_report_text.cc (the 80-column text and the markdown).
nlohmann::ordered_json AnalysisToJson(const AnalysisReport& report);
std::string FormatAnalysisText(const AnalysisReport& report);
std::string FormatAnalysisMarkdown(const AnalysisReport& report);

}  // namespace memplan
