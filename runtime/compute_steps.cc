#include "runtime/compute_steps.h"

#include <algorithm>

#include "graph/ops/op_registry.h"

namespace memplan {
namespace {

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t x = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The kernels' name of a kExtra saved tensor the registry names (graph/ops): BatchNorm's
// save_mean/save_invstd, LayerNorm/GroupNorm's mean/rstd, Dropout's dropout_mask.
std::string KernelExtraName(std::string registry_name) {
  if (registry_name.rfind("save_", 0) == 0) registry_name = registry_name.substr(5);
  if (registry_name == "rstd") return "invstd";
  if (registry_name == "dropout_mask") return "mask";
  return registry_name;
}

}  // namespace

ComputeSteps::ComputeSteps(const Graph& graph, const TrainingProgram& program, Backend& backend,
                           ProgramBuffers& buffers, ConstantValues& constants, uint64_t seed,
                           bool disable_dropout)
    : g_(graph),
      p_(program),
      backend_(backend),
      buffers_(buffers),
      constants_(constants),
      seed_(seed),
      disable_dropout_(disable_dropout) {}

uint64_t ComputeSteps::NodeSeed(NodeId n) const {
  return Mix(Mix(seed_, n.value + 1), micro_batch_counter_);
}

bool ComputeSteps::Training(const Node& node) const {
  return !(disable_dropout_ &&
           OpRegistry::Get().FindOrUnknown(node.op_type, node.domain).stochastic);
}

template <class Call>
Call ComputeSteps::KernelCall(const Step& step, const Node& node) const {
  Call call;
  call.op_type = step.op_type;
  call.domain = step.domain;
  call.attributes = &node.attributes;
  call.training = Training(node);
  call.seed = NodeSeed(step.node);
  return call;
}

Expected<DeviceTensor> ComputeSteps::InputTensor(const Node& node, size_t i,
                                                 const std::vector<BufferId>& read) {
  ValueId u = node.inputs[i];
  if (!u.valid()) return DeviceTensor();
  if (i < read.size() && read[i].valid()) return buffers_.ValueThrough(u, read[i]);
  if (g_.value(u).kind == ValueKind::kConstant) return constants_.Get(u);
  return MakeError("input '" + g_.value(u).name + "' has no buffer");
}

// Each extra goes where the kernel names it; the program states the registry's name.
std::map<std::string, DeviceTensor> ComputeSteps::ExtrasOf(
    const std::vector<BufferId>& extras) const {
  std::map<std::string, DeviceTensor> out;
  for (BufferId b : extras) out[KernelExtraName(p_.buffer(b).saved_name)] = buffers_.Get(b);
  return out;
}

// target = cast(value): the source is read as the value it holds (a view's own data, not its
// base's), the target is laid out like the value.
Status ComputeSteps::RunCasts(const Step& step) {
  for (const CastOp& c : step.casts) {
    const ValueId u = p_.buffer(c.target).value;
    DeviceTensor source = buffers_.Get(c.source);
    if (u.valid()) {
      MEMPLAN_TRY(source, buffers_.ValueThrough(u, c.source));
    }
    MEMPLAN_RETURN_IF_ERROR(backend_.Cast(source, buffers_.Get(c.target).View(source.shape)));
  }
  return OkStatus();
}

Status ComputeSteps::Forward(const Step& step) {
  const Node& node = g_.node(step.node);
  MEMPLAN_RETURN_IF_ERROR(RunCasts(step));
  // An output that names an input's buffer is a view: the program allocates nothing for it.
  auto is_view_output = [&](size_t j) {
    return std::find(step.inputs.begin(), step.inputs.end(), step.outputs[j]) != step.inputs.end();
  };

  ForwardCall call = KernelCall<ForwardCall>(step, node);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    MEMPLAN_TRY(DeviceTensor t, InputTensor(node, i, step.inputs));
    call.inputs.push_back(t);
  }
  call.num_outputs = static_cast<int>(node.outputs.size());
  call.outputs.assign(node.outputs.size(), DeviceTensor());
  for (size_t j = 0; j < step.outputs.size() && j < node.outputs.size(); ++j)
    if (step.outputs[j].valid() && !is_view_output(j))
      call.outputs[j] = buffers_.Get(step.outputs[j]);
  // A contiguous copy the registry saves in an input's place (SaveContiguousCopy) is made here;
  // the kernel sees the other extras.
  std::vector<BufferId> kernel_extras;
  for (BufferId b : step.extras) {
    const std::optional<int> copied = ContiguousCopyInput(p_.buffer(b).saved_name);
    if (!copied) {
      kernel_extras.push_back(b);
      continue;
    }
    const auto i = static_cast<size_t>(*copied);
    if (i >= call.inputs.size() || !call.inputs[i].defined())
      return MakeError("node '" + node.name + "' saves a copy of input " + std::to_string(i) +
                       ", which it does not have");
    const DeviceTensor& source = call.inputs[i];
    MEMPLAN_RETURN_IF_ERROR(backend_.Cast(source, buffers_.Get(b).View(source.shape)));
  }
  call.extras = ExtrasOf(kernel_extras);
  MEMPLAN_TRY(std::vector<DeviceTensor> outs, backend_.Forward(call));
  for (size_t j = 0; j < node.outputs.size() && j < outs.size(); ++j) {
    ValueId o = node.outputs[j];
    if (!o.valid() || j >= step.outputs.size() || !step.outputs[j].valid()) continue;
    const DeviceTensor& buffer = buffers_.Get(step.outputs[j]);
    // A view's buffer is its base: a Split chunk or a Slice that shares its storage is part of
    // it. What the backend materialised instead (an Expand's broadcast copy) is scratch of any
    // size.
    const bool shares_base = outs[j].storage == buffer.storage;
    if (is_view_output(j) ? shares_base && outs[j].numel() > buffer.numel()
                          : outs[j].numel() != buffer.numel())
      return MakeError("output '" + g_.value(o).name + "' " + ShapeToString(outs[j].shape) +
                       " does not fit its buffer " + ShapeToString(buffer.shape));
    buffers_.set_value_shape(o, outs[j].shape);
    // A view's value is what its kernel returned (a Transpose is not its base reinterpreted):
    // storage shared with the base, or backend scratch where the backend cannot express the
    // view. Kept while the base buffer lives.
    if (is_view_output(j)) buffers_.RecordView(step.kind, o, outs[j], step.outputs[j]);
  }
  return OkStatus();
}

