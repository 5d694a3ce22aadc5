#include "analyzer/pipeline/session_alternatives.h"

#include <array>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/alternatives/alternative_search.h"
#include "analyzer/baseline/plan_flags.h"
#include "analyzer/pipeline/recorded_flags.h"
#include "analyzer/planning/derivation_cache.h"
#include "analyzer/precision/model_state_bytes.h"
#include "graph/bound_shape_check.h"

namespace memplan {
namespace {

// The keys (kPlanFlagTable) of the flags that decide the graph a request plans on
// (LoadPlannedModel and PrepareLoadedModel: fine-tuning, attention, fused loss, chunked loss,
// tensor parallel).
constexpr std::array<std::string_view, 9> kGraphFlagKeys = {
    "train",      "freeze",      "lora", "lora_targets", "fusions", "attention",
    "fused_loss", "loss_chunks", "tp"};

PlanFlags GraphFlagsOf(const PlanFlags& flags) {
  PlanFlags graph;
  for (std::string_view key : kGraphFlagKeys) {
    const PlanFlagSpec& spec = PlanFlagWithKey(key);
    if (spec.integer) graph.*spec.integer = flags.*spec.integer;
    if (spec.text) graph.*spec.text = flags.*spec.text;
    if (spec.flag) graph.*spec.flag = flags.*spec.flag;
  }
  return graph;
}

// Parameters (with fp32 masters) and optimizer state: what lives through the whole step.
int64_t PersistentStateBytes(const TrainingPlan& plan) {
  const ModelStateBytes state = ModelStateBytesOf(plan.program, plan.simulation.buffer_bytes);
  return state.parameters + state.master_weights + state.optimizer_state;
}

// Whether `a` and `b` bind every symbol of `graph` alike.
bool SameBindings(const Graph& graph, const Bindings& a, const Bindings& b) {
  for (size_t i = 0; i < graph.symbols().size(); ++i)
    if (a.Get(static_cast<SymbolId>(i)) != b.Get(static_cast<SymbolId>(i))) return false;
  return true;
}

// Plans alternatives on the session's graph, or on the model loaded again with other
// fine-tuning flags (kept for the next change with the same ones). What the alternatives of one
// graph have in common is computed once for all of them: the programs (most changes keep the
// program options: another GPU, --dim, allocator or --recompute derives the programs another
// alternative derived), the graph's node costs, and the shape check of each micro-batch under
// each set of bindings.
class AlternativePlanner {
 public:
  AlternativePlanner(const AnalysisSession& session, const PlanFlags& asked,
                     const RequestResolver& resolve, const ProgressSink& progress)
      : session_(session),
        asked_graph_(PlanFlagsAsArguments(GraphFlagsOf(asked))),
        resolve_(resolve),
        progress_(progress) {}

  Expected<AlternativePlan> Plan(const PlanFlags& flags, const PlanFlags& change) {
    progress_("alternative " + PlanFlagsAsArguments(change) + "...");
    MEMPLAN_TRY(PlanRequest request,
                resolve_(PlanArgumentsOf(flags, session_.request.analysis.model)));
    MEMPLAN_TRY(const Graph* graph, GraphFor(flags, request));
    request.planner.tensor_parallel = *tensor_parallel_.at(graph);
    // Every graph fuses the loss as its own preparation did: the session's as the session's,
    // one loaded for another --fused-loss (explain's change) as that (fine-tuning flags leave
    // the LM head as it is).
    request.planner.program.loss = fused_loss_.at(graph)->ProgramLoss(request.planner.program.loss);
    // A chunked graph's loss has one term per chunk, as its preparation planned it.
    chunked_loss_.at(graph)->PlanTerms(request.planner.program);
    // The math-kernel attentions' fp32 placement, as the graph's preparation made it.
    const std::vector<std::string>& upcast = *fp32_upcast_.at(graph);
    request.search.force_fp32.insert(request.search.force_fp32.end(), upcast.begin(), upcast.end());
    MEMPLAN_RETURN_IF_ERROR(BindPlanSymbols(*graph, request));
    request.planner.micro_batch_shapes = ShapeCheckFor(*graph, request.planner);
    std::shared_ptr<NodeCostsCache>& costs = node_costs_[graph];
    if (!costs) costs = std::make_shared<NodeCostsCache>();
    request.planner.node_costs = costs;
    request.planner.derivations = derivations_;
    MEMPLAN_TRY(RequestPlan planned, PlanRequestOn(*graph, request));
    const TrainingPlan& plan = planned.joint.plan;
    AlternativePlan result;
    result.fits = plan.feasible;
    result.chosen = plan.chosen;
    result.budget_bytes = plan.budget_bytes;
    result.persistent_state_bytes = PersistentStateBytes(plan);
    result.gpu = request.planner.gpu.name;
    result.gpus = plan.program.data_parallel_ranks * request.planner.tensor_parallel.degree;
    return result;
  }

