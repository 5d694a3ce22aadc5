#include "tools/memplan/analysis_session.h"

#include <filesystem>

#include "analyzer/advice.h"
#include "analyzer/config_export/export_config.h"
#include "analyzer/joint_search.h"
#include "analyzer/plan_report.h"
#include "analyzer/report/plan_explanation.h"

namespace memplan::cli {

Expected<std::unique_ptr<AnalysisSession>> RunAnalysisSession(PlanRequest request,
                                                              const Progress& progress) {
  auto session = std::make_unique<AnalysisSession>();
  session->request = std::move(request);
  PlanRequest& r = session->request;
  progress.Report("importing " + r.analysis.model + "...");
  MEMPLAN_TRY(session->graph, LoadModel(r.analysis));
  MEMPLAN_RETURN_IF_ERROR(BindPlanSymbols(session->graph, r));

  progress.Report("planning...");
  MEMPLAN_TRY(JointPlan joint, PlanJointly(session->graph, r.planner, r.search));
  session->plan = std::move(joint.plan);

  AnalysisReport& report = session->report;
  report.model_path = r.analysis.model;
  report.model_name = std::filesystem::path(r.analysis.model).stem().string();
  report.graph = &session->graph;
  session->planner_used = std::move(joint.options_used);
  report.options = &session->planner_used;
  report.plan = &session->plan;
  report.advice = AdvisePlan(session->graph, session->plan);
  report.warnings = session->graph.warnings;
  report.choice_explanation = ExplainPlanChoice(joint.trace);
  report.checkpoint_nodes = joint.checkpoint_nodes;
  CollectPlanNodeLists(report);
  return session;
}

nlohmann::ordered_json SessionJson(const AnalysisSession& session) {
  return AnalysisToJson(session.report);
}

Expected<std::string> ExportSessionConfig(const AnalysisSession& session, std::string_view target) {
  MEMPLAN_TRY(ExportTarget parsed, ParseExportTarget(target));
  // The typed plan; tests check that `memplan export` of the --json output reads the same.
  return ExportConfig(ExportPlanOf(PlanReportOf(session.report)), parsed, ExportOptions{});
}

}  // namespace memplan::cli
