// The optimizer phase: unscale, clip, the step with its transients, zero.

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

Status StepEmitter::BuildOptimizer() {
  p_.optimizer.begin = Now();
  if (options_.optimizer_in_backward) {
    // Every parameter was stepped inside backward; the recipe calls no optimizer after it.
    MEMPLAN_RETURN_IF_ERROR(CheckStepSizes());
    p_.optimizer.end = Now();
    return OkStatus();
  }
  BufferId found_inf;
  if (p_.loss_scaling.mode != LossScalingMode::kNone) {
    // Both modes check the gradients for inf/NaN and skip an overflowing step: found_inf lives
    // until the optimizer step has read it. GradScaler.unscale_ also makes the reciprocal of
    // its device scale (inv_scale), freed when unscale_ returns.
    NewStep(StepKind::kUnscaleAndCheckOverflow, "unscale");
    found_inf = NewBuffer("found_inf", BufferRole::kScalar, MemoryCategory::kOther, DType::kFloat32,
                          Shape{{}});
    AllocateHere(found_inf);
    MarkExplicitFree(found_inf);
    p_.steps.back().outputs = {found_inf};
    if (loss_scale_.valid()) {
      BufferId inv_scale = NewBuffer("inv_scale", BufferRole::kScalar, MemoryCategory::kOther,
                                     DType::kFloat32, Shape{{}});
      AllocateHere(inv_scale);
      p_.steps.back().inputs = {loss_scale_};
      p_.steps.back().outputs.push_back(inv_scale);
    }
  }
  if (options_.clip_gradients) {
    NewStep(StepKind::kClipGradients, "clip");
    BufferId norm = NewBuffer("grad_norm", BufferRole::kScalar, MemoryCategory::kOther,
                              DType::kFloat32, Shape{{}});
    AllocateHere(norm);
    p_.steps.back().outputs = {norm};
  }
  NewStep(StepKind::kOptimizerStep, std::string(OptimizerKindName(options_.optimizer)));
  if (found_inf.valid()) p_.steps.back().inputs = {found_inf};
  for (const ParameterBuffers& pb : p_.parameters)
    if (pb.gradient.valid()) EmitParameterStepEvents(pb);
  MEMPLAN_RETURN_IF_ERROR(EmitOptimizerTransients());
  if (found_inf.valid()) p_.steps.back().end.push_back(FreeEvent(found_inf));
  NewStep(StepKind::kZeroGradients, std::string(ZeroGradModeName(options_.zero_grad)));
  if (options_.zero_grad == ZeroGradMode::kSetToNone) {
    for (const ParameterBuffers& pb : p_.parameters)
      if (pb.gradient.valid()) p_.steps.back().end.push_back(FreeEvent(pb.gradient));
  }
  p_.optimizer.end = Now();
  return OkStatus();
}

// --optimizer-in-backward: the error EmitOptimizerTransients gives for a parameter of symbolic
// shape, which the steps in backward could not return.
Status StepEmitter::CheckStepSizes() const {
  if (OffloadsOptimizer(options_.offload.mode) ||
      options_.optimizer_impl == OptimizerImpl::kFused ||
      !HasTorchOptimizerImpls(options_.optimizer))
    return OkStatus();
  for (const ParameterBuffers& pb : p_.parameters) {
    if (!pb.gradient.valid()) continue;
    if (!p_.buffer(pb.gradient).shape.NumElements().constant_value())
      return MakeError("--optimizer-impl: parameter '" + g_.value(pb.value).name +
                       "' has a symbolic shape, so its optimizer step cannot be sized");
  }
  return OkStatus();
}

// The intermediates the kOptimizerStep step (the current step) allocates beyond the state
// (analyzer/program/optimizer_transient.h): allocated at its Begin, after the lazily created
// states (torch's _init_group runs before the update), and freed at its End. None when the
// optimizer runs on the host (--offload optimizer: DeepSpeed's CPU Adam is one fused C++ loop).
// `only` >= 0: that parameter's step alone (--optimizer-in-backward: an optimizer per
// parameter, so a foreach step runs over one tensor).
Status StepEmitter::EmitOptimizerTransients(int only) {
  if (OffloadsOptimizer(options_.offload.mode) ||
      options_.optimizer_impl == OptimizerImpl::kFused ||
      !HasTorchOptimizerImpls(options_.optimizer))
    return OkStatus();
  std::vector<OptimizerStepParameter> trainable;
  std::vector<const ParameterBuffers*> owner;
  for (size_t i = 0; i < p_.parameters.size(); ++i) {
    const ParameterBuffers& pb = p_.parameters[i];
    if (only >= 0 && i != static_cast<size_t>(only)) continue;
    if (!pb.gradient.valid()) continue;  // frozen: torch skips parameters whose grad is None
    const Buffer& grad = p_.buffer(pb.gradient);
    const std::optional<int64_t> elements = grad.shape.NumElements().constant_value();
    if (!elements) {
      return MakeError("--optimizer-impl: parameter '" + g_.value(pb.value).name +
                       "' has a symbolic shape, so its optimizer step cannot be sized");
    }
    const DType state = pb.optimizer_states.empty() ? regime_.optimizer_state
                                                    : p_.buffer(pb.optimizer_states[0]).dtype;
    trainable.push_back({*elements, grad.dtype, state});
    owner.push_back(&pb);
  }
  const std::vector<OptimizerTransient> transients = OptimizerStepTransients(
      options_.optimizer, options_.optimizer_impl, options_.weight_decay, trainable);
  const std::string prefix = std::string(OptimizerKindName(options_.optimizer)) + ".";
  for (const OptimizerTransient& t : transients) {
    ValueId value;
    std::string name = prefix + t.name;
    if (t.parameter >= 0) {
      value = owner[static_cast<size_t>(t.parameter)]->value;
      name += "(" + g_.value(value).name + ")";
    }
    const BufferId b = NewBuffer(name, BufferRole::kOptimizerTransient, MemoryCategory::kTransients,
                                 t.dtype, Shape{{Dim(t.elements)}}, value);
    MarkExplicitFree(b);
    p_.steps.back().begin.push_back(AllocEvent(b));
    p_.steps.back().end.push_back(FreeEvent(b));
  }
  return OkStatus();
}

}  // namespace memplan::emission
