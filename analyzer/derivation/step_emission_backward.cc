// Backward: one step per node in reverse order, its gradient writes and accumulation, casts of
// gradients, workspaces, and the optimizer step in backward.

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

// The saved extra that backward returns as input `slot`'s gradient
// (OpSchema::gradients_from_saved), or invalid: then a gradient buffer is made as usual. Not
// with --offload activations, whose unpacked copies are other buffers.
BufferId StepEmitter::GradientFromSaved(NodeId n, size_t slot) const {
  const NodeInfo& info = nodes_[n.index()];
  if (!info.packed.empty()) return BufferId();
  for (const auto& [input, name] : info.schema->gradients_from_saved) {
    if (static_cast<size_t>(input) != slot) continue;
    for (BufferId b : info.extras)
      if (p_.buffer(b).saved_name == name) return b;
  }
  return BufferId();
}

// Axes of `v` that its layout reads more than once: a size other than 1 at stride 0. Nullopt
// when the shape is unknown.
std::optional<size_t> StepEmitter::BroadcastAxes(ValueId v) const {
  const Shape shape = ShapeOf(v);
  if (!shape.known) return std::nullopt;
  const Strides layout = LayoutOf(shape, a_.views.value_strides[v.index()]);
  size_t axes = 0;
  for (size_t i = 0; i < shape.rank() && i < layout.size(); ++i)
    if (shape.dims[i] != Dim(1) && layout[i] == Dim(0)) ++axes;
  return axes;
}

// Whether view output `out` of `in` broadcasts an axis `in` does not (an Expand of a size-1
// axis, HF's repeat_kv x[:, :, None].expand(b, kv, n_rep, s, d)). Its backward is then no view
// of the output gradient: at::sum_to(grad, self.sizes()) sums into a new tensor of `in`'s shape.
bool StepEmitter::AddsBroadcast(ValueId in, ValueId out) const {
  if (!out.valid()) return false;
  const std::optional<size_t> before = BroadcastAxes(in);
  const std::optional<size_t> after = BroadcastAxes(out);
  return before && after && *after > *before;
}

// Where a backward step writes the gradient of activation (non-parameter) `u`. `from_saved`:
// the saved tensor forward already computed it into (GradientFromSaved): it becomes the
// gradient, or the part added into an existing one, and nothing is allocated.
GradientWrite StepEmitter::ValueGradientWrite(int slot, ValueId u, NodeId n, BufferId alias,
                                              BufferId from_saved) {
  GradientWrite w;
  w.slot = slot;
  BufferId& grad = gradient_[u.index()];
  if (!alias.valid()) alias = from_saved;
  if (grad.valid() && from_saved.valid()) {
    w.target = grad;
    Touch(grad);
    w.part = from_saved;
    Touch(from_saved);
    return w;
  }
  if (!grad.valid() && alias.valid()) {
    grad = alias;  // a view's input gradient is a view of its output gradient
    w.target = grad;
    Touch(grad);
    return w;
  }
  if (!grad.valid()) {
    grad = NewBuffer("grad(" + g_.value(u).name + ")", BufferRole::kValueGradient,
                     MemoryCategory::kTransients, dtype_[u.index()], ShapeOf(u), u, n);
    AllocateHere(grad);
    w.target = grad;
    return w;
  }
  w.target = grad;
  Touch(grad);
  w.part = NewBuffer("grad(" + g_.value(u).name + ")@" + g_.node(n).name, BufferRole::kGradientPart,
                     MemoryCategory::kTransients, dtype_[u.index()], ShapeOf(u), u, n);
  AllocateHere(w.part);
  return w;
}

