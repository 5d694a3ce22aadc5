// The loss terms: forward (in the loss dtype) and their backward.

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

// The name of loss term i's steps and buffers: "loss" (and "label") for a single-output loss,
// "loss.<output>" with several.
std::string StepEmitter::LossName(size_t i, const std::string& what) const {
  if (a_.losses.size() == 1) return what;
  return what + "." + g_.value(a_.losses[i].output).name;
}

// Loss term `i`: the node its registry rules see, its step, and what it keeps for backward.
void StepEmitter::BuildLoss(size_t i) {
  const ValueId output = a_.losses[i].output;
  const LossSpec& spec = a_.losses[i].spec;
  LossTermState& t = terms_[i];
  t.loss_node.name = LossName(i, "loss");
  t.loss_node.op_type = spec.op_type;
  t.loss_node.domain = spec.domain;
  t.loss_node.inputs = {output};
  if (spec.has_label) t.loss_node.inputs.push_back(ValueId());
  t.loss_node.outputs = {ValueId()};
  t.loss_schema = &registry_.FindOrUnknown(spec.op_type, spec.domain);

  const DType loss_dtype = EmitLossStep(i);
  SaveLossForBackward(i, loss_dtype);
}

// The loss step of term `i`: reads the logits (cast to the loss dtype) and the label, and writes
// the scalar loss. Returns the loss's dtype.
DType StepEmitter::EmitLossStep(size_t i) {
  const ValueId output = a_.losses[i].output;
  const LossSpec& spec = a_.losses[i].spec;
  LossTermState& t = terms_[i];
  LossTerm& term = p_.loss_terms[i];
  const std::string name = LossName(i, "loss");
  const DType compute = a_.losses[i].compute;
  Step& step = NewStep(StepKind::kLoss, name);
  step.op_type = spec.op_type;
  step.domain = spec.domain;
  step.compute_dtype = compute;
  p_.loss_step = Now() - 1;
  term.step = p_.loss_step;

  BufferId logits = value_storage_[output.index()];
  Touch(logits);
  t.loss_read = logits;
  DType have = dtype_[output.index()];
  // A chunk of --loss-chunks is a term of its own (chunked_loss_plan.h): its `.float()` copy is
  // this cast, dead once log_softmax has read it.
  if (compute != DType::kUndefined && have != compute)
    t.loss_read = CastFor(output, logits, compute, name, /*share=*/true);
  p_.steps.back().inputs = {t.loss_read};
  // The autocast context covers forward and loss (HF Trainer's compute_loss, Lightning's
  // training_step): its weight-cast cache is cleared only when the context exits here.
  for (BufferId cast : weight_casts_) Touch(cast);
  if (spec.has_label) {
    Touch(term.label);
    p_.steps.back().inputs.push_back(term.label);
  }
  DType loss_dtype =
      compute != DType::kUndefined ? compute : (IsFloating(have) ? have : DType::kFloat32);
  term.loss =
      NewBuffer(name, BufferRole::kLoss, MemoryCategory::kTransients, loss_dtype, Shape{{}});
  if (i == 0) p_.loss_buffer = term.loss;
  AllocateHere(term.loss);
  p_.steps.back().outputs = {term.loss};
  return loss_dtype;
}

