#pragma once
// One analysis from flags to report: import the model, bind symbols, plan, advise. Shared by
// analyze, baseline, check, export and report so every verb plans exactly the same way.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/alternatives/alternatives_report.h"
#include "analyzer/config_export/export_target.h"
#include "analyzer/pipeline/planned_model.h"
#include "analyzer/pipeline/progress_sink.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/planning/planner.h"
#include "analyzer/planning/strategy_search.h"
#include "analyzer/report/analysis_report.h"
#include "graph/graph.h"

namespace memplan {

struct AnalysisSession {
  PlanRequest request;
  Graph graph;
  TrainingPlan plan;
  AttentionPlan attention;               // --attention as applied to `graph`
  FusedLossPlan fused_loss;              // --fused-loss as applied to `graph` (after attention)
  ChunkedLossPlan chunked_loss;          // --loss-chunks as applied to `graph` (after fused loss)
  std::vector<std::string> fp32_upcast;  // ModelRewrites::fp32_upcast of `graph`
  PlannerOptions planner_used;  // the chosen configuration's options (precision, recompute)
  // When nothing fits and the verb searched them (session_alternatives.h).
  std::optional<AlternativesReport> alternatives;
  AnalysisReport report;  // points into the members above: a session is never moved or copied
};

// Runs the whole analysis for `request`. Errors are bad input (exit 2).
Expected<std::unique_ptr<AnalysisSession>> RunAnalysisSession(PlanRequest request,
                                                              const ProgressSink& progress);

// What the planner makes of `request` on `graph` (loaded, fine-tuned and with attention applied
// by the request; REQUIRES: BindPlanSymbols done): the chosen plan and, with --gpus, every
// strategy planned. The one planning path: RunAnalysisSession and the alternatives use it.
struct RequestPlan {
  JointPlan joint;
  std::vector<StrategyOutcome> strategies;
  std::string parallel_explanation;
};
Expected<RequestPlan> PlanRequestOn(const Graph& graph, const PlanRequest& request);

// The session's memplan/1 JSON: what `analyze --json` prints and `memplan export` reads.
nlohmann::ordered_json SessionJson(const AnalysisSession& session);

// The chosen plan as a training-framework config for `target` (an ExportTarget name), exactly
// what `memplan export` makes from SessionJson. Errors: an unknown target.
Expected<std::string> ExportSessionConfig(const AnalysisSession& session, std::string_view target);

}  // namespace memplan