// The term's output is the value itself, not its buffer's (a Split chunk's buffer is the whole
// split input): read through the buffer as that value once its forward recorded its shape.
Expected<DeviceTensor> ComputeSteps::Prediction(const LossTerm& term, BufferId b) const {
  if (term.output.valid() && !buffers_.value_shape(term.output).empty())
    return buffers_.ValueThrough(term.output, b);
  return buffers_.Get(b);
}

Expected<const LossTerm*> ComputeSteps::TermOf(const Step& step) const {
  for (const LossTerm& term : p_.loss_terms) {
    if (term.step >= 0 && &p_.step(term.step) == &step) return &term;
    if (term.backward_step >= 0 && &p_.step(term.backward_step) == &step) return &term;
  }
  return MakeError("loss step '" + step.name + "' belongs to no loss term of the program");
}

Expected<double> ComputeSteps::Loss(const Step& step) {
  MEMPLAN_RETURN_IF_ERROR(RunCasts(step));
  MEMPLAN_TRY(const LossTerm* term, TermOf(step));
  LossCall call;
  call.loss = LossKindName(term->kind);
  call.class_axis = static_cast<int>(term->class_axis);
  MEMPLAN_TRY(call.prediction, Prediction(*term, step.inputs.at(0)));
  if (step.inputs.size() > 1) call.label = buffers_.Get(step.inputs[1]);
  call.loss_value = buffers_.Get(step.outputs.at(0));
  for (BufferId b : step.extras) call.log_prob = buffers_.Get(b).View(call.prediction.shape);
  MEMPLAN_RETURN_IF_ERROR(backend_.LossForward(call));
  MEMPLAN_TRY(std::vector<float> loss, backend_.Download(call.loss_value));
  return static_cast<double>(loss.at(0));
}

