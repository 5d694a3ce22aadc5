// Setup: parameters, their gradients and optimizer states, the loss scaler; and the casts a step
// reads its parameters and activations through (autocast's weight-cast cache, frozen storage).

#include "analyzer/derivation/step_emitter.h"

namespace memplan::emission {

void StepEmitter::BuildSetup() {
  p_.setup.begin = Now();
  NewStep(StepKind::kAllocateParameters, "parameters");
  for (const Value& v : g_.values()) {
    if (!IsParameter(v.id)) continue;
    ParameterBuffers pb;
    pb.value = v.id;
    // The regime says where parameters, gradients and states live (amp_regime.h).
    DType master = regime_.mixed() ? regime_.parameter : v.dtype;
    bool working_copy = regime_.keeps_master_copy();
    std::optional<FrozenStorage> frozen;
    if (options_.base_dtype) frozen = FrozenWeightStorage(g_, v.id, *options_.base_dtype);
    if (frozen) {
      // A frozen weight stored in the base dtype is its only copy unless it is fp32 under
      // master weights (then the working copy stays, as for every fp32 parameter).
      master = frozen->dtype;
      working_copy = working_copy && master == DType::kFloat32;
      stored_frozen_[v.id.index()] = true;
      quantized_[v.id.index()] = frozen->quantized;
    }
    pb.master = NewBuffer(v.name, BufferRole::kParameterMaster, MemoryCategory::kParameters, master,
                          v.shape, v.id, NodeId(), /*persistent=*/true);
    AllocateHere(pb.master);
    if (frozen && frozen->quantization_state_bytes > 0) {
      pb.quantization_state = NewBuffer(
          "quant_state(" + v.name + ")", BufferRole::kQuantizationState,
          MemoryCategory::kParameters, DType::kUInt8,
          Shape{{Dim(frozen->quantization_state_bytes)}}, v.id, NodeId(), /*persistent=*/true);
      AllocateHere(pb.quantization_state);
    }
    if (working_copy) {
      pb.working = NewBuffer(v.name + "." + std::string(DTypeName(regime_.working_copy)),
                             BufferRole::kParameterWorking, MemoryCategory::kParameters,
                             regime_.working_copy, v.shape, v.id, NodeId(),
                             /*persistent=*/true);
      AllocateHere(pb.working);
    }
    if (needs_grad_[v.id.index()]) {
      DType grad_dtype = regime_.mixed() ? regime_.gradient : v.dtype;
      pb.gradient = NewBuffer("grad(" + v.name + ")", BufferRole::kParameterGradient,
                              MemoryCategory::kGradients, grad_dtype, v.shape, v.id, NodeId(),
                              /*persistent=*/true);
      for (const auto& state : OptimizerStates(options_.optimizer, v.shape)) {
        pb.optimizer_states.push_back(
            NewBuffer(std::string(OptimizerKindName(options_.optimizer)) + "." + state.name + "(" +
                          v.name + ")",
                      BufferRole::kOptimizerState, MemoryCategory::kOptimizerState,
                      // bitsandbytes' 8-bit state keeps its own dtypes in every regime.
                      EightBitOptimizer(options_.optimizer) ? state.dtype : regime_.optimizer_state,
                      state.shape, v.id, NodeId(), /*persistent=*/true));
      }
      if (regime_.keeps_master_copy() &&
          options_.master_gradients == MasterGradientMode::kFullCopy) {
        pb.master_gradient = NewBuffer("master_grad(" + v.name + ")", BufferRole::kMasterGradient,
                                       MemoryCategory::kGradients, DType::kFloat32, v.shape, v.id);
        MarkExplicitFree(pb.master_gradient);
      }
    }
    param_index_[v.id.index()] = static_cast<int>(p_.parameters.size());
    p_.parameters.push_back(std::move(pb));
  }
  // GradScaler keeps its scale and growth tracker on the device; a static scale is a host
  // constant and costs nothing here.
  if (p_.loss_scaling.mode == LossScalingMode::kDynamic) {
    NewStep(StepKind::kInitLossScaler, "loss_scaler");
    loss_scale_ = NewBuffer("loss_scale", BufferRole::kScalar, MemoryCategory::kOther,
                            DType::kFloat32, Shape{{}}, ValueId(), NodeId(), true);
    p_.loss_scale_buffer = loss_scale_;
    AllocateHere(loss_scale_);
    BufferId tracker =
        NewBuffer("loss_scale_growth_tracker", BufferRole::kScalar, MemoryCategory::kOther,
                  DType::kInt32, Shape{{}}, ValueId(), NodeId(), true);
    AllocateHere(tracker);
  }
  p_.setup.end = Now();
}

// The buffer a step reads for parameter `v` when computing in `compute`: the persistent
// working copy (master weights), autocast's cast of the parameter, or the parameter itself.
// Autocast's weight-cast cache makes one cast per (parameter, dtype) per forward (`share`),
// kept until the autocast context exits after the loss (BuildLoss touches them); a recompute
// step runs in a fresh autocast context under checkpointing and casts again.
BufferId StepEmitter::ParameterRead(ValueId v, DType compute, const std::string& reader,
                                    bool share) {
  const ParameterBuffers& pb = p_.parameters[static_cast<size_t>(param_index_[v.index()])];
  if (pb.working.valid() && compute == working_) return pb.working;
  // A frozen weight stored in the base dtype is cast by ReadInputs (ParameterCast), not here.
  if (regime_.casts_weights_per_forward && compute == working_ && !stored_frozen_[v.index()] &&
      p_.buffer(pb.master).dtype != compute) {
    const bool first = !forward_casts_.count({v.index(), compute});
    BufferId cast = CastFor(v, pb.master, compute, reader, share);
    if (share && first) weight_casts_.push_back(cast);
    return cast;
  }
  return pb.master;
}

// A transient copy of parameter `u` (stored in `src`) as `dtype` for the current step: a cast
// of a frozen weight kept in another dtype, or the dequantisation of a quantised one.
BufferId StepEmitter::ParameterCast(ValueId u, BufferId src, DType dtype,
                                    const std::string& reader) {
  const std::string what = quantized_[u.index()] ? ".dequantized." : ".";
  BufferId cast = NewBuffer(g_.value(u).name + what + std::string(DTypeName(dtype)) + "@" + reader,
                            BufferRole::kCast, MemoryCategory::kTransients, dtype, ShapeOf(u), u,
                            p_.steps.back().node);
  AllocateHere(cast);
  p_.steps.back().casts.push_back(CastOp{src, cast});
  return cast;
}

// The buffer holding `u` (in `src`) as `dtype` for the current step: a cast this step makes,
// or, with `share`, the cast an earlier forward step made of the same value (one cast per
// (value, dtype) in the forward: autocast's weight-cast cache for parameters, and for
// activations in the regimes whose casts are the model's own).
BufferId StepEmitter::CastFor(ValueId u, BufferId src, DType dtype, const std::string& reader,
                              bool share) {
  const std::pair<size_t, DType> key{u.index(), dtype};
  if (share) {
    if (auto it = forward_casts_.find(key); it != forward_casts_.end()) {
      Touch(it->second);
      return it->second;
    }
  }
  BufferId cast = NewBuffer(g_.value(u).name + "." + std::string(DTypeName(dtype)) + "@" + reader,
                            BufferRole::kCast, MemoryCategory::kTransients, dtype, ShapeOf(u), u,
                            p_.steps.back().node);
  AllocateHere(cast);
  p_.steps.back().casts.push_back(CastOp{src, cast});
  if (share) forward_casts_.emplace(key, cast);
  return cast;
}

// Whether an op computing in `compute` reads an activation stored as the narrower `have` as it
// is: a follows-inputs op under autocast promotes inside its kernel (amp_regime.h).
bool StepEmitter::PromotesInKernel(const OpSchema& schema, DType have, DType compute) const {
  return regime_.promotes_in_kernel && schema.amp == AmpCategory::kFollowInputs &&
         BitSize(have) < BitSize(compute);
}

}  // namespace memplan::emission
