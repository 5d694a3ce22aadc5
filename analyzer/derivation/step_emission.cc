#include "analyzer/derivation/step_emission.h"

#include "analyzer/derivation/step_emitter.h"

namespace memplan {
namespace emission {

Expected<EmittedProgram> StepEmitter::Run() {
  p_.symbols = g_.symbols();
  p_.batch_symbol = g_.batch_symbol();
  p_.accumulation_steps = options_.accumulation_steps;
  p_.optimizer_kind = options_.optimizer;
  p_.optimizer_impl = options_.optimizer_impl;
  p_.precision = options_.precision;
  p_.amp_mode = options_.amp_mode;
  p_.loss_scaling = a_.loss_scaling;
  p_.zero_grad = options_.zero_grad;
  p_.loss = a_.losses.front().spec.kind;
  p_.recomputed = a_.recompute.nodes;
  p_.offload = options_.offload.mode;

  value_storage_.assign(g_.num_values(), BufferId());
  recomputed_storage_.assign(g_.num_values(), BufferId());
  gradient_.assign(g_.num_values(), BufferId());
  param_index_.assign(g_.num_values(), -1);
  stored_frozen_.assign(g_.num_values(), false);
  quantized_.assign(g_.num_values(), false);
  nodes_.assign(g_.num_nodes(), NodeInfo{});
  group_recomputed_.assign(a_.recompute.groups.size(), false);
  order_position_.assign(g_.num_nodes(), 0);
  for (size_t i = 0; i < order_.size(); ++i) order_position_[order_[i].index()] = i;
  for (NodeId n : order_) {
    const Node& node = g_.node(n);
    NodeInfo& info = nodes_[n.index()];
    info.schema = &registry_.FindOrUnknown(node.op_type, node.domain);
    info.is_view = a_.views.node_is_view[n.index()];
    info.active = RunsAtRuntime(g_, n);
    info.recompute = a_.recompute.recompute[n.index()];
    info.needs_backward = a_.gradients.needs_backward[n.index()];
    info.gradient_inputs = a_.gradients.gradient_inputs[n.index()];
    info.compute = a_.dtypes.node_compute[n.index()];
  }

  checkpoint_arguments_ = CheckpointArguments(g_, options_.recompute_modules, [this](NodeId n) {
    const Node& node = g_.node(n);
    return registry_.FindOrUnknown(node.op_type, node.domain).is_view;
  });
  held_by_module_.assign(checkpoint_arguments_.size(), {});
  arguments_held_.assign(checkpoint_arguments_.size(), false);
  if (OffloadsActivations() && IsTorchtuneHooks(options_.offload.hooks)) FindTorchtuneScopes();
  if (OffloadsActivations() && options_.offload.hooks == OffloadHooks::kUnsloth)
    FindUnslothInputs();
  BuildSetup();
  p_.micro_batch.begin = Now();
  MEMPLAN_RETURN_IF_ERROR(BuildForward());
  terms_.resize(a_.losses.size());
  for (size_t i = 0; i < a_.losses.size(); ++i) BuildLoss(i);
  if (options_.optimizer_in_backward) CountGradientContributions();
  BuildBackward();
  p_.micro_batch.end = Now();
  MEMPLAN_RETURN_IF_ERROR(BuildOptimizer());
  EmittedProgram emitted;
  emitted.uses = builder_.uses();
  emitted.program = builder_.TakeProgram();
  return emitted;
}

// The context the registry's saved/workspace rules see for `n`: dtypes as the program runs it
// (after casts), and activations that do not require grad (and frozen parameters) marked as
// inputs, so rules that save an operand only for another operand's gradient decide as autograd
// would. An input read as it is (not through a cast, which makes a new tensor) has the layout
// the view pass gave it.
OpContext StepEmitter::ProgramContext(NodeId n) const {
  OpContext ctx = MakeOpContext(g_, n);
  const Node& node = g_.node(n);
  const NodeInfo& info = nodes_[n.index()];
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId u = node.inputs[i];
    if (!IsRuntimeValue(u)) continue;
    if (i < info.read.size() && info.read[i].valid())
      ctx.inputs[i].dtype = p_.buffer(info.read[i]).dtype;
    const bool through_cast = i < info.read_is_cast.size() && info.read_is_cast[i];
    if (!through_cast) ctx.inputs[i].strides = a_.views.value_strides[u.index()];
    if (ctx.inputs[i].kind == ValueKind::kIntermediate && !requires_grad_[u.index()])
      ctx.inputs[i].kind = ValueKind::kInput;
    // A frozen parameter, or one training never updates (a registered buffer, a constant the
    // dynamo exporter stored as an initializer: graph/exported_buffers.h), is a constant to
    // autograd: nothing is saved for its gradient.
    if (ctx.inputs[i].kind == ValueKind::kParameter && !IsTrainedParameter(g_.value(u)))
      ctx.inputs[i].kind = ValueKind::kInput;
  }
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    ValueId o = node.outputs[j];
    if (IsRuntimeValue(o)) ctx.outputs[j].dtype = dtype_[o.index()];
  }
  return ctx;
}

}  // namespace emission

Expected<EmittedProgram> EmitSteps(const Graph& graph, const ProgramOptions& options,
                                   const OpRegistry& registry, const DerivationAnalysis& analysis) {
  emission::StepEmitter emitter(graph, options, registry, analysis);
  return emitter.Run();
}

}  // namespace memplan
