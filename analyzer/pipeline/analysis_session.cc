#include "analyzer/pipeline/analysis_session.h"

#include <algorithm>
#include <filesystem>

#include "analyzer/config_export/export_config.h"
#include "analyzer/pipeline/hugging_face_config.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/planning/strategy_search.h"
#include "analyzer/report/advice.h"
#include "analyzer/report/plan_explanation.h"
#include "graph/index_range_check.h"

namespace memplan {

namespace {

// The model's name in the report: the file's stem, or for a Hugging Face config the folder it
// lives in (models/llama-3-8b/config.json -> llama-3-8b), for a hub id its name.
std::string ModelName(const std::string& path) {
  if (LooksLikeHubId(path)) return path.substr(path.find('/') + 1);  // meta-llama/X -> X
  if (!IsHuggingFaceConfig(path)) return std::filesystem::path(path).stem().string();
  std::filesystem::path folder = std::filesystem::absolute(path).lexically_normal();
  if (!std::filesystem::is_directory(folder)) folder = folder.parent_path();
  if (folder.filename().empty()) folder = folder.parent_path();
  return folder.filename().string();
}

}  // namespace

Expected<std::unique_ptr<AnalysisSession>> RunAnalysisSession(PlanRequest request,
                                                              const ProgressSink& progress) {
  auto session = std::make_unique<AnalysisSession>();
  session->request = std::move(request);
  PlanRequest& r = session->request;
  progress("importing " + r.analysis.model + "...");
  MEMPLAN_TRY(session->graph, LoadPlannedModel(r, progress));
  MEMPLAN_TRY(ModelRewrites rewrites, PrepareLoadedModel(session->graph, r));
  session->attention = std::move(rewrites.attention);
  session->fused_loss = std::move(rewrites.fused_loss);
  session->chunked_loss = std::move(rewrites.chunked_loss);
  session->fp32_upcast = std::move(rewrites.fp32_upcast);

  progress("planning...");
  MEMPLAN_TRY(RequestPlan planned, PlanRequestOn(session->graph, r));
  JointPlan& joint = planned.joint;
  // Every micro-batch the search tried, the plan's included, held the graph's shapes
  // (PlannerOptions::micro_batch_shapes).
  session->plan = std::move(joint.plan);

  AnalysisReport& report = session->report;
  report.model_path = r.analysis.model;
  report.model_name = ModelName(r.analysis.model);
  report.graph = &session->graph;
  session->planner_used = std::move(joint.options_used);
  report.options = &session->planner_used;
  report.plan = &session->plan;
  report.advice = AdvisePlan(session->graph, session->plan);
  // The inference-export warnings first: they say the whole plan is for the wrong model.
  report.warnings = InferenceExportWarnings(session->graph, session->plan.bindings);
  report.inference_export = !report.warnings.empty();
  // Rows read beyond a table under the bindings (GPT-2's positions at --dim seq=4096).
  for (std::string& w : IndexRangeWarnings(session->graph, session->plan.bindings))
    report.warnings.push_back(std::move(w));
  for (const std::string& w : session->graph.warnings)
    if (std::find(report.warnings.begin(), report.warnings.end(), w) == report.warnings.end())
      report.warnings.push_back(w);
  report.choice_explanation = ExplainPlanChoice(joint.trace);
  report.attention = &session->attention;
  report.fused_loss = &session->fused_loss;
  report.fusions = r.fusions;
  report.checkpoint_nodes = joint.checkpoint_nodes;
  report.strategies = std::move(planned.strategies);
  report.parallel_explanation = std::move(planned.parallel_explanation);
  FillPlanReport(report);
  return session;
}

Expected<RequestPlan> PlanRequestOn(const Graph& graph, const PlanRequest& request) {
  RequestPlan planned;
  if (request.parallel_auto) {
    MEMPLAN_TRY(StrategySearch found,
                SearchParallelStrategies(graph, request.planner, request.search,
                                         request.parallel_excluded, request.strategy_regime));
    planned.joint = std::move(found.best);
    planned.strategies = std::move(found.outcomes);
    planned.parallel_explanation = std::move(found.explanation);
    return planned;
  }
  MEMPLAN_TRY(planned.joint, PlanJointly(graph, request.planner, request.search));
  if (request.planner.program.data_parallel)
    planned.strategies.push_back(
        OutcomeOf(request.planner.program.data_parallel->strategy, planned.joint.plan));
  return planned;
}

nlohmann::ordered_json SessionJson(const AnalysisSession& session) {
  return AnalysisToJson(session.report);
}

Expected<std::string> ExportSessionConfig(const AnalysisSession& session, std::string_view target) {
  MEMPLAN_TRY(ExportTarget parsed, ParseExportTarget(target));
  // The typed plan; tests check that `memplan export` of the --json output reads the same.
  return ExportConfig(session.report.plan_report, parsed, ExportOptions{});
}

}  // namespace memplan
