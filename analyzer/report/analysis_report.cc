#include "analyzer/report/analysis_report.h"

#include <algorithm>

#include "analyzer/report/plan_report.h"

namespace memplan {

bool FitsByReleasingCache(const TrainingPlan& plan, const PlannerOptions& options) {
  // The chosen peak is the replay on the device the plan was judged on (the budget, or the budget
  // less the headroom); it is below the unconstrained reserved peak only where that replay
  // released cached segments.
  return plan.feasible && options.allocator == AllocatorKind::kCaching &&
         plan.simulation.peak_reserved_bytes > plan.chosen.peak_bytes;
}

std::string MemoryCategoryWords(MemoryCategory category) {
  std::string words(MemoryCategoryName(category));
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

void FillPlanReport(AnalysisReport& report) {
  report.plan_report =
      PlanReportOf(PlanSources{report.model_path, report.model_name, report.graph, report.options,
                               report.plan, report.attention, report.fused_loss, report.fusions});
}

std::string InferenceExportText(const AnalysisReport& report) {
  return "WARNING: " + report.model_name +
         " looks like an inference (eval-mode) export, so this plan is for the model as "
         "exported and underestimates training memory (the micro-batch below may not fit in "
         "training). Re-export in training mode; details under Warnings.";
}

}  // namespace memplan