Status ComputeSteps::LossBackward(const Step& step, float grad_scale) {
  MEMPLAN_TRY(const LossTerm* term, TermOf(step));
  LossBackwardCall call;
  call.loss = LossKindName(term->kind);
  call.class_axis = static_cast<int>(term->class_axis);
  for (BufferId b : step.saved) {
    const Buffer& buffer = p_.buffer(b);
    if (b == term->label) {
      call.label = buffers_.Get(b);
    } else if (b == term->loss) {
      continue;
    } else if (buffer.role == BufferRole::kSavedExtra) {
      call.log_prob = buffers_.Get(b);
    } else {
      MEMPLAN_TRY(call.prediction, Prediction(*term, b));
    }
  }
  if (call.log_prob.defined() && term->output.valid())
    call.log_prob = call.log_prob.View(buffers_.value_shape(term->output));
  call.grad_scale = grad_scale;
  const GradientWrite& w = step.input_gradients.at(0);
  const BufferId dest = w.part.valid() ? w.part : w.target;
  MEMPLAN_TRY(call.grad, buffers_.ValueThrough(term->output, dest));
  MEMPLAN_RETURN_IF_ERROR(backend_.LossBackward(call));
  if (w.part.valid())
    MEMPLAN_RETURN_IF_ERROR(backend_.Add(buffers_.Get(w.part), buffers_.Get(w.target)));
  return OkStatus();
}

Status ComputeSteps::BindBackwardInputShapes(const Node& node, const Step& forward,
                                             BackwardCall& call) {
  const size_t n_in = node.inputs.size();
  call.inputs.assign(n_in, DeviceTensor());
  call.outputs.assign(node.outputs.size(), DeviceTensor());
  call.input_shapes.assign(n_in, TensorShape());
  call.input_dtypes.assign(n_in, DType::kUndefined);
  for (size_t i = 0; i < n_in; ++i) {
    ValueId u = node.inputs[i];
    if (!u.valid()) continue;
    if (g_.value(u).kind == ValueKind::kConstant) {
      MEMPLAN_TRY(call.inputs[i], constants_.Get(u));
      call.input_shapes[i] = call.inputs[i].shape;
      call.input_dtypes[i] = call.inputs[i].dtype;
      continue;
    }
    call.input_shapes[i] = buffers_.value_shape(u);
    call.input_dtypes[i] = i < forward.inputs.size() && forward.inputs[i].valid()
                               ? p_.buffer(forward.inputs[i]).dtype
                               : g_.value(u).dtype;
  }
  return OkStatus();
}

Status ComputeSteps::BindSavedBuffers(const Step& step, const Node& node, BackwardCall& call) {
  const size_t n_in = node.inputs.size();
  std::vector<BufferId> extras;
  for (BufferId b : step.saved) {
    if (p_.buffer(b).role == BufferRole::kSavedExtra) {
      // A saved contiguous copy of an input is that input to the kernel.
      if (const std::optional<int> copied = ContiguousCopyInput(p_.buffer(b).saved_name);
          copied && static_cast<size_t>(*copied) < n_in) {
        const auto i = static_cast<size_t>(*copied);
        call.inputs[i] = buffers_.Get(b).View(call.input_shapes[i]);
        call.input_dtypes[i] = p_.buffer(b).dtype;
        continue;
      }
      extras.push_back(b);
      continue;
    }
    bool matched = false;
    for (size_t i = 0; i < n_in; ++i) {
      if (!buffers_.Holds(b, node.inputs[i])) continue;
      MEMPLAN_TRY(call.inputs[i], buffers_.ValueThrough(node.inputs[i], b));
      call.input_dtypes[i] = p_.buffer(b).dtype;
      matched = true;
    }
    for (size_t j = 0; j < node.outputs.size(); ++j) {
      if (!buffers_.Holds(b, node.outputs[j])) continue;
      MEMPLAN_TRY(call.outputs[j], buffers_.ValueThrough(node.outputs[j], b));
      matched = true;
    }
    if (!matched)
      return MakeError("saved buffer '" + p_.buffer(b).name + "' is no input or output of '" +
                       node.name + "'");
  }
  call.extras = ExtrasOf(extras);
  return OkStatus();
}