// A parameter gradient contribution: written into a part, then accumulated by its own step.
// Under autocast the op read a cast of the parameter, so its backward writes the gradient in
// the cast's dtype; EmitAccumulations casts it to the gradient's dtype first.
// `from_saved` as for ValueGradientWrite: the saved tensor is the contribution (AccumulateGrad
// then steals it or adds it in and frees it).
GradientWrite StepEmitter::ParameterGradientWrite(int slot, ValueId u, NodeId n,
                                                  std::string_view producer, BufferId from_saved) {
  if (from_saved.valid()) {
    GradientWrite w;
    w.slot = slot;
    w.target = from_saved;
    Touch(from_saved);
    MarkExplicitFree(from_saved);
    return w;
  }
  const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(param_index_[u.index()])];
  const Buffer grad = p_.buffer(pb.gradient);  // a copy: NewBuffer grows the buffer vector
  const NodeInfo& info = nodes_[n.index()];
  DType part_dtype = grad.dtype;
  const auto at = static_cast<size_t>(slot);
  if (regime_.casts_weights_per_forward && at < info.read.size() && info.read[at].valid() &&
      p_.buffer(info.read[at]).role == BufferRole::kCast)
    part_dtype = p_.buffer(info.read[at]).dtype;
  GradientWrite w;
  w.slot = slot;
  w.target = NewBuffer(grad.name + "@" + std::string(producer), BufferRole::kGradientPart,
                       MemoryCategory::kGradients, part_dtype, grad.shape, u, n);
  AllocateHere(w.target);
  MarkExplicitFree(w.target);
  return w;
}

void StepEmitter::EmitAccumulations(const std::vector<GradientWrite>& writes,
                                    const std::vector<ValueId>& values) {
  for (size_t i = 0; i < writes.size(); ++i) {
    ValueId u = values[i];
    if (!IsParameter(u)) continue;
    int index = param_index_[u.index()];
    BufferId grad = p_.parameters[static_cast<size_t>(index)].gradient;
    BufferId part = writes[i].target;
    if (p_.buffer(part).dtype != p_.buffer(grad).dtype) part = CastGradientPart(part, grad);
    Step& step = NewStep(StepKind::kAccumulateGradient, "grad(" + g_.value(u).name + ")");
    step.parameter = index;
    step.accumulate_part = part;
    step.inputs = {part};
    step.outputs = {grad};
    // AccumulateGrad: the first contribution becomes the gradient (steal, no copy); later ones
    // are added into it and freed.
    step.begin.push_back(Guarded(Action::kFree, part, Guard::kIfNotLive, grad));
    MemoryEvent take = Guarded(Action::kAlloc, grad, Guard::kIfNotLive, grad);
    take.storage_of = part;  // the part's storage becomes the gradient
    step.begin.push_back(take);
    step.end.push_back(Guarded(Action::kFree, part, Guard::kIfLive, part));
    if (options_.optimizer_in_backward && --pending_[static_cast<size_t>(index)] == 0)
      EmitStepInBackward(index);
  }
}

// --optimizer-in-backward: how many gradient contributions each parameter still awaits in
// backward (one per backward input slot that reads it, as BuildBackward writes them). Its
// post-accumulate-grad hook fires after the last: autograd sums a leaf's contributions before
// its one AccumulateGrad runs.
void StepEmitter::CountGradientContributions() {
  pending_.assign(p_.parameters.size(), 0);
  for (NodeId n : order_) {
    const NodeInfo& info = nodes_[n.index()];
    if (!info.needs_backward) continue;
    const Node& node = g_.node(n);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId u = node.inputs[i];
      if (!info.gradient_inputs[i] || !needs_grad_[u.index()] || !IsParameter(u)) continue;
      ++pending_[static_cast<size_t>(param_index_[u.index()])];
    }
  }
}

// torchtune's optimizer_in_bwd hook (training/memory.py register_optim_in_bwd_hooks):
// optim_dict[param].step() then .zero_grad() (set_to_none), one optimizer per parameter. The
// step creates this parameter's state lazily, allocates its own intermediates (a foreach over
// one tensor) and frees the gradient at its End.
void StepEmitter::EmitStepInBackward(int index) {
  const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(index)];
  NewStep(StepKind::kOptimizerStep,
          std::string(OptimizerKindName(options_.optimizer)) + "(" + g_.value(pb.value).name + ")");
  p_.steps.back().parameter = index;
  EmitParameterStepEvents(pb);
  // Symbolic parameter shapes were refused by the optimizer phase's transients already.
  (void)EmitOptimizerTransients(index);
  p_.steps.back().end.push_back(FreeEvent(pb.gradient));
}