// What the loss of term `i` keeps for its backward: the registry's saved rule and workspace in
// the loss dtype, its extras, and their host copies under --offload-hooks save-on-cpu.
void StepEmitter::SaveLossForBackward(size_t i, DType loss_dtype) {
  const ValueId output = a_.losses[i].output;
  const LossSpec& spec = a_.losses[i].spec;
  LossTermState& t = terms_[i];
  const std::string name = LossName(i, "loss");
  const Value& out = g_.value(output);
  const DType compute = a_.losses[i].compute;
  const DType have = dtype_[output.index()];
  // The context the loss's registry rules see: the logits as read, the label, a scalar loss.
  TensorInfo logits_info{true, IsFloating(have) && compute != DType::kUndefined ? compute : have,
                         out.shape, ValueKind::kIntermediate, std::nullopt};
  OpContext ctx{t.loss_node, {logits_info}, {}, nullptr};
  if (spec.has_label)
    ctx.inputs.push_back(
        TensorInfo{true, spec.label_dtype, spec.label_shape, ValueKind::kInput, std::nullopt});
  ctx.outputs.push_back(
      TensorInfo{true, loss_dtype, Shape{{}}, ValueKind::kIntermediate, std::nullopt});
  t.loss_saved = t.loss_schema->saved_for_backward(ctx);
  t.loss_workspace = t.loss_schema->backward_workspace(ctx);
  // Extras the loss forward keeps for its backward (e.g. log-probabilities).
  for (const SavedTensor& s : t.loss_saved) {
    if (s.source != SavedTensor::Source::kExtra) continue;
    BufferId b = NewBuffer(name + "." + s.name, BufferRole::kSavedExtra,
                           MemoryCategory::kActivations, s.dtype, s.shape);
    p_.buffers[b.index()].saved_name = s.name;
    AllocateHere(b);
    t.loss_extras.push_back(b);
  }
  p_.steps.back().extras = t.loss_extras;
  // torchtune's hooks wrap the model's forward only: the loss saves outside them (Unsloth
  // has no hooks).
  if (OffloadsActivations() && options_.offload.hooks == OffloadHooks::kSaveOnCpu &&
      needs_grad_[output.index()]) {
    std::vector<BufferId> saved;
    size_t extra = 0;
    for (const SavedTensor& s : t.loss_saved) saved.push_back(LossSaved(i, s, extra));
    t.loss_packed =
        saved_offload_.Pack(name, NodeId(), saved, std::vector<bool>(saved.size(), true));
  }
}

// The buffer the loss's saved rule entry `s` names (logits as read, label, loss, extras in
// order: `extra` counts the extras taken).
BufferId StepEmitter::LossSaved(size_t i, const SavedTensor& s, size_t& extra) const {
  const LossTermState& t = terms_[i];
  const LossTerm& term = p_.loss_terms[i];
  if (s.source == SavedTensor::Source::kInput)
    return s.index == 0 ? t.loss_read : (s.index == 1 ? term.label : BufferId());
  if (s.source == SavedTensor::Source::kOutput) return term.loss;
  return extra < t.loss_extras.size() ? t.loss_extras[extra++] : BufferId();
}

void StepEmitter::BuildLossBackward(size_t i) {
  const ValueId output = a_.losses[i].output;
  const LossSpec& spec = a_.losses[i].spec;
  const LossTermState& t = terms_[i];
  const std::string name = LossName(i, "loss");
  if (!needs_grad_[output.index()]) return;
  // --offload activations: what the loss saved comes back from the host first.
  const std::vector<BufferId> unpacked = saved_offload_.Unpack(name, NodeId(), t.loss_packed);
  Step& step = NewStep(StepKind::kLossBackward, name);
  p_.loss_terms[i].backward_step = Now() - 1;
  step.op_type = spec.op_type;
  step.domain = spec.domain;
  std::vector<BufferId> saved;
  size_t extra = 0;
  for (size_t k = 0; k < t.loss_saved.size(); ++k) {
    BufferId b = LossSaved(i, t.loss_saved[k], extra);
    if (k < unpacked.size() && unpacked[k].valid()) b = unpacked[k];
    if (!b.valid()) continue;
    Touch(b);
    saved.push_back(b);
  }
  p_.steps.back().saved = saved;
  p_.steps.back().workspace = NewWorkspace(t.loss_workspace, name, NodeId());
  // The loss read a cast of the logits (autocast's fp32 loss): its gradient comes out in the
  // loss's dtype and is cast to the logits' after (see GradientComputeDType).
  const DType computed = p_.buffer(t.loss_read).dtype;
  if (t.loss_read != value_storage_[output.index()] && computed != dtype_[output.index()]) {
    GradientWrite w = ComputedGradientWrite(0, output, NodeId(), computed);
    p_.steps.back().input_gradients = {w};
    EmitValueGradientCast(output, w.target);
    return;
  }
  GradientWrite w = ValueGradientWrite(0, output, NodeId(), BufferId());
  p_.steps.back().input_gradients = {w};
}

}  // namespace memplan::emission