 private:
  // The shape check the planner would make for `graph` under options.bindings, shared by the
  // alternatives with those bindings. A --tp graph is one rank's slice: its micro-batches are
  // checked against the model before the split (the preparation's snapshot), under the
  // alternative's bindings; without a snapshot a --tp graph is not checked (PlanJointly's rule).
  std::shared_ptr<MicroBatchShapeCheck> ShapeCheckFor(const Graph& graph,
                                                      const PlannerOptions& options) {
    for (const ShapeCheck& known : shape_checks_)
      if (known.graph == &graph && SameBindings(graph, known.bindings, options.bindings))
        return known.check;
    std::shared_ptr<MicroBatchShapeCheck> check;
    if (const std::shared_ptr<MicroBatchShapeCheck>& snapshot = shapes_.at(&graph))
      check = snapshot->Rebound(options.bindings);
    else if (!options.tensor_parallel.enabled())
      check = std::make_shared<MicroBatchShapeCheck>(graph, options.bindings);
    shape_checks_.push_back({&graph, options.bindings, check});
    return check;
  }

  Expected<const Graph*> GraphFor(const PlanFlags& flags, const PlanRequest& request) {
    const std::string key = PlanFlagsAsArguments(GraphFlagsOf(flags));
    if (key == asked_graph_) {
      tensor_parallel_[&session_.graph] = &session_.request.planner.tensor_parallel;
      fused_loss_[&session_.graph] = &session_.fused_loss;
      chunked_loss_[&session_.graph] = &session_.chunked_loss;
      shapes_[&session_.graph] = session_.request.planner.micro_batch_shapes;
      fp32_upcast_[&session_.graph] = &session_.fp32_upcast;
      return &session_.graph;
    }
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
      // Prepared on a copy: Plan() binds and fuses `request` itself; only the graph and its --tp
      // split are kept (the attention and fused-loss reports are the session's).
      auto graph = std::make_unique<Graph>();
      MEMPLAN_TRY(*graph, LoadPlannedModel(request));
      PlanRequest prepared_request = request;
      MEMPLAN_TRY(ModelRewrites rewrites, PrepareLoadedModel(*graph, prepared_request));
      it = graphs_.emplace(key, std::move(graph)).first;
      splits_.push_back(
          std::make_unique<TensorParallelPlan>(prepared_request.planner.tensor_parallel));
      tensor_parallel_[it->second.get()] = splits_.back().get();
      fused_losses_.push_back(std::make_unique<FusedLossPlan>(std::move(rewrites.fused_loss)));
      fused_loss_[it->second.get()] = fused_losses_.back().get();
      chunked_losses_.push_back(
          std::make_unique<ChunkedLossPlan>(std::move(rewrites.chunked_loss)));
      chunked_loss_[it->second.get()] = chunked_losses_.back().get();
      shapes_[it->second.get()] = prepared_request.planner.micro_batch_shapes;
      upcasts_.push_back(
          std::make_unique<std::vector<std::string>>(std::move(rewrites.fp32_upcast)));
      fp32_upcast_[it->second.get()] = upcasts_.back().get();
    }
    return it->second.get();
  }