// What stepping one parameter allocates at the current kOptimizerStep: its states, created by
// the first step (torch.optim), then persistent; an fp32 master gradient for the update.
void StepEmitter::EmitParameterStepEvents(const ParameterBuffers& pb) {
  Step& step = p_.steps.back();
  for (BufferId s : pb.optimizer_states)
    step.begin.push_back(Guarded(Action::kAlloc, s, Guard::kIfNotLive, s));
  if (pb.master_gradient.valid()) {
    step.begin.push_back(AllocEvent(pb.master_gradient));
    step.end.push_back(FreeEvent(pb.master_gradient));
  }
}

// Autocast's ToCopyBackward: the part computed in the working dtype becomes a part in the
// gradient's dtype; both are live while the cast runs, the half one is freed at its End.
BufferId StepEmitter::CastGradientPart(BufferId half_part, BufferId grad) {
  const Buffer half = p_.buffer(half_part);  // a copy: NewBuffer grows the buffer vector
  const DType dtype = p_.buffer(grad).dtype;
  Step& step = NewStep(StepKind::kCastGradient, "cast(" + half.name + ")", half.node);
  step.compute_dtype = dtype;
  BufferId part =
      NewBuffer(half.name + "." + std::string(DTypeName(dtype)), BufferRole::kGradientPart,
                MemoryCategory::kGradients, dtype, half.shape, half.value, half.node);
  AllocateHere(part);
  MarkExplicitFree(part);
  Touch(half_part);
  p_.steps.back().inputs = {half_part};
  p_.steps.back().outputs = {part};
  p_.steps.back().casts.push_back(CastOp{half_part, part});
  p_.steps.back().end.push_back(FreeEvent(half_part));
  return part;
}

BufferId StepEmitter::NewWorkspace(const Dim& bytes, const std::string& name, NodeId n) {
  if (bytes.constant_value() == 0) return BufferId();
  BufferId b = NewBuffer(name + ".workspace", BufferRole::kWorkspace, MemoryCategory::kWorkspace,
                         DType::kUInt8, Shape{{bytes}}, ValueId(), n);
  AllocateHere(b);
  return b;
}

void StepEmitter::BuildBackward() {
  // Autograd runs the ready node created last first: the last term's loss backward, then the
  // earlier ones', before any model node.
  for (size_t i = a_.losses.size(); i > 0; --i) BuildLossBackward(i - 1);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if (nodes_[it->index()].needs_backward) BuildNodeBackward(*it);
}

// What the backward step of `n` reads of what its forward saved, resolved before the step: this
// may emit recompute steps, and the host copies of offloaded tensors come back (UnpackInto).
SavedForBackward StepEmitter::ResolveSaved(NodeId n) {
  const NodeInfo& info = nodes_[n.index()];
  const Node& node = g_.node(n);
  SavedForBackward r;
  size_t extra = 0;
  for (size_t k = 0; k < info.saved.size(); ++k) {
    const SavedTensor& s = info.saved[k];
    if (k < info.packed.size() && info.packed[k].valid()) {
      // --offload activations: the host copy made after forward comes back below.
      if (s.source == SavedTensor::Source::kExtra) ++extra;
      r.unpack.emplace_back(r.saved.size(), info.packed[k]);
      r.saved.emplace_back();
      continue;
    }
    BufferId b;
    if (s.source == SavedTensor::Source::kInput) {
      size_t i = static_cast<size_t>(s.index);
      if (i >= node.inputs.size() || !IsRuntimeValue(node.inputs[i])) continue;
      ValueId u = node.inputs[i];
      if (IsParameter(u) && quantized_[u.index()]) {
        // bitsandbytes keeps the codes and dequantises again in backward.
        r.dequantize.emplace_back(r.saved.size(), u);
        b = ParameterRead(u, info.compute, node.name, /*share=*/false);
      } else if (IsParameter(u)) {
        // An autocast weight cast (or a frozen weight's cast) of a recomputed node is the
        // recompute's own.
        if (info.recompute && p_.buffer(info.read[i]).role == BufferRole::kCast) Recompute(n);
        b = info.read[i];
      } else if (info.read_is_cast[i]) {
        if (info.recompute) Recompute(n);  // the cast copy is the node's own
        b = info.read[i];
      } else {
        b = EnsureAvailable(u);
      }
    } else if (s.source == SavedTensor::Source::kOutput) {
      size_t j = static_cast<size_t>(s.index);
      if (j >= node.outputs.size() || !IsRuntimeValue(node.outputs[j])) continue;
      b = EnsureAvailable(node.outputs[j]);
    } else {
      if (info.recompute) Recompute(n);
      if (extra < info.extras.size()) b = info.extras[extra++];
    }
    if (b.valid()) r.saved.push_back(b);
  }
  UnpackInto(node.name, n, r.unpack, r.saved);
  return r;
}

