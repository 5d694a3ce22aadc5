// Forward: the micro-batch load and each node's forward step, what it saves and the extras it
// makes for backward.

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

// The saved rule's inputs that are tensors torch computes in every forward but memplan folds
// at import, saved as copies made at the node's forward step. A value computed only from
// constants and shapes is folded (its node has no step), yet in torch it is a tensor the step
// allocates: T5's bucketed relative positions (arange, sub, abs, log, where: an int64 [S, S]
// that embedding's backward saves, derivatives.yaml `embedding: indices`). Integer and bool
// values only: a floating constant computed from shapes is a Python number in torch (the
// 1/sqrt(head_dim) scale), saved as a 0-dim tensor of a few bytes or not at all. Not copied:
// initializers and Constant nodes (module buffers and literals, held for the model's lifetime)
// and views of them (GPT-2's causal `bias[:, :, :S, :S]` is a slice of a buffer, no new
// storage); and a value more than one differentiated node reads (one causal mask for every
// layer: torch holds one tensor, which per-node copies would count once per layer).
std::vector<SavedTensor> StepEmitter::ComputedConstantsAsCopies(
    NodeId n, const OpContext& ctx, std::vector<SavedTensor> saved) const {
  const Node& node = g_.node(n);
  for (SavedTensor& s : saved) {
    if (s.source != SavedTensor::Source::kInput) continue;
    const auto i = static_cast<size_t>(s.index);
    if (i >= node.inputs.size() || !node.inputs[i].valid()) continue;
    const ValueId u = node.inputs[i];
    const Value& value = g_.value(u);
    if (value.kind != ValueKind::kConstant || IsFloating(value.dtype) || !value.shape.known ||
        StoredOrViewOfStored(u) || DifferentiatedReaders(u) != 1)
      continue;
    s = SaveContiguousCopy(ctx, s.index);
  }
  return saved;
}

// An initializer, a Constant node's output, or a view (registry is_view) of one.
bool StepEmitter::StoredOrViewOfStored(ValueId v) const {
  for (int depth = 0; depth < 64; ++depth) {
    const Value& value = g_.value(v);
    if (!value.producer.valid()) return true;
    const Node& p = g_.node(value.producer);
    const OpSchema& schema = registry_.FindOrUnknown(p.op_type, p.domain);
    if (schema.host_value == OpSchema::HostValue::kLiteral) return true;
    if (!schema.is_view || p.inputs.empty() || !p.inputs[0].valid()) return false;
    v = p.inputs[0];
  }
  return false;
}

int StepEmitter::DifferentiatedReaders(ValueId v) const {
  int readers = 0;
  for (NodeId c : g_.value(v).consumers) readers += nodes_[c.index()].needs_backward ? 1 : 0;
  return readers;
}

void StepEmitter::CreateExtras(NodeId n) {
  NodeInfo& info = nodes_[n.index()];
  info.extras.clear();
  for (const SavedTensor& s : info.saved) {
    if (s.source != SavedTensor::Source::kExtra) continue;
    BufferId b = NewBuffer(g_.node(n).name + "." + s.name, BufferRole::kSavedExtra,
                           MemoryCategory::kActivations, s.dtype, s.shape, ValueId(), n);
    p_.buffers[b.index()].saved_name = s.name;
    AllocateHere(b);
    info.extras.push_back(b);
  }
  p_.steps.back().extras = info.extras;
}

