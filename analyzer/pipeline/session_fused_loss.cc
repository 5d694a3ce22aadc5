#include "analyzer/pipeline/session_fused_loss.h"

#include "analyzer/pipeline/planned_model.h"
#include "analyzer/report/fused_loss_advice.h"

namespace memplan {
namespace {

// The session's plan with the loss fused; an error when the head cannot be fused.
Expected<TrainingPlan> PlanFused(const AnalysisSession& session) {
  PlanRequest request = session.request;
  request.fused_loss = true;
  MEMPLAN_TRY(Graph graph, LoadPlannedModel(request));
  MEMPLAN_TRY(ModelRewrites rewrites, PrepareLoadedModel(graph, request));
  if (!rewrites.fused_loss.fused()) return MakeError("the loss was not fused");
  MEMPLAN_TRY(RequestPlan planned, PlanRequestOn(graph, request));
  return std::move(planned.joint.plan);
}

}  // namespace

void AddFusedLossAdvice(AnalysisSession& session, const ProgressSink& progress) {
  if (session.request.fused_loss || session.fused_loss.fused()) return;
  if (session.plan.program.loss != LossKind::kCrossEntropy || !PeakIsAtLoss(session.plan)) return;
  progress("the peak is in the loss: planning --fused-loss...");
  Expected<TrainingPlan> fused = PlanFused(session);
  if (!fused.ok()) return;  // no recognised LM head: nothing to suggest
  if (std::optional<AdviceItem> advice = FusedLossAdvice(session.plan, *fused))
    session.report.advice.push_back(std::move(*advice));
}

}  // namespace memplan