// The backward step of `n`: its saved tensors (quantised weights dequantised again), its output
// gradients and workspace, then the gradients it writes (WriteInputGradients).
void StepEmitter::BuildNodeBackward(NodeId n) {
  const NodeInfo& info = nodes_[n.index()];
  const Node& node = g_.node(n);
  SavedForBackward r = ResolveSaved(n);
  std::vector<BufferId>& saved = r.saved;
  Step& step = NewStep(StepKind::kBackward, node.name, n);
  step.compute_dtype = info.compute;
  saved_offload_.AtBackwardStep();
  TouchHeldByModule(n);
  for (const auto& [index, u] : r.dequantize) {
    const DType want = info.compute != DType::kUndefined ? info.compute : g_.value(u).dtype;
    Touch(saved[index]);
    saved[index] = ParameterCast(u, saved[index], want, node.name);
  }
  for (BufferId b : saved) Touch(b);
  p_.steps.back().saved = saved;
  step.output_gradients.assign(node.outputs.size(), BufferId());
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    ValueId o = node.outputs[j];
    if (!o.valid() || !needs_grad_[o.index()]) continue;
    MEMPLAN_CHECK(gradient_[o.index()].valid());
    step.output_gradients[j] = gradient_[o.index()];
    Touch(gradient_[o.index()]);
  }
  const std::vector<BufferId> output_gradients = step.output_gradients;
  p_.steps.back().workspace = NewWorkspace(info.workspace, node.name, n);
  WriteInputGradients(n, output_gradients);
}

// The input gradients the backward step of `n` writes: a parameter's (accumulated), one computed
// in another dtype and cast after, or an activation's (a view of the output gradient where the
// node is a full view).
void StepEmitter::WriteInputGradients(NodeId n, const std::vector<BufferId>& output_gradients) {
  const NodeInfo& info = nodes_[n.index()];
  const Node& node = g_.node(n);
  std::vector<GradientWrite> writes;
  std::vector<ValueId> written;
  std::vector<std::pair<ValueId, BufferId>> to_cast;  // (activation, part computed)
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId u = node.inputs[i];
    if (!info.gradient_inputs[i] || !needs_grad_[u.index()]) continue;
    int slot = static_cast<int>(i);
    const BufferId from_saved = GradientFromSaved(n, i);
    if (IsParameter(u)) {
      writes.push_back(ParameterGradientWrite(slot, u, n, node.name, from_saved));
    } else if (const DType computed = GradientComputeDType(n, i);
               computed != DType::kUndefined && !from_saved.valid()) {
      writes.push_back(ComputedGradientWrite(slot, u, n, computed));
      to_cast.emplace_back(u, writes.back().target);
    } else {
      const bool gradient_is_view = info.is_view && !info.schema->view_is_partial && i == 0 &&
                                    !AddsBroadcast(u, node.outputs[0]);
      BufferId alias = gradient_is_view ? output_gradients[0] : BufferId();
      writes.push_back(ValueGradientWrite(slot, u, n, alias, from_saved));
    }
    written.push_back(u);
  }
  p_.steps.back().input_gradients = writes;
  EmitAccumulations(writes, written);
  for (const auto& [u, part] : to_cast) EmitValueGradientCast(u, part);
}

