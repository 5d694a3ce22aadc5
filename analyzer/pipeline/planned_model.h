#pragma once
// The graph a request plans on: the model imported, fine-tuned, with --attention applied, the
// --dim values bound, the loss fused and --tp applied, prepared the one way every planning verb
// (analyze and its alternatives, verify, explain, baseline, check) uses.

#include <string>
#include <vector>

#include "analyzer/derivation/attention_plan.h"
#include "analyzer/derivation/chunked_loss_plan.h"
#include "analyzer/derivation/fused_loss_plan.h"
#include "analyzer/pipeline/plan_request.h"
#include "analyzer/pipeline/progress_sink.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// Imports the model and applies the request's fine-tuning changes (--train, --freeze, --lora).
// Every verb that plans loads its model through this. Errors are bad input (exit 2).
Expected<Graph> LoadPlannedModel(const PlanRequest& request,
                                 const ProgressSink& progress = NoProgress());

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
  AttentionPlan attention;       // --attention as applied to the graph
  FusedLossPlan fused_loss;      // --fused-loss as applied to the graph (after attention)
  ChunkedLossPlan chunked_loss;  // --loss-chunks as applied to the graph (after the fused loss)
  // The nodes of math-kernel attentions placed in fp32 in 16-bit plans (appended to the
  // request's search.force_fp32): a request planned on this graph again needs them too.
  std::vector<std::string> fp32_upcast;
};
Expected<ModelRewrites> PrepareLoadedModel(Graph& graph, PlanRequest& request);

}  // namespace memplan
