#include "runtime/optimizer_phase.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace memplan {

OptimizerPhase::OptimizerPhase(const TrainingProgram& program, Backend& backend,
                               const ProgramBuffers& buffers, OptimizerPhaseOptions options,
                               CollectiveSteps* collectives)
    : p_(program),
      backend_(backend),
      buffers_(buffers),
      options_(std::move(options)),
      collectives_(collectives) {
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
  if (collectives_ != nullptr) {
    MEMPLAN_TRY(found_inf_, collectives_->AnyRank(found_inf_));
  }
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
  if (collectives_ != nullptr && AnyGradientSharded()) {
    MEMPLAN_TRY(double squares, collectives_->SumOverShardGroup(norm * norm));
    norm = std::sqrt(squares);
  }
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
      MEMPLAN_RETURN_IF_ERROR(UpdateParameter(i));
    }
  }
  if (scaler_) {
    scaler_->Update(found_inf_);
    MEMPLAN_RETURN_IF_ERROR(WriteScale());
  }
  return OkStatus();
}

Status OptimizerPhase::UpdateInBackward(size_t index) {
  MEMPLAN_CHECK(index < p_.parameters.size()) << "no such parameter";
  return UpdateParameter(index);
}

Status OptimizerPhase::ZeroGradients(const Step& step) {
  for (const ParameterBuffers& pb : p_.parameters) {
    if (!pb.gradient.valid() || !buffers_.Live(pb.gradient)) continue;
    const bool freed = std::any_of(step.end.begin(), step.end.end(), [&](const MemoryEvent& e) {
      return e.action == MemoryEvent::Action::kFree && e.buffer == pb.gradient;
    });
    if (!freed) MEMPLAN_RETURN_IF_ERROR(backend_.Fill(buffers_.Get(pb.gradient), 0.0f));
  }
  return OkStatus();
}

bool OptimizerPhase::AnyGradientSharded() const {
  return std::any_of(p_.parameters.begin(), p_.parameters.end(), [&](const ParameterBuffers& pb) {
    return pb.gradient.valid() && p_.buffer(pb.gradient).shard_of_elements != 0;
  });
}

namespace {

// This rank's part of a whole tensor as a temporary the size of a shard (zeros past the end).
Expected<DeviceTensor> PartOf(Backend& backend, const DeviceTensor& whole, int64_t shard_elements,
                              const ShardSlice& slice) {
  MEMPLAN_TRY(std::vector<float> values, backend.Download(whole));
  std::vector<float> part(static_cast<size_t>(shard_elements), 0.0f);
  std::copy_n(values.begin() + slice.begin, slice.size, part.begin());
  return backend.Constant({shard_elements}, whole.dtype, part);
}

// Writes a part back into this rank's slice of the whole tensor.
Status WriteBack(Backend& backend, const DeviceTensor& part, const DeviceTensor& whole,
                 const ShardSlice& slice) {
  MEMPLAN_TRY(std::vector<float> values, backend.Download(whole));
  MEMPLAN_TRY(std::vector<float> updated, backend.Download(part));
  std::copy_n(updated.begin(), slice.size, values.begin() + slice.begin);
  return backend.Upload(whole, values);
}

}  // namespace

Status OptimizerPhase::UpdateParameter(size_t index) {
  const ParameterBuffers& pb = p_.parameters[index];
  OptimizerCall call;
  call.hyper = &options_.optimizer;
  call.master = buffers_.Get(pb.master);
  if (pb.working.valid()) call.working = buffers_.Get(pb.working);
  call.gradient = buffers_.Get(pb.gradient);
  for (BufferId s : pb.optimizer_states) call.states.push_back(buffers_.Get(s));
  call.step = ++optimizer_steps_[index];
  // A rank whose buffers of this parameter are not all of one form updates its part: the whole
  // ones are cut to a shard's size around the call and the part written back.
  int64_t shard_elements = 0, whole_elements = 0;
  std::vector<BufferId> all = {pb.master, pb.working, pb.gradient};
  all.insert(all.end(), pb.optimizer_states.begin(), pb.optimizer_states.end());
  for (BufferId b : all) {
    if (!b.valid()) continue;
    const Buffer& buffer = p_.buffer(b);
    if (buffer.shard_of_elements != 0) {
      shard_elements = buffers_.Get(b).numel();
      whole_elements = buffer.shard_of_elements;
    }
  }
  const bool mixed = shard_elements != 0 && std::any_of(all.begin(), all.end(), [&](BufferId b) {
                       return b.valid() && p_.buffer(b).shard_of_elements == 0;
                     });
  if (!mixed) return backend_.OptimizerStep(call);
  MEMPLAN_CHECK(collectives_ != nullptr) << "a shard outside a rank group";
  const ShardSlice slice =
      SliceOfShard(whole_elements, p_.shard_ranks, collectives_->shard_position());
  struct Cut {
    DeviceTensor* slot;
    DeviceTensor whole;
  };
  std::vector<Cut> cuts;
  std::vector<DeviceTensor*> slots = {&call.master, &call.working, &call.gradient};
  for (DeviceTensor& state : call.states) slots.push_back(&state);
  for (size_t i = 0; i < slots.size(); ++i) {
    DeviceTensor* slot = slots[i];
    if (!all[i].valid() || p_.buffer(all[i]).shard_of_elements != 0) continue;
    Cut cut{slot, *slot};
    MEMPLAN_TRY(*slot, PartOf(backend_, cut.whole, shard_elements, slice));
    cuts.push_back(std::move(cut));
  }
  MEMPLAN_RETURN_IF_ERROR(backend_.OptimizerStep(call));
  for (const Cut& cut : cuts) {
    if (cut.slot == &call.gradient) continue;  // read, not written
    MEMPLAN_RETURN_IF_ERROR(WriteBack(backend_, *cut.slot, cut.whole, slice));
  }
  return OkStatus();
}

}  // namespace memplan