// The dtype backward computes input `slot`'s gradient in when that differs from how the
// activation is stored, else kUndefined. The op saw a cast of the activation, or promoted it
// inside its kernel: its backward yields the gradient in the dtype it computed in, and autograd
// casts it to the input's dtype afterwards (ToCopyBackward for a cast; the engine's
// validate_outputs for a promoted input). Both are live while that cast runs.
DType StepEmitter::GradientComputeDType(NodeId n, size_t slot) const {
  const NodeInfo& info = nodes_[n.index()];
  const ValueId u = g_.node(n).inputs[slot];
  DType computed = DType::kUndefined;
  if (slot < info.read_is_cast.size() && info.read_is_cast[slot])
    computed = p_.buffer(info.read[slot]).dtype;
  else if (info.compute != DType::kUndefined && !info.is_view && IsFloating(dtype_[u.index()]) &&
           PromotesInKernel(*info.schema, dtype_[u.index()], info.compute))
    computed = info.compute;
  return computed == dtype_[u.index()] ? DType::kUndefined : computed;
}

// A backward write of activation `u`'s gradient in `dtype` (GradientComputeDType), into a part
// that EmitValueGradientCast turns into the gradient.
GradientWrite StepEmitter::ComputedGradientWrite(int slot, ValueId u, NodeId n, DType dtype) {
  GradientWrite w;
  w.slot = slot;
  w.target =
      NewBuffer("grad(" + g_.value(u).name + ")@" + NameOf(n) + "." + std::string(DTypeName(dtype)),
                BufferRole::kGradientPart, MemoryCategory::kTransients, dtype, ShapeOf(u), u, n);
  AllocateHere(w.target);
  MarkExplicitFree(w.target);
  return w;
}

// The cast after a ComputedGradientWrite: the part becomes grad(u) in u's dtype, or a part in
// that dtype added into the gradient an earlier consumer wrote. The computed part is freed at
// the cast's End, the added one at the accumulation's.
void StepEmitter::EmitValueGradientCast(ValueId u, BufferId computed) {
  const Buffer from = p_.buffer(computed);  // a copy: NewBuffer grows the buffer vector
  const DType dtype = dtype_[u.index()];
  BufferId& grad = gradient_[u.index()];
  const bool first = !grad.valid();
  NewStep(StepKind::kCastGradient, "cast(" + from.name + ")", from.node).compute_dtype = dtype;
  BufferId target;
  if (first) {
    grad = NewBuffer("grad(" + g_.value(u).name + ")", BufferRole::kValueGradient,
                     MemoryCategory::kTransients, dtype, ShapeOf(u), u, from.node);
    target = grad;
    AllocateHere(target);
  } else {
    target = NewBuffer(from.name + "." + std::string(DTypeName(dtype)), BufferRole::kGradientPart,
                       MemoryCategory::kTransients, dtype, ShapeOf(u), u, from.node);
    AllocateHere(target);
    MarkExplicitFree(target);
  }
  Touch(computed);
  Step& cast = p_.steps.back();
  cast.inputs = {computed};
  cast.outputs = {target};
  cast.casts.push_back(CastOp{computed, target});
  cast.end.push_back(FreeEvent(computed));
  if (first) return;
  Step& add = NewStep(StepKind::kAccumulateGradient, "grad(" + g_.value(u).name + ")", from.node);
  Touch(grad);
  Touch(target);
  add.accumulate_part = target;
  add.inputs = {target};
  add.outputs = {grad};
  add.end.push_back(FreeEvent(target));
}

}  // namespace memplan::emission
