#include "analyzer/derivation/program_derivation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "analyzer/derivation/compiled_partition.h"
#include "analyzer/derivation/gradient_flow.h"
#include "analyzer/derivation/host_offload.h"
#include "analyzer/derivation/liveness.h"
#include "analyzer/derivation/logits_class_axis.h"
#include "analyzer/derivation/program_dtypes.h"
#include "analyzer/derivation/python_references.h"
#include "analyzer/derivation/rank_sharding.h"
#include "analyzer/derivation/recompute_set.h"
#include "analyzer/derivation/step_emission.h"
#include "analyzer/derivation/view_aliasing.h"
#include "analyzer/precision/loss_precision.h"
#include "analyzer/precision/precision_policy.h"
#include "analyzer/program/paged_optimizer_state.h"
#include "analyzer/program/program_integrity.h"
#include "analyzer/recompute/module_units.h"
#include "graph/ops/op_registry.h"

// The derivation is a sequence of passes, each a function returning a value
// (analyzer/derivation/): resolve the loss target, the recompute set, gradient flow, dtypes;
// then step emission writes the steps (with --offload activations, the saved-tensor copies), and
// liveness places the frees; data parallelism rewrites the program per rank, and --offload
// optimizer(+params) moves state to the host.

namespace memplan {
namespace {

// The values the loss reads and the loss resolved against each (one term per value).
Status ResolveLossTargets(const Graph& g, const OpRegistry& registry, const ProgramOptions& options,
                          DerivationAnalysis& analysis) {
  std::vector<ValueId> outputs;
  for (const std::string& name : options.loss_outputs) {
    auto found = g.FindValue(name);
    if (!found) return MakeError("loss output '" + name + "' is not a value of the graph");
    if (std::find(outputs.begin(), outputs.end(), *found) != outputs.end())
      return MakeError("loss output '" + name + "' is named twice");
    outputs.push_back(*found);
  }
  if (outputs.empty()) {
    if (g.outputs().empty()) return MakeError("the graph has no output to attach a loss to");
    outputs.push_back(g.outputs().front());
  }
  if (!options.output_losses.empty() && options.output_losses.size() != outputs.size())
    return MakeError(std::to_string(options.output_losses.size()) + " losses for " +
                     std::to_string(outputs.size()) +
                     " loss outputs: name one loss, or one per loss output");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value& out = g.value(outputs[i]);
    if (out.kind == ValueKind::kConstant || out.kind == ValueKind::kParameter)
      return MakeError("model output '" + out.name + "' is not computed from the inputs");
    if (out.kind == ValueKind::kInput)
      return MakeError("model output '" + out.name +
                       "' is a graph input, not computed by the model");
    const LossKind kind = options.output_losses.empty() ? options.loss : options.output_losses[i];
    AnalyzedLoss loss;
    loss.output = outputs[i];
    MEMPLAN_TRY(loss.spec,
                ResolveLoss(kind, options.loss_op_type, options.loss_op_domain, out.dtype,
                            out.shape, out.name, TraceClassAxis(g, registry, outputs[i])));
    analysis.losses.push_back(std::move(loss));
  }
  return OkStatus();
}

// None in fp32; the option or the precision's default otherwise.
Expected<LossScaling> ResolveLossScaling(const ProgramOptions& options) {
  if (WorkingDType(options.precision) == DType::kUndefined) return LossScaling{};
  LossScaling scaling = options.loss_scaling.value_or(DefaultLossScaling(options.precision));
  if (scaling.mode == LossScalingMode::kStatic &&
      !(std::isfinite(scaling.scale) && scaling.scale > 0))
    return MakeError("a static loss scale must be a positive finite number, got " +
                     std::to_string(scaling.scale));
  return scaling;
}

// torchtune's optimizer_in_bwd steps each parameter inside backward; the recipe refuses what
// needs the whole gradient set at once (full_finetune_single_device.py: "Gradient accumulation
// is not supported with optimizer in bwd", "Gradient clipping is not supported ...").
Status CheckOptimizerInBackward(const ProgramOptions& options, const LossScaling& scaling) {
  if (!options.optimizer_in_backward) return OkStatus();
  const std::string flag = "--optimizer-in-backward";
  if (options.accumulation_steps > 1)
    return MakeError(flag +
                     " steps each parameter as soon as its gradient is accumulated, so "
                     "gradients cannot accumulate over micro-batches (torchtune refuses "
                     "gradient_accumulation_steps > 1 with optimizer_in_bwd); got " +
                     std::to_string(options.accumulation_steps) + " accumulation steps");
  if (options.clip_gradients)
    return MakeError(flag +
                     " and --clip-grad: clipping needs every gradient at once (torchtune "
                     "refuses clip_grad_norm with optimizer_in_bwd)");
  if (scaling.mode != LossScalingMode::kNone)
    return MakeError(flag +
                     ": loss scaling checks every gradient for inf before any step; plan "
                     "bf16 or --loss-scaling none");
  if (options.data_parallel)
    return MakeError(flag + " is modelled for one GPU; with --gpus it is not planned yet");
  if (OffloadsOptimizer(options.offload.mode))
    return MakeError(flag + " and --offload " + std::string(OffloadModeName(options.offload.mode)) +
                     ": the offloaded optimizer steps on the host after backward");
  return OkStatus();
}

// The option combinations no pass plans, refused before any pass reads the graph.
Status CheckProgramOptions(const ProgramOptions& options) {
  if (options.accumulation_steps < 1) {
    return MakeError("accumulation steps must be >= 1, got " +
                     std::to_string(options.accumulation_steps));
  }
  if (options.offload.mode != OffloadMode::kNone && options.data_parallel) {
    return MakeError("--offload " + std::string(OffloadModeName(options.offload.mode)) +
                     " is modelled for one GPU; with --gpus it is not planned yet");
  }
  // torchtune's hooks run under module checkpointing: what goes to the host is then each
  // checkpointed block's inputs and the saves outside the blocks (saved_tensor_offload.h);
  // Unsloth's moves each reentrant-checkpointed block's first input and nothing else.
  const bool checkpointed_offload =
      !options.recompute_modules.empty() &&
      ((IsTorchtuneHooks(options.offload.hooks) && !options.recompute_reentrant) ||
       (options.offload.hooks == OffloadHooks::kUnsloth && options.recompute_reentrant));
  if (options.offload.mode == OffloadMode::kActivations && !checkpointed_offload &&
      (!options.recompute.empty() || !options.recompute_modules.empty())) {
    return MakeError(
        "--offload activations keeps no saved tensor on the GPU, so there is nothing for "
        "recompute to drop; plan it with --recompute none");
  }
  if (options.compile && options.offload.mode == OffloadMode::kActivations) {
    return MakeError(
        "--compile with --offload activations is not planned yet: the partitioner's saved set "
        "would be what goes to the host; plan one of them");
  }
  return OkStatus();
}

// Derivation passes 1-3 and what they resolve: the recompute set, the order, the loss terms and
// their dtypes, loss scaling, gradient flow, program dtypes, views, and --compile's saved set.
Expected<DerivationAnalysis> AnalyzeForEmission(const Graph& graph, const OpRegistry& registry,
                                                const ProgramOptions& options) {
  DerivationAnalysis analysis;
  // Checks the listed ids before any pass reads the graph; --compile resolves it again below.
  MEMPLAN_TRY(analysis.recompute,
              ResolveRecomputeSet(graph, options.recompute, options.recompute_modules));
  MEMPLAN_TRY(analysis.order, graph.TopologicalOrder());
  MEMPLAN_RETURN_IF_ERROR(ResolveLossTargets(graph, registry, options, analysis));
  MEMPLAN_TRY(analysis.loss_scaling, ResolveLossScaling(options));
  MEMPLAN_RETURN_IF_ERROR(CheckOptimizerInBackward(options, analysis.loss_scaling));
  const AnalyzedLoss& first = analysis.losses.front();
  // --loss-chunks: ApplyChunkedLoss made one cross-entropy term per chunk of [batch, seq, vocab]
  // logits (chunked_loss_plan.h); on a graph it did not rewrite, the whole output is one chunk.
  for (const AnalyzedLoss& loss : analysis.losses) {
    if (options.loss_chunks == 0) break;
    if (loss.spec.kind != LossKind::kCrossEntropy)
      return MakeError(
          "--loss-chunks chunks a cross-entropy loss (torchtune's "
          "CEWithChunkedOutputLoss); the loss here is " +
          std::string(LossKindName(loss.spec.kind)));
    const Shape& logits = graph.value(loss.output).shape;
    if (!logits.known || logits.rank() != 3)
      return MakeError(
          "--loss-chunks splits [batch, seq, vocab] logits along seq (torchtune's "
          "chunked_output); output '" +
          graph.value(loss.output).name + "' is not");
  }
  std::vector<ValueId> loss_outputs;
  for (const AnalyzedLoss& loss : analysis.losses) loss_outputs.push_back(loss.output);
  analysis.gradients = AnalyzeGradientFlow(graph, registry, analysis.order, loss_outputs);
  const OpSchema& loss_schema = registry.FindOrUnknown(first.spec.op_type, first.spec.domain);
  analysis.regime = RegimeOf(options.precision, options.amp_mode);
  analysis.dtypes = DeriveProgramDTypes(graph, registry, analysis.order, analysis.regime,
                                        options.node_dtype, first.output, loss_schema.amp);
  for (AnalyzedLoss& loss : analysis.losses)
    loss.compute = LossComputeDType(options.loss_dtype, options.loss_chunks, analysis.regime,
                                    registry.FindOrUnknown(loss.spec.op_type, loss.spec.domain).amp,
                                    analysis.dtypes.value[loss.output.index()]);
  analysis.dtypes.loss_compute = first.compute;
  analysis.views = DecideViews(graph, registry, analysis.order, &analysis.dtypes);
  AliasSameDTypeCasts(graph, analysis.order, analysis.dtypes.value, analysis.views);
  if (options.compile) {
    std::vector<ValueId> loss_outputs;
    for (const AnalyzedLoss& loss : analysis.losses) loss_outputs.push_back(loss.output);
    CompiledPartition compiled =
        PartitionLikeInductor(graph, registry, analysis.order, analysis.gradients, analysis.dtypes,
                              analysis.views, loss_outputs);
    // The partitioner's recompute joins what the plan checkpoints (torch.compile over
    // torch.utils.checkpoint recomputes both).
    std::vector<NodeId> recompute = options.recompute;
    recompute.insert(recompute.end(), compiled.recompute.begin(), compiled.recompute.end());
    MEMPLAN_TRY(analysis.recompute,
                ResolveRecomputeSet(graph, recompute, options.recompute_modules));
    analysis.saves_compiled = std::move(compiled.saves_compiled);
  }
  return analysis;
}

// --gpus: the per-rank program (FSDP's transformer wrap shards block by block: which block each
// node is part of).
Expected<TrainingProgram> ShardPerRank(const Graph& graph, TrainingProgram program,
                                       const DataParallelOptions& data_parallel) {
  std::vector<int> block_of_node;
  if (data_parallel.fsdp_wrap_blocks) {
    block_of_node.assign(graph.num_nodes(), -1);
    const std::vector<CheckpointableModule> blocks = FindCheckpointableModules(graph);
    for (size_t b = 0; b < blocks.size(); ++b)
      for (NodeId n : blocks[b].nodes) block_of_node[n.index()] = static_cast<int>(b);
  }
  return DerivePerRankProgram(std::move(program), data_parallel, block_of_node);
}

}  // namespace

