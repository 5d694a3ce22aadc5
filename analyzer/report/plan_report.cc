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

}  // namespace

PlanReport PlanReportOf(const AnalysisReport& report) {
  MEMPLAN_CHECK(report.graph != nullptr && report.options != nullptr && report.plan != nullptr);
  const TrainingPlan& plan = *report.plan;
  const TrainingProgram& program = plan.program;
  const SimulationResult& sim = plan.simulation;
  PlanReport r;
  r.model_path = report.model_path;
  r.model_name = report.model_name;
  r.micro_batch = plan.chosen.micro_batch;
  r.accumulation_steps = plan.chosen.accumulation_steps;
  r.precision = program.precision;
  r.amp_mode = program.amp_mode;
  r.optimizer = program.optimizer_kind;
  r.optimizer_impl = program.optimizer_impl;
  r.fused_loss = report.fused_loss != nullptr && report.fused_loss->fused();
  // The fused node computes the cross entropy; the program only sums its scalar.
  r.loss = r.fused_loss ? LossKind::kCrossEntropy : program.loss;
  r.zero_grad = program.zero_grad;
  AllocatorConfig alloc_config = report.options->alloc_config;
  alloc_config.expandable_segments = report.options->allocator == AllocatorKind::kExpandable;
  r.alloc_conf = AllocatorConfigString(alloc_config);
  r.loss_dtype = LossDTypeOf(program);
  r.loss_chunks = report.options->program.loss_chunks;
  r.optimizer_in_backward = report.options->program.optimizer_in_backward;
  r.compile = report.options->program.compile;
  r.clip_gradients = report.options->program.clip_gradients;
  r.loss_scaling = program.loss_scaling.mode;
  r.recompute_nodes = report.recompute_nodes;
  r.recompute_op_types = report.recompute_op_types;
  r.recompute_unit = plan.recompute_unit;
  r.recompute_modules = plan.checkpoint_modules;
  r.recompute_reentrant = report.options->program.recompute_reentrant &&
                          plan.recompute_unit == RecomputeUnit::kModule &&
                          !plan.checkpoint_modules.empty();
  r.checkpointable_modules = static_cast<int64_t>(plan.checkpointable_modules);
  r.fp16_nodes = report.fp16_nodes;
  r.fp32_nodes = report.fp32_nodes;
  for (size_t s = 0; s < program.symbols.size(); ++s) {
    auto v = plan.bindings.Get(static_cast<SymbolId>(s));
    if (v)
      r.bindings.push_back(
          DimBinding{std::string(program.symbols.Name(static_cast<SymbolId>(s))), *v});
  }
  r.data_parallel = report.options->program.data_parallel;
  r.offload = program.offload;
  if (program.offload == OffloadMode::kActivations)
    r.offload_hooks = report.options->program.offload.hooks;
  r.parameter_count = ModelParameterCount(*report.graph);
  r.trainable_parameter_count = TrainedParameterCount(*report.graph);
  r.lora = LoraPlanReportOf(*report.graph);
  r.base_dtype = report.options->program.base_dtype;
  r.tensor_parallel = report.options->tensor_parallel.degree;
  r.column_parallel = report.options->tensor_parallel.column;
  r.row_parallel = report.options->tensor_parallel.row;
  if (r.data_parallel) r.data_parallel->nodes = ResolvedCollectiveOptions(*report.options).nodes;
  r.memory.peak_bytes = plan.chosen.peak_bytes;
  r.memory.breakdown = sim.peak_breakdown;
  r.memory.saved_activation_bytes = sim.saved_activation_bytes;
  // Per node, the bytes it keeps for backward (saved tensors it produced): CI checks name the
  // nodes whose saved activations grew.
  for (const Buffer& b : program.buffers) {
    if (!b.held_for_backward || !b.node.valid() || b.id.index() >= sim.buffer_bytes.size())
      continue;
    r.memory.saved_bytes_by_node[report.graph->node(b.node).name] += sim.buffer_bytes[b.id.index()];
  }
  return r;
}

}  // namespace memplan
