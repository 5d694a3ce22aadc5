#include "analyzer/pipeline/planned_model.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analyzer/parallel/tensor_parallel.h"
#include "graph/bind_symbols.h"
#include "graph/bound_shape_check.h"
#include "graph/ops/op_registry.h"

namespace memplan {

Expected<Graph> LoadPlannedModel(const PlanRequest& request, const ProgressSink& progress) {
  MEMPLAN_TRY(Graph graph, LoadModel(request.analysis, request.fusions, progress));
  if (request.finetune.changes_graph())
    MEMPLAN_RETURN_IF_ERROR(ApplyFineTuning(graph, request.finetune));
  return graph;
}

Expected<AttentionPlan> ApplyRequestedAttention(Graph& graph, const PlanRequest& request) {
  return ApplyAttentionMode(graph, request.attention, request.analysis.model,
                            request.search.precision == PrecisionChoice::kFp32);
}

Status ApplyRequestedTensorParallel(Graph& graph, PlanRequest& request) {
  MEMPLAN_TRY(request.planner.tensor_parallel,
              ApplyTensorParallel(graph, request.tensor_parallel, request.analysis.model));
  return OkStatus();
}

Status BindPlanSymbols(const Graph& graph, PlanRequest& request) {
  MEMPLAN_TRY(Bindings bindings, BindSymbols(graph, /*batch=*/std::nullopt, request.analysis.dims));
  // The planner searches the batch dimension itself, so a --dim that binds it would be silently
  // overwritten: it pins the micro-batch instead, exactly as --batch does.
  if (std::optional<SymbolId> batch = graph.batch_symbol()) {
    if (std::optional<int64_t> pinned = bindings.Get(*batch)) {
      const std::string flag =
          "--dim " + graph.symbols().Name(*batch) + "=" + std::to_string(*pinned);
      std::optional<int64_t>& micro_batch = request.planner.micro_batch;
      if (micro_batch && *micro_batch != *pinned) {
        return MakeError(flag + " binds the batch dimension, which disagrees with --micro-batch " +
                         std::to_string(*micro_batch) + "; give one of them");
      }
      micro_batch = pinned;
    }
  }
  request.planner.bindings = std::move(bindings);
  return OkStatus();
}

Expected<ModelRewrites> PrepareLoadedModel(Graph& graph, PlanRequest& request) {
  ModelRewrites rewrites;
  MEMPLAN_TRY(rewrites.attention, ApplyRequestedAttention(graph, request));
  // PyTorch's math SDPA kernel computes in fp32 when its inputs are fp16/bf16
  // (torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp is off by default): q, k, v and the
  // scores are upcast, so the attentions it runs for a mask that requires grad (T5's trained
  // position bias) are placed in fp32, their casts saved as autocast's are (docs/attention.md).
  // Only the kernel's arithmetic is placed: views (and the Identity of a zero dropout) and casts
  // have no dtype of their own (registry facts is_view, converts_dtype).
  std::set<std::string> upcast;
  for (const FusedAttention& kept : rewrites.attention.math_kernel)
    if (kept.mask_requires_grad) upcast.insert(kept.replaced.begin(), kept.replaced.end());
  for (const Node& n : graph.nodes()) {
    if (!upcast.count(n.name) || !n.domain.empty()) continue;
    const OpSchema* schema = OpRegistry::Get().Find(n.op_type);
    if (schema != nullptr && !schema->is_view && !schema->converts_dtype)
      rewrites.fp32_upcast.push_back(n.name);
  }
  request.search.force_fp32.insert(request.search.force_fp32.end(), rewrites.fp32_upcast.begin(),
                                   rewrites.fp32_upcast.end());
  MEMPLAN_RETURN_IF_ERROR(BindPlanSymbols(graph, request));
  // The rewrite keeps the symbol table, so the bindings hold for the rewritten graph.
  MEMPLAN_TRY(rewrites.fused_loss,
              ApplyFusedLoss(graph, request.fused_loss, request.planner.program.loss,
                             request.planner.bindings, request.analysis.model));
  request.planner.program.loss = rewrites.fused_loss.ProgramLoss(request.planner.program.loss);
  // --loss-chunks: the head runs once per chunk of tokens and the loss has one term per chunk
  // (chunked_loss_plan.h); --fused-loss with it was refused with the request.
  ProgramOptions& program = request.planner.program;
  MEMPLAN_TRY(rewrites.chunked_loss,
              ApplyChunkedLoss(graph, program.loss_chunks, program.loss, program.loss_outputs,
                               request.planner.bindings, request.analysis.model));
  rewrites.chunked_loss.PlanTerms(program);
  // One rank's slice keeps the whole model's Reshape targets and Split sizes, so the micro-batches
  // the search tries are checked against the model as it is before the split.
  if (request.tensor_parallel > 1)
    request.planner.micro_batch_shapes =
        MicroBatchShapeCheck::Snapshot(graph, request.planner.bindings);
  MEMPLAN_RETURN_IF_ERROR(ApplyRequestedTensorParallel(graph, request));
  return rewrites;
}

}  // namespace memplan