Expected<TrainingProgram> DeriveTrainingProgram(const Graph& graph, const ProgramOptions& options) {
  MEMPLAN_RETURN_IF_ERROR(CheckProgramOptions(options));
  const OpRegistry& registry = options.registry ? *options.registry : OpRegistry::Get();
  MEMPLAN_TRY(const DerivationAnalysis analysis, AnalyzeForEmission(graph, registry, options));
  MEMPLAN_TRY(EmittedProgram emitted, EmitSteps(graph, options, registry, analysis));
  // Python's references (the batch variables, a module's input) hold some buffers past their
  // last reader: python_references.h.
  const std::vector<LogicalTime> holds = PythonReferenceHolds(graph, emitted.program);
  ApplyLiveness(PlanLiveness(emitted.program, emitted.uses, &holds), emitted.program);
  TrainingProgram program = std::move(emitted.program);
  if (options.data_parallel) {
    MEMPLAN_TRY(program, ShardPerRank(graph, std::move(program), *options.data_parallel));
  }
  MEMPLAN_TRY(program, OffloadToHost(std::move(program), graph, options.offload));
  // bitsandbytes' paged state is in CUDA unified memory, not the caching allocator's pool.
  PlacePagedOptimizerState(program);
#ifndef NDEBUG
  const Status verified = VerifyProgram(program);
  MEMPLAN_CHECK(verified.ok()) << "the derived program fails verification: "
                               << verified.error().message;
#endif
  return program;
}

void ApplyPlacement(const PrecisionPlacement& placement, ProgramOptions& options) {
  options.precision = placement.precision;
  options.amp_mode = placement.amp_mode;
  options.node_dtype = placement.node_dtype;
  options.loss_scaling = placement.loss_scaling;
}

}  // namespace memplan
