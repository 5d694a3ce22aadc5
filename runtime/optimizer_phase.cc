#include "runtime/optimizer_phase.h"

#include <string>

namespace memplan {

OptimizerPhase::OptimizerPhase(const TrainingProgram& program, Backend& backend,
                               const ProgramBuffers& buffers, OptimizerPhaseOptions options)
    : p_(program), backend_(backend), buffers_(buffers), options_(std::move(options)) {
  options_.optimizer.kind = std::string(OptimizerKindName(p_.optimizer_kind));
  optimizer_steps_.assign(p_.parameters.size(), 0);
  if (p_.loss_scaling.mode == LossScalingMode::kDynamic) {
    LossScalerOptions scaler = options_.loss_scaler;
    scaler.init_scale =
        options_.initial_loss_scale.value_or(static_cast<float>(p_.loss_scaling.scale));
    scaler_.emplace(scaler);
  }
}

float OptimizerPhase::CurrentScale() const {
  if (scaler_) return scaler_->scale();
  if (p_.loss_scaling.mode == LossScalingMode::kStatic)
    return options_.initial_loss_scale.value_or(static_cast<float>(p_.loss_scaling.scale));
  return 1.0f;
}

Status OptimizerPhase::WriteScale() {
  const BufferId b = p_.loss_scale_buffer;
  if (b.valid() && buffers_.Live(b)) return backend_.Upload(buffers_.Get(b), {CurrentScale()});
  return OkStatus();
}

void OptimizerPhase::Begin() {
  found_inf_ = false;
  gradient_norm_.reset();
}

std::vector<DeviceTensor> OptimizerPhase::LiveGradients() const {
  std::vector<DeviceTensor> grads;
  for (const ParameterBuffers& pb : p_.parameters)
    if (pb.gradient.valid() && buffers_.Live(pb.gradient))
      grads.push_back(buffers_.Get(pb.gradient));
  return grads;
}

Status OptimizerPhase::Unscale(const Step& step) {
  const float scale = CurrentScale();
  MEMPLAN_TRY(found_inf_, backend_.UnscaleAndCheckOverflow(LiveGradients(), 1.0f / scale));
  if (!step.outputs.empty())
    MEMPLAN_RETURN_IF_ERROR(
        backend_.Upload(buffers_.Get(step.outputs[0]), {found_inf_ ? 1.0f : 0.0f}));
  if (step.outputs.size() > 1)
    MEMPLAN_RETURN_IF_ERROR(backend_.Upload(buffers_.Get(step.outputs[1]), {1.0f / scale}));
  return OkStatus();
}

Status OptimizerPhase::Clip(const Step& step) {
  const std::vector<DeviceTensor> grads = LiveGradients();
  MEMPLAN_TRY(double norm, backend_.GlobalNorm(grads));
  gradient_norm_ = norm;
  if (!step.outputs.empty())
    MEMPLAN_RETURN_IF_ERROR(
        backend_.Upload(buffers_.Get(step.outputs[0]), {static_cast<float>(norm)}));
  // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is < 1.
  const double factor = options_.clip_max_norm / (norm + 1e-6);
  if (!found_inf_ && factor < 1.0)
    MEMPLAN_RETURN_IF_ERROR(backend_.Scale(grads, static_cast<float>(factor)));
  return OkStatus();
}

Status OptimizerPhase::Update() {
  if (!found_inf_) {
    for (size_t i = 0; i < p_.parameters.size(); ++i) {
      const ParameterBuffers& pb = p_.parameters[i];
      if (!pb.gradient.valid() || !buffers_.Live(pb.gradient)) continue;
      OptimizerCall call;
      call.hyper = &options_.optimizer;
      call.master = buffers_.Get(pb.master);
      if (pb.working.valid()) call.working = buffers_.Get(pb.working);
      call.gradient = buffers_.Get(pb.gradient);
      for (BufferId s : pb.optimizer_states) call.states.push_back(buffers_.Get(s));
      call.step = ++optimizer_steps_[i];
      MEMPLAN_RETURN_IF_ERROR(backend_.OptimizerStep(call));
    }
  }
  if (scaler_) {
    scaler_->Update(found_inf_);
    MEMPLAN_RETURN_IF_ERROR(WriteScale());
  }
  return OkStatus();
}

Status OptimizerPhase::ZeroGradients() {
  if (p_.zero_grad != ZeroGradMode::kZero) return OkStatus();  // set_to_none: End frees them
  for (const DeviceTensor& g : LiveGradients()) MEMPLAN_RETURN_IF_ERROR(backend_.Fill(g, 0.0f));
  return OkStatus();
}

}  // namespace memplan
