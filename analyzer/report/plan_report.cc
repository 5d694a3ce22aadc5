#include "analyzer/report/plan_report.h"

#include "analyzer/simulation/allocator_config.h"
#include "graph/trainable_parameters.h"

namespace memplan {

namespace {

// The dtype the loss step computed in: its compute dtype, or the logits' as it read them.
DType LossDTypeOf(const TrainingProgram& program) {
  if (program.loss_step < 0 || static_cast<size_t>(program.loss_step) >= program.steps.size())
    return DType::kUndefined;
  const Step& loss = program.steps[static_cast<size_t>(program.loss_step)];
  if (loss.compute_dtype != DType::kUndefined) return loss.compute_dtype;
  return loss.inputs.empty() ? DType::kUndefined : program.buffer(loss.inputs[0]).dtype;
}

// The optimizer step and the loss as the program runs them.
void AddStepFacts(const PlanSources& in, PlanReport& r) {
  const TrainingProgram& program = in.plan->program;
  const ProgramOptions& options = in.options->program;
  if (program.precision != Precision::kFp32) r.amp_mode = program.amp_mode;
  r.optimizer = program.optimizer_kind;
  if (HasTorchOptimizerImpls(program.optimizer_kind)) r.optimizer_impl = program.optimizer_impl;
  r.zero_grad = program.zero_grad;
  r.clip_gradients = options.clip_gradients;
  r.fused_loss = in.fused_loss != nullptr && in.fused_loss->fused();
  r.fusions = in.fusions;
  // The fused node computes the cross entropy; the program only sums its scalar.
  r.loss = r.fused_loss ? LossKind::kCrossEntropy : program.loss;
  if (program.loss_terms.size() > 1) {
    for (const LossTerm& term : program.loss_terms) {
      r.loss_outputs.push_back(in.graph->value(term.output).name);
      r.output_losses.push_back(term.kind);
    }
  }
  r.loss_scaling = program.loss_scaling.mode;
  if (program.loss_scaling.mode != LossScalingMode::kNone)
    r.loss_scale = program.loss_scaling.scale;
  r.loss_dtype = LossDTypeOf(program);
  r.loss_chunks = options.loss_chunks;
  r.optimizer_in_backward = options.optimizer_in_backward;
  r.compile = options.compile;
}

// The recomputed nodes and modules, and the per-node dtypes of a mixed-precision plan.
void AddNodeLists(const PlanSources& in, PlanReport& r) {
  const Graph& graph = *in.graph;
  const TrainingPlan& plan = *in.plan;
  const TrainingProgram& program = plan.program;
  for (NodeId id : program.recomputed) {
    const Node& node = graph.node(id);
    r.recompute_nodes.push_back(node.name);
    if (OpTypeOfNodeName(node.name) != node.op_type) r.recompute_op_types[node.name] = node.op_type;
  }
  r.recompute_unit = plan.recompute_unit;
  r.recompute_modules = plan.checkpoint_modules;
  r.recompute_reentrant = in.options->program.recompute_reentrant &&
                          plan.recompute_unit == RecomputeUnit::kModule &&
                          !plan.checkpoint_modules.empty();
  r.checkpointable_modules = static_cast<int64_t>(plan.checkpointable_modules);
  r.checkpoints = CheckpointsOf(r);
  if (program.precision == Precision::kFp32) return;
  for (const Step& step : program.steps) {
    if (step.kind != StepKind::kForward || !step.node.valid()) continue;
    if (step.compute_dtype == DType::kFloat16 || step.compute_dtype == DType::kBFloat16) {
      r.fp16_nodes.push_back(step.name);
    } else if (step.compute_dtype == DType::kFloat32) {
      r.fp32_nodes.push_back(step.name);
    }
  }
}

// Where the plan runs: data and tensor parallel, host offload, the allocator's configuration.
void AddPlacementFacts(const PlanSources& in, PlanReport& r) {
  const PlannerOptions& options = *in.options;
  r.data_parallel = options.program.data_parallel;
  if (r.data_parallel) r.data_parallel->nodes = ResolvedCollectiveOptions(options).nodes;
  r.tensor_parallel = options.tensor_parallel.degree;
  r.column_parallel = options.tensor_parallel.column;
  r.row_parallel = options.tensor_parallel.row;
  r.offload = in.plan->program.offload;
  if (r.offload == OffloadMode::kActivations) r.offload_hooks = options.program.offload.hooks;
  AllocatorConfig alloc_config = options.alloc_config;
  alloc_config.expandable_segments = options.allocator == AllocatorKind::kExpandable;
  r.alloc_conf = AllocatorConfigString(alloc_config);
}

// The memory result later verbs compare: the peak, its breakdown and the saved activations.
void AddMemory(const PlanSources& in, PlanReport& r) {
  const TrainingPlan& plan = *in.plan;
  const SimulationResult& sim = plan.simulation;
  r.memory.peak_bytes = plan.chosen.peak_bytes;
  r.memory.breakdown = sim.peak_breakdown;
  r.memory.saved_activation_bytes = sim.saved_activation_bytes;
  // Per node, the bytes it keeps for backward (saved tensors it produced): CI checks name the
  // nodes whose saved activations grew.
  for (const Buffer& b : plan.program.buffers) {
    if (!b.held_for_backward || !b.node.valid() || b.id.index() >= sim.buffer_bytes.size())
      continue;
    r.memory.saved_bytes_by_node[in.graph->node(b.node).name] += sim.buffer_bytes[b.id.index()];
  }
}

}  // namespace

CheckpointModules CheckpointsOf(const PlanReport& plan) {
  if (plan.ModuleUnit())
    return GroupRecomputeByPlannedModules(plan.recompute_modules, plan.recompute_nodes);
  return GroupRecomputeByModule(plan.recompute_nodes);
}

std::string OptimizerLabelOf(const PlanReport& plan) {
  // optimizer_impl is set exactly for the optimizers torch.optim implements three ways.
  return plan.optimizer_impl ? OptimizerLabel(plan.optimizer, *plan.optimizer_impl)
                             : std::string(OptimizerKindName(plan.optimizer));
}

PlanReport PlanReportOf(const PlanSources& in) {
  MEMPLAN_CHECK(in.graph != nullptr && in.options != nullptr && in.plan != nullptr);
  const TrainingPlan& plan = *in.plan;
  const TrainingProgram& program = plan.program;
  PlanReport r;
  r.model_path = in.model_path;
  r.model_name = in.model_name;
  r.micro_batch = plan.chosen.micro_batch;
  r.accumulation_steps = plan.chosen.accumulation_steps;
  r.precision = program.precision;
  AddStepFacts(in, r);
  AddNodeLists(in, r);
  if (in.attention != nullptr) r.attention = in.attention->requested;
  AddPlacementFacts(in, r);
  r.parameter_count = ModelParameterCount(*in.graph);
  r.trainable_parameter_count = TrainedParameterCount(*in.graph);
  r.lora = LoraPlanReportOf(*in.graph);
  r.base_dtype = in.options->program.base_dtype;
  for (size_t s = 0; s < program.symbols.size(); ++s) {
    auto v = plan.bindings.Get(static_cast<SymbolId>(s));
    if (v)
      r.bindings.push_back(
          DimBinding{std::string(program.symbols.Name(static_cast<SymbolId>(s))), *v});
  }
  AddMemory(in, r);
  return r;
}

}  // namespace memplan
