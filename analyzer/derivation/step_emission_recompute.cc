// Recomputation in backward: checkpointed modules' arguments held, their outputs re-run, and a
// dropped activation made available again before a backward step reads it.

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

// The checkpoint arguments (checkpoint_arguments.h) of the module node `n` belongs to, allocated
// at the module's first forward step (a value several modules read: at the first of them).
void StepEmitter::HoldCheckpointArguments(NodeId n) {
  const int group = a_.recompute.group_of[n.index()];
  if (group < 0 || static_cast<size_t>(group) >= checkpoint_arguments_.size()) return;
  if (arguments_held_[static_cast<size_t>(group)]) return;
  arguments_held_[static_cast<size_t>(group)] = true;
  std::vector<BufferId>& held = held_by_module_[static_cast<size_t>(group)];
  for (ValueId v : checkpoint_arguments_[static_cast<size_t>(group)]) {
    BufferId& b = checkpoint_argument_of_value_[v];
    if (!b.valid()) {
      const Value& value = g_.value(v);
      b = NewBuffer("checkpoint_argument(" + value.name + ")", BufferRole::kValue,
                    MemoryCategory::kActivations, value.dtype, value.shape);
      AllocateHere(b);
      builder_.MarkHeldByCheckpoint(b);
    }
    held.push_back(b);
  }
}

// Each backward step of a checkpointed module keeps what the module holds alive (its
// arguments; with --recompute-reentrant its recomputed outputs): freed after the last backward
// step of the last module holding them.
void StepEmitter::TouchHeldByModule(NodeId n) {
  const int group = a_.recompute.group_of[n.index()];
  if (group < 0 || static_cast<size_t>(group) >= held_by_module_.size()) return;
  for (BufferId b : held_by_module_[static_cast<size_t>(group)]) Touch(b);
}

// --recompute-reentrant: CheckpointFunction.backward re-runs the module's whole forward (no
// early stop), so the producers of what leaves the module run again too, after its dropped
// nodes; their new outputs are the `outputs` it passes to torch.autograd.backward, alive until
// that inner backward returns, as are the gradients of those outputs (its `args`). (Forward ran
// under no_grad: the output producers' saved tensors are the re-run's, CreateExtras in
// Recompute replaces the forward's.)
void StepEmitter::RecomputeModuleOutputs(size_t group) {
  if (group >= options_.recompute_modules.size()) return;
  std::vector<NodeId> producers;
  for (NodeId m : options_.recompute_modules[group]) {
    const NodeInfo& info = nodes_[m.index()];
    if (info.active && !info.recompute && !info.recomputed_in_backward) producers.push_back(m);
  }
  std::sort(producers.begin(), producers.end(), [this](NodeId a, NodeId b) {
    return order_position_[a.index()] < order_position_[b.index()];
  });
  for (NodeId m : producers) {
    Recompute(m);
    for (ValueId o : g_.node(m).outputs) {
      if (!IsRuntimeValue(o)) continue;
      if (recomputed_storage_[o.index()].valid())
        held_by_module_[group].push_back(recomputed_storage_[o.index()]);
      // The gradients of the outputs are backward()'s `args`, which the Python frame holds
      // until the inner backward returns.
      if (gradient_[o.index()].valid()) held_by_module_[group].push_back(gradient_[o.index()]);
    }
  }
}

// The buffer holding activation `v` at this point of backward, recomputing what was dropped.
BufferId StepEmitter::EnsureAvailable(ValueId v) {
  if (recomputed_storage_[v.index()].valid()) return recomputed_storage_[v.index()];
  NodeId producer = g_.value(v).producer;
  if (!producer.valid() || !nodes_[producer.index()].active) return value_storage_[v.index()];
  const NodeInfo& info = nodes_[producer.index()];
  if (info.recompute) {
    Recompute(producer);
    return recomputed_storage_[v.index()];
  }
  if (info.is_view) {
    ValueId base = g_.node(producer).inputs[0];
    if (!IsRuntimeValue(base) || IsParameter(base)) return value_storage_[v.index()];
    BufferId b = EnsureAvailable(base);
    if (b == value_storage_[base.index()]) return value_storage_[v.index()];
    // The base was recomputed: re-create the view on the new storage (allocates nothing).
    Step& step = NewStep(StepKind::kRecompute, g_.node(producer).name, producer);
    step.compute_dtype = info.compute;
    step.inputs = {b};
    Touch(b);
    for (ValueId o : g_.node(producer).outputs)
      if (IsRuntimeValue(o)) recomputed_storage_[o.index()] = b;
    step.outputs.assign(g_.node(producer).outputs.size(), b);
    return b;
  }
  return value_storage_[v.index()];
}

void StepEmitter::Recompute(NodeId n) {
  NodeInfo& info = nodes_[n.index()];
  if (info.recomputed_in_backward) return;
  // A node of a checkpointed module: re-run the whole module now, in forward order, as
  // torch.utils.checkpoint re-runs the module's forward at the first unpack of one of its saved
  // tensors (recompute_set.h). Each member then recurses into its inputs as below.
  const int group = a_.recompute.group_of[n.index()];
  if (group >= 0 && !group_recomputed_[static_cast<size_t>(group)]) {
    group_recomputed_[static_cast<size_t>(group)] = true;
    UnpackModuleInputs(static_cast<size_t>(group));
    std::vector<NodeId> members = a_.recompute.groups[static_cast<size_t>(group)];
    std::sort(members.begin(), members.end(), [this](NodeId a, NodeId b) {
      return order_position_[a.index()] < order_position_[b.index()];
    });
    for (NodeId m : members) Recompute(m);
    if (options_.recompute_reentrant) RecomputeModuleOutputs(static_cast<size_t>(group));
    return;
  }
  const Node& node = g_.node(n);
  // Inputs first: they may themselves be dropped (a recomputed segment).
  std::vector<BufferId> sources(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId u = node.inputs[i];
    if (IsRuntimeValue(u) && !IsParameter(u)) sources[i] = EnsureAvailable(u);
  }
  info.recomputed_in_backward = true;
  Step& step = NewStep(StepKind::kRecompute, node.name, n);
  step.compute_dtype = info.compute;
  ReadInputs(n, info.compute, !info.is_view, /*share_casts=*/false,
             [&](size_t i) { return sources[i]; });
  std::vector<BufferId> outputs(node.outputs.size());
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    ValueId o = node.outputs[j];
    if (!IsRuntimeValue(o)) continue;
    if (info.is_view && !info.read.empty() && info.read[0].valid()) {
      outputs[j] = info.read[0];
    } else {
      outputs[j] = NewBuffer(g_.value(o).name + ".recomputed", BufferRole::kRecomputed,
                             MemoryCategory::kActivations, dtype_[o.index()], ShapeOf(o), o, n);
      AllocateHere(outputs[j]);
    }
    recomputed_storage_[o.index()] = outputs[j];
  }
  p_.steps.back().outputs = outputs;
  EmitForwardWorkspace(n);
  if (info.needs_backward) CreateExtras(n);
}

}  // namespace memplan::emission
