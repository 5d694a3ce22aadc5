#include "analyzer/pipeline/session_fused_loss.h"

#include <utility>

#include "analyzer/pipeline/planned_model.h"
#include "analyzer/report/fused_loss_advice.h"
#include "graph/graph_copy.h"

namespace memplan {
namespace {

// PrepareLoadedModel's fused-loss step on a copy of the session's graph, which that function
// left loaded, with --attention applied and the dims bound in `request` (session.request): what
// preparing a fresh import with --fused-loss makes, without importing the model again (on a
// 50,000-node chain the import was 14% of `analyze`). PrepareLoadedModel appends the attentions'
// fp32 placement to the request's force_fp32 each time it runs, so it is appended again here,
// as preparing the session's request a second time did.
Expected<Graph> FusedCopy(const AnalysisSession& session, PlanRequest& request) {
  Graph graph = CopyGraph(session.graph);
  request.search.force_fp32.insert(request.search.force_fp32.end(), session.fp32_upcast.begin(),
                                   session.fp32_upcast.end());
  MEMPLAN_TRY(FusedLossPlan fused,
              ApplyFusedLoss(graph, /*requested=*/true, request.planner.program.loss,
                             request.planner.bindings, request.analysis.model));
  if (!fused.fused()) return MakeError("the loss was not fused");
  request.planner.program.loss = fused.ProgramLoss(request.planner.program.loss);
  return graph;
}

// The session's plan with the loss fused; an error when the head cannot be fused.
Expected<TrainingPlan> PlanFused(const AnalysisSession& session) {
  PlanRequest request = session.request;
  request.fused_loss = true;
  Graph graph;
  if (request.tensor_parallel > 1) {
    // The session's graph is one rank's slice; the loss is fused before the split.
    MEMPLAN_TRY(graph, LoadPlannedModel(request));
    MEMPLAN_TRY(ModelRewrites rewrites, PrepareLoadedModel(graph, request));
    if (!rewrites.fused_loss.fused()) return MakeError("the loss was not fused");
  } else {
    MEMPLAN_TRY(graph, FusedCopy(session, request));
  }
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