Status ComputeSteps::BindUnsavedParameters(const Node& node, const Step& forward,
                                           BackwardCall& call) {
  // Parameters are persistent: a kernel may read one it did not save (MatMul's backward wants
  // both operands even when only the weight's gradient is needed), at no memory cost.
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId u = node.inputs[i];
    if (call.inputs[i].defined() || !u.valid() || g_.value(u).kind != ValueKind::kParameter ||
        i >= forward.inputs.size() || !forward.inputs[i].valid() ||
        !buffers_.Live(forward.inputs[i]))
      continue;
    MEMPLAN_TRY(call.inputs[i], buffers_.ValueThrough(u, forward.inputs[i]));
  }
  return OkStatus();
}

Status ComputeSteps::Backward(const Step& step) {
  const Node& node = g_.node(step.node);
  // A quantised frozen weight is dequantised again for backward (the program's cast).
  MEMPLAN_RETURN_IF_ERROR(RunCasts(step));
  const LogicalTime fwd = buffers_.forward_step(step.node);
  MEMPLAN_CHECK(fwd >= 0);
  const Step& forward = p_.step(fwd);
  BackwardCall call = KernelCall<BackwardCall>(step, node);
  MEMPLAN_RETURN_IF_ERROR(BindBackwardInputShapes(node, forward, call));
  MEMPLAN_RETURN_IF_ERROR(BindSavedBuffers(step, node, call));
  MEMPLAN_RETURN_IF_ERROR(BindUnsavedParameters(node, forward, call));
  call.grad_outputs.assign(node.outputs.size(), DeviceTensor());
  for (size_t j = 0; j < step.output_gradients.size() && j < node.outputs.size(); ++j) {
    if (!step.output_gradients[j].valid()) continue;
    MEMPLAN_TRY(call.grad_outputs[j],
                buffers_.ValueThrough(node.outputs[j], step.output_gradients[j]));
  }
  call.grad_inputs.assign(node.inputs.size(), DeviceTensor());
  call.accumulate.assign(node.inputs.size(), false);
  for (const GradientWrite& w : step.input_gradients) {
    const auto slot = static_cast<size_t>(w.slot);
    MEMPLAN_TRY(call.grad_inputs[slot],
                buffers_.ValueThrough(node.inputs[slot], w.part.valid() ? w.part : w.target));
  }
  MEMPLAN_RETURN_IF_ERROR(backend_.Backward(call));
  // Autograd's InputBuffer: a later contribution to a value's gradient is added.
  for (const GradientWrite& w : step.input_gradients)
    if (w.part.valid())
      MEMPLAN_RETURN_IF_ERROR(backend_.Add(buffers_.Get(w.part), buffers_.Get(w.target)));
  return OkStatus();
}

Status ComputeSteps::CastGradient(const Step& step) {
  for (const CastOp& c : step.casts)
    MEMPLAN_RETURN_IF_ERROR(backend_.Cast(buffers_.Get(c.source), buffers_.Get(c.target)));
  return OkStatus();
}

Status ComputeSteps::Accumulate(const Step& step) {
  // The part is dead when the program handed its storage to the gradient at Begin (the first
  // contribution); otherwise it is added in.
  if (buffers_.Live(step.accumulate_part))
    return backend_.Add(buffers_.Get(step.accumulate_part), buffers_.Get(step.outputs.at(0)));
  return OkStatus();
}

}  // namespace memplan