  const AnalysisSession& session_;
  const std::string asked_graph_;
  const RequestResolver& resolve_;
  const ProgressSink& progress_;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;
  // The --tp split of each graph (the planner costs its all-reduces).
  std::vector<std::unique_ptr<TensorParallelPlan>> splits_;
  std::map<const Graph*, const TensorParallelPlan*> tensor_parallel_;
  // The --fused-loss rewrite of each graph (the program's loss follows it).
  std::vector<std::unique_ptr<FusedLossPlan>> fused_losses_;
  std::map<const Graph*, const FusedLossPlan*> fused_loss_;
  // The --loss-chunks rewrite of each graph (the program's loss terms follow it).
  std::vector<std::unique_ptr<ChunkedLossPlan>> chunked_losses_;
  std::map<const Graph*, const ChunkedLossPlan*> chunked_loss_;
  // The shape check of each --tp graph's model before its split (null without --tp).
  std::map<const Graph*, std::shared_ptr<MicroBatchShapeCheck>> shapes_;
  // The fp32 placement of each graph's math-kernel attentions (ModelRewrites::fp32_upcast).
  std::vector<std::unique_ptr<std::vector<std::string>>> upcasts_;
  std::map<const Graph*, const std::vector<std::string>*> fp32_upcast_;
  // Shared by every alternative (per graph where the fact is the graph's).
  std::shared_ptr<DerivationCache> derivations_ = std::make_shared<DerivationCache>();
  std::map<const Graph*, std::shared_ptr<NodeCostsCache>> node_costs_;
  struct ShapeCheck {
    const Graph* graph = nullptr;
    Bindings bindings;
    std::shared_ptr<MicroBatchShapeCheck> check;  // null: not checked
  };
  std::vector<ShapeCheck> shape_checks_;
};

AlternativeContext ContextOf(const AnalysisSession& session, const PlanArguments& asked) {
  const TrainingPlan& plan = session.plan;
  AlternativeContext context;
  context.asked = RecordedFlagsOf(asked);
  context.budget_bytes = plan.budget_bytes;
  context.persistent_state_bytes = PersistentStateBytes(plan);
  if (session.request.planner.allocator == AllocatorKind::kCaching)
    context.live_peak_bytes = plan.chosen.exact_peak_bytes;
  context.gpus = plan.program.data_parallel_ranks * session.request.planner.tensor_parallel.degree;
  context.gpu_supports_bf16 = session.request.planner.gpu.supports_bf16;
  if (plan.infeasible) context.smallest_fitting_gpu = plan.infeasible->smallest_fitting_gpu;
  if (std::optional<SymbolId> batch = session.graph.batch_symbol())
    context.batch_symbol = session.graph.symbols().Name(*batch);
  return context;
}

}  // namespace

void AddSessionAlternatives(AnalysisSession& session, const PlanArguments& asked,
                            const RequestResolver& resolve, const ProgressSink& progress) {
  const TrainingPlan& plan = session.plan;
  if (plan.feasible || !plan.infeasible) return;
  const AlternativeContext context = ContextOf(session, asked);
  AlternativePlanner planner(session, context.asked, resolve, progress);
  AlternativesReport& report = session.alternatives.emplace();
  report.asked = context.asked;
  report.search = SearchAlternatives(context, AlternativeOptions{},
                                     [&planner](const PlanFlags& flags, const PlanFlags& change) {
                                       return planner.Plan(flags, change);
                                     });
  session.report.alternatives = &report;
}

AlternativesReport SessionOomAlternatives(const AnalysisSession& session,
                                          const PlanArguments& asked, const OomRun& run,
                                          const RequestResolver& resolve,
                                          const ProgressSink& progress) {
  const AlternativeContext context = ContextOf(session, asked);
  AlternativePlanner planner(session, context.asked, resolve, progress);
  AlternativesReport report;
  report.asked = context.asked;
  report.search = SearchOomAlternatives(
      context, run, [&planner](const PlanFlags& flags, const PlanFlags& change) {
        return planner.Plan(flags, change);
      });
  return report;
}

}  // namespace memplan