Status StepEmitter::BuildForward() {
  NewStep(StepKind::kLoadMicroBatch, "micro_batch");
  for (ValueId v : g_.inputs()) {
    if (!IsRuntimeValue(v) || IsParameter(v)) continue;
    const Value& value = g_.value(v);
    if (!value.shape.known)
      return MakeError("graph input '" + value.name + "' has an unknown shape");
    BufferId b = NewBuffer(value.name, BufferRole::kInput, MemoryCategory::kOther, value.dtype,
                           value.shape, v);
    AllocateHere(b);
    value_storage_[v.index()] = b;
  }
  // One label per loss term, loaded with the inputs.
  for (const AnalyzedLoss& loss : a_.losses) {
    LossTerm term;
    term.kind = loss.spec.kind;
    term.output = loss.output;
    term.class_axis = loss.spec.class_axis;
    if (loss.spec.has_label) {
      term.label = NewBuffer(LossName(p_.loss_terms.size(), "label"), BufferRole::kLabel,
                             MemoryCategory::kOther, loss.spec.label_dtype, loss.spec.label_shape);
      AllocateHere(term.label);
    }
    p_.loss_terms.push_back(term);
  }
  p_.label_buffer = p_.loss_terms.front().label;
  for (NodeId n : order_) {
    NodeInfo& info = nodes_[n.index()];
    if (!info.active) continue;
    const Node& node = g_.node(n);
    PackModuleInputs(n);
    Step& step = NewStep(StepKind::kForward, node.name, n);
    step.compute_dtype = info.compute;
    info.forward_step = Now() - 1;
    HoldCheckpointArguments(n);
    for (ValueId u : node.inputs) {
      if (IsRuntimeValue(u) && !IsParameter(u) && !value_storage_[u.index()].valid())
        return MakeError("node '" + node.name + "' reads '" + g_.value(u).name +
                         "', which no earlier node produces and is not a graph input");
    }
    ReadInputs(n, info.compute, !info.is_view, /*share_casts=*/true,
               [&](size_t i) { return value_storage_[node.inputs[i].index()]; });
    std::vector<BufferId> outputs(node.outputs.size());
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      ValueId o = node.outputs[j];
      if (!IsRuntimeValue(o)) continue;
      if (info.is_view && info.read.size() > 0 && info.read[0].valid()) {
        outputs[j] = info.read[0];
      } else {
        if (!g_.value(o).shape.known)
          return MakeError("value '" + g_.value(o).name + "' (output of node '" + node.name +
                           "') has an unknown shape; the training program needs its size");
        outputs[j] = NewBuffer(g_.value(o).name, BufferRole::kValue, MemoryCategory::kTransients,
                               dtype_[o.index()], ShapeOf(o), o, n);
        AllocateHere(outputs[j]);
      }
      value_storage_[o.index()] = outputs[j];
    }
    p_.steps.back().outputs = outputs;
    EmitForwardWorkspace(n);
    if (info.needs_backward) {
      OpContext ctx = ProgramContext(n);
      const bool compiled = n.index() < a_.saves_compiled.size() && a_.saves_compiled[n.index()] &&
                            info.schema->saved_when_compiled;
      const SavedRule& rule =
          compiled ? info.schema->saved_when_compiled : info.schema->saved_for_backward;
      info.saved = ComputedConstantsAsCopies(n, ctx, rule(ctx));
      info.workspace = info.schema->backward_workspace(ctx);
      if (!info.recompute) CreateExtras(n);
      if (OffloadsActivations() && ReachesOffloadHooks(n)) {
        const std::vector<BufferId> saved = SavedAtForward(n);
        info.packed = saved_offload_.Pack(node.name, n, saved, MovedByHooks(n, saved));
      }
    }
  }
  return OkStatus();
}

// --offload activations: the buffer each entry of the node's saved rule names right after its
// forward step, as BuildBackward resolves it for a node that is not recomputed (only torchtune's
// hooks run with recompute, and they never see a checkpointed module's saves). Invalid for
// entries that name nothing and for quantised weights, which bitsandbytes keeps outside
// autograd's saved tensors (so save_on_cpu never sees them) and dequantises again in backward.
std::vector<BufferId> StepEmitter::SavedAtForward(NodeId n) const {
  const Node& node = g_.node(n);
  const NodeInfo& info = nodes_[n.index()];
  std::vector<BufferId> saved(info.saved.size());
  size_t extra = 0;
  for (size_t k = 0; k < info.saved.size(); ++k) {
    const SavedTensor& s = info.saved[k];
    if (s.source == SavedTensor::Source::kInput) {
      const auto i = static_cast<size_t>(s.index);
      if (i >= node.inputs.size() || !IsRuntimeValue(node.inputs[i])) continue;
      const ValueId u = node.inputs[i];
      if (IsParameter(u) && quantized_[u.index()]) continue;
      saved[k] = IsParameter(u) || info.read_is_cast[i] ? info.read[i] : value_storage_[u.index()];
    } else if (s.source == SavedTensor::Source::kOutput) {
      const auto j = static_cast<size_t>(s.index);
      if (j >= node.outputs.size() || !IsRuntimeValue(node.outputs[j])) continue;
      saved[k] = value_storage_[node.outputs[j].index()];
    } else if (extra < info.extras.size()) {
      saved[k] = info.extras[extra++];
    }
  }
  return saved;
}

// --offload activations: one unpack step bringing back the host copies `unpack` names, written
// into their places in `saved` (the list the next backward step reads).
void StepEmitter::UnpackInto(const std::string& name, NodeId n,
                             const std::vector<std::pair<size_t, BufferId>>& unpack,
                             std::vector<BufferId>& saved) {
  if (unpack.empty()) return;
  std::vector<BufferId> host;
  host.reserve(unpack.size());
  for (const auto& [at, copy] : unpack) host.push_back(copy);
  const std::vector<BufferId> device = saved_offload_.Unpack(name, n, host);
  for (size_t i = 0; i < unpack.size(); ++i) saved[unpack[i].first] = device[i];
}

// What the registry's forward_workspace rule asks for the node's forward (or recompute) step,
// allocated at its Begin and freed at its End (liveness: the step is its only use).
void StepEmitter::EmitForwardWorkspace(NodeId n) {
  // Most ops have no rule (none: no workspace), which spares building their context.
  const OpSchema& schema = *nodes_[n.index()].schema;
  if (!schema.forward_workspace) return;
  const Dim bytes = schema.forward_workspace(ProgramContext(n));
  BufferId b = NewWorkspace(bytes, g_.node(n).name + ".forward", n);
  if (b.valid()) p_.steps.back().workspace = b;
}

}  // namespace memplan::emission
