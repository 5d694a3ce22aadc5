#include "runtime/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "graph/ops/standard_aliases.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/losses.h"
#include "runtime/optimizers.h"
#include "runtime/precision_emulation.h"

namespace memplan {
namespace {

// A CPU buffer: the tensor as allocated (its shape may differ from a handle's view of it).
class CpuStorage final : public DeviceStorage {
 public:
  explicit CpuStorage(Tensor tensor) : tensor_(std::move(tensor)) {}
  const Tensor& tensor() const { return tensor_; }
  void Recategorize(MemoryCategory category) override { tensor_.Recategorize(category); }

 private:
  Tensor tensor_;
};

Status CheckSameCount(const Tensor& src, const Tensor& dst, std::string_view what) {
  if (src.numel() != dst.numel()) {
    return MakeError(std::string(what) + ": " + ShapeToString(src.shape()) + " does not fit " +
                     ShapeToString(dst.shape()));
  }
  return OkStatus();
}

// dst = src rounded to dst's dtype (or dst += src when `add`).
Status CopyRounded(const Tensor& src, const Tensor& dst, bool add, std::string_view what) {
  MEMPLAN_RETURN_IF_ERROR(CheckSameCount(src, dst, what));
  float* out = dst.mutable_data();
  const float* in = src.data();
  const int64_t n = dst.numel();
  // Copy (or add) in one plain loop, then round: the same values as rounding each element as it
  // is written, without a per-element call for the fp32 buffers that need no rounding.
  if (add) {
    for (int64_t i = 0; i < n; ++i) out[i] += in[i];
  } else if (in != out) {
    std::copy(in, in + n, out);
  }
  RoundToDTypeInPlace(out, n, dst.dtype());
  return OkStatus();
}

// Cross-entropy labels as one id per position of CrossEntropyLogitsView's [N, C, d...].
Tensor AsFlat(const Tensor& t) { return t.defined() ? t.View({t.numel()}) : t; }

// A loss kernel's prediction and label as the program holds them, in the layout the kernels read:
// cross entropy takes [N, C, d...] logits and one label per position; the others take both as
// they are.
struct LossOperands {
  Tensor prediction;
  Tensor label;
};
LossOperands KernelLossOperands(LossKind kind, const Tensor& prediction, const Tensor& label,
                                int class_axis) {
  if (kind == LossKind::kCrossEntropy)
    return {CrossEntropyLogitsView(prediction, class_axis), AsFlat(label)};
  return {prediction, label};
}

Expected<LossKind> LossFromName(std::string_view name) {
  Expected<LossKind> kind = ParseLossKind(name);
  if (!kind.ok() || *kind == LossKind::kAuto)
    return MakeError("the cpu backend has no loss '" + std::string(name) + "'");
  return *kind;
}

// The domain the kernel registry knows `op_type` under: "" for ai.onnx and its aliases
// (com.microsoft Gelu), the node's own for memplan's fused ops (ScaledDotProductAttention).
Expected<std::string_view> KernelDomain(std::string_view domain, std::string_view op_type) {
  if (RunsAsStandardOnnxOp(domain, op_type)) return std::string_view();
  if (KernelRegistry::Get().Find(op_type, domain) != nullptr) return domain;
  return MakeError("the cpu backend has no kernel for " + std::string(domain) + ":" +
                   std::string(op_type));
}

std::vector<Tensor> AsTensors(const std::vector<DeviceTensor>& handles) {
  std::vector<Tensor> tensors;
  tensors.reserve(handles.size());
  for (const DeviceTensor& h : handles) tensors.push_back(CpuBackend::AsTensor(h));
  return tensors;
}

}  // namespace

Tensor CpuBackend::AsTensor(const DeviceTensor& handle) {
  if (!handle.defined()) return Tensor();
  const auto* storage = dynamic_cast<const CpuStorage*>(handle.storage.get());
  MEMPLAN_CHECK(storage != nullptr);
  return storage->tensor().View(handle.shape).WithDType(handle.dtype);
}

DeviceTensor CpuBackend::Wrap(const Tensor& tensor) {
  if (!tensor.defined()) return DeviceTensor();
  return DeviceTensor{std::make_shared<CpuStorage>(tensor), tensor.shape(), tensor.dtype()};
}

Expected<DeviceTensor> CpuBackend::Allocate(const TensorShape& shape, DType dtype,
                                            MemoryCategory category) {
  for (int64_t d : shape)
    if (d < 0) return MakeError("cannot allocate a buffer of shape " + ShapeToString(shape));
  return Wrap(Tensor::Zeros(shape, dtype, program_, category));
}

Expected<DeviceTensor> CpuBackend::Constant(const TensorShape& shape, DType dtype,
                                            const std::vector<float>& values) {
  if (static_cast<int64_t>(values.size()) != NumElements(shape))
    return MakeError("constant of shape " + ShapeToString(shape) + " given " +
                     std::to_string(values.size()) + " values");
  return Wrap(Tensor::FromValues(shape, values, dtype, scratch_, MemoryCategory::kOther));
}

DeviceMemory CpuBackend::Memory() const {
  DeviceMemory m;
  m.live = program_.live_bytes();
  m.peak = program_.peak_bytes();
  m.live_total = program_.live_total();
  m.peak_total = program_.peak_total();
  m.scratch_peak_bytes = scratch_.peak_total();
  return m;
}

void CpuBackend::ResetPeaks() {
  program_.ResetPeaks();
  scratch_.ResetPeaks();
}

Status CpuBackend::Upload(const DeviceTensor& dst, const std::vector<float>& values) {
  Tensor t = AsTensor(dst);
  if (static_cast<int64_t>(values.size()) != t.numel())
    return MakeError("upload of " + std::to_string(values.size()) + " values into a buffer of " +
                     ShapeToString(t.shape()));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.mutable_data()[i] = RoundToDType(values[static_cast<size_t>(i)], t.dtype());
  return OkStatus();
}

Expected<std::vector<float>> CpuBackend::Download(const DeviceTensor& src) {
  if (!src.defined()) return MakeError("download of an undefined tensor");
  return AsTensor(src).ToVector();
}

Status CpuBackend::Cast(const DeviceTensor& src, const DeviceTensor& dst) {
  return CopyRounded(AsTensor(src), AsTensor(dst), /*add=*/false, "cast");
}

Status CpuBackend::Add(const DeviceTensor& src, const DeviceTensor& dst) {
  return CopyRounded(AsTensor(src), AsTensor(dst), /*add=*/true, "add");
}

Status CpuBackend::Fill(const DeviceTensor& dst, float value) {
  Tensor t = AsTensor(dst);
  const float v = RoundToDType(value, t.dtype());
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data()[i] = v;
  return OkStatus();
}

Status CpuBackend::Scale(const std::vector<DeviceTensor>& tensors, float factor) {
  for (const DeviceTensor& h : tensors) {
    Tensor t = AsTensor(h);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.mutable_data()[i] = RoundToDType(t.data()[i] * factor, t.dtype());
  }
  return OkStatus();
}

Expected<bool> CpuBackend::UnscaleAndCheckOverflow(const std::vector<DeviceTensor>& gradients,
                                                   float inv_scale) {
  bool found_inf = false;
  for (const DeviceTensor& h : gradients) {
    Tensor t = AsTensor(h);
    for (int64_t i = 0; i < t.numel(); ++i) {
      // GradScaler unscales in fp32 and writes back in the gradient's dtype.
      const float v = RoundToDType(t.data()[i] * inv_scale, t.dtype());
      t.mutable_data()[i] = v;
      found_inf = found_inf || !std::isfinite(v);
    }
  }
  return found_inf;
}

Expected<double> CpuBackend::GlobalNorm(const std::vector<DeviceTensor>& tensors) {
  double sum = 0.0;
  for (const DeviceTensor& h : tensors) {
    Tensor t = AsTensor(h);
    for (int64_t i = 0; i < t.numel(); ++i) sum += static_cast<double>(t.data()[i]) * t.data()[i];
  }
  return std::sqrt(sum);
}

Expected<std::vector<DeviceTensor>> CpuBackend::Forward(const ForwardCall& call) {
  MEMPLAN_TRY(std::string_view domain, KernelDomain(call.domain, call.op_type));
  const KernelContext ctx{.allocator = &scratch_, .training = call.training, .seed = call.seed};
  ForwardArgs args;
  args.attributes = call.attributes;
  args.inputs = AsTensors(call.inputs);
  args.num_outputs = call.num_outputs;
  MEMPLAN_TRY(ForwardResult result, RunForward(call.op_type, ctx, args, domain));
  std::vector<DeviceTensor> held(static_cast<size_t>(call.num_outputs));
  for (size_t j = 0; j < held.size(); ++j) {
    const Tensor produced = j < result.outputs.size() ? result.outputs[j] : Tensor();
    const DeviceTensor dest = j < call.outputs.size() ? call.outputs[j] : DeviceTensor();
    if (dest.defined()) {
      if (!produced.defined())
        return MakeError(std::string(call.op_type) + " produced no output " + std::to_string(j));
      MEMPLAN_RETURN_IF_ERROR(
          CopyRounded(produced, AsTensor(dest), /*add=*/false,
                      std::string(call.op_type) + " output " + std::to_string(j)));
      held[j] = dest.View(produced.shape());
    } else {
      held[j] = Wrap(produced);
    }
  }
  for (const auto& [name, dest] : call.extras) {
    auto it = result.extras.find(name);
    if (it == result.extras.end())
      return MakeError(std::string(call.op_type) + " kernel keeps no '" + name + "' for backward");
    MEMPLAN_RETURN_IF_ERROR(CopyRounded(it->second, AsTensor(dest), /*add=*/false,
                                        std::string(call.op_type) + " " + name));
  }
  return held;
}

Status CpuBackend::Backward(const BackwardCall& call) {
  MEMPLAN_TRY(std::string_view domain, KernelDomain(call.domain, call.op_type));
  const KernelContext ctx{.allocator = &scratch_, .training = call.training, .seed = call.seed};
  BackwardArgs args;
  args.attributes = call.attributes;
  args.inputs = AsTensors(call.inputs);
  args.outputs = AsTensors(call.outputs);
  for (const auto& [name, t] : call.extras) args.extras[name] = AsTensor(t);
  args.input_shapes = call.input_shapes;
  args.input_dtypes = call.input_dtypes;
  args.grad_outputs = AsTensors(call.grad_outputs);
  args.needs_input_grad.assign(call.input_shapes.size(), false);
  for (size_t i = 0; i < call.grad_inputs.size() && i < args.needs_input_grad.size(); ++i)
    args.needs_input_grad[i] = call.grad_inputs[i].defined();
  MEMPLAN_TRY(InputGradients grads, RunBackward(call.op_type, ctx, args, domain));
  for (size_t i = 0; i < call.grad_inputs.size(); ++i) {
    if (!call.grad_inputs[i].defined()) continue;
    if (i >= grads.size() || !grads[i].defined())
      return MakeError(std::string(call.op_type) + " backward produced no gradient for input " +
                       std::to_string(i));
    const bool add = i < call.accumulate.size() && call.accumulate[i];
    MEMPLAN_RETURN_IF_ERROR(
        CopyRounded(grads[i], AsTensor(call.grad_inputs[i]), add,
                    std::string(call.op_type) + " input gradient " + std::to_string(i)));
  }
  return OkStatus();
}

Status CpuBackend::LossForward(const LossCall& call) {
  MEMPLAN_TRY(LossKind kind, LossFromName(call.loss));
  const KernelContext ctx{.allocator = &scratch_};
  const LossOperands in =
      KernelLossOperands(kind, AsTensor(call.prediction), AsTensor(call.label), call.class_axis);
  MEMPLAN_TRY(Tensor loss, memplan::LossForward(kind, ctx, in.prediction, in.label));
  MEMPLAN_RETURN_IF_ERROR(CopyRounded(loss, AsTensor(call.loss_value), false, "loss"));
  if (call.log_prob.defined()) {
    Tensor out = AsTensor(call.log_prob);
    MEMPLAN_RETURN_IF_ERROR(CrossEntropyLogProb(in.prediction, out));
  }
  return OkStatus();
}

Status CpuBackend::LossBackward(const LossBackwardCall& call) {
  MEMPLAN_TRY(LossKind kind, LossFromName(call.loss));
  const KernelContext ctx{.allocator = &scratch_};
  Tensor dest = AsTensor(call.grad);
  Tensor source = AsTensor(call.prediction);
  if (kind == LossKind::kCrossEntropy && call.log_prob.defined()) {
    // softmax(log_softmax(z)) == softmax(z): the kept log-probabilities give the same gradient.
    source = AsTensor(call.log_prob);
  } else if (kind == LossKind::kSum) {
    source = Tensor::Zeros(dest.shape(), DType::kFloat32, scratch_, MemoryCategory::kOther);
  }
  const LossOperands in = KernelLossOperands(kind, source, AsTensor(call.label), call.class_axis);
  if (!in.prediction.defined()) return MakeError("loss backward: the prediction was not kept");
  MEMPLAN_TRY(Tensor grad,
              memplan::LossBackward(kind, ctx, in.prediction, in.label, call.grad_scale));
  return CopyRounded(grad, dest, /*add=*/false, "loss gradient");
}

Status CpuBackend::OptimizerStep(const OptimizerCall& call) {
  MEMPLAN_CHECK(call.hyper != nullptr);
  Expected<OptimizerKind> kind = ParseOptimizerKind(call.hyper->kind);
  if (!kind.ok() || !RunsOptimizer(*kind))
    return MakeError("the cpu runtime has no optimizer '" + call.hyper->kind + "'");
  OptimizerOptions options;
  options.kind = *kind;
  options.learning_rate = call.hyper->learning_rate;
  options.momentum = call.hyper->momentum;
  options.beta1 = call.hyper->beta1;
  options.beta2 = call.hyper->beta2;
  options.epsilon = call.hyper->epsilon;
  options.weight_decay = call.hyper->weight_decay;
  OptimizerState state;
  state.buffers = AsTensors(call.states);
  state.step = call.step - 1;
  // The fused mixed-precision update reads the half-precision gradient as fp32 numbers.
  const Tensor gradient = AsTensor(call.gradient).WithDType(DType::kFloat32);
  const Tensor master = AsTensor(call.master);
  MEMPLAN_RETURN_IF_ERROR(ApplyOptimizerStep(options, gradient, master, state));
  RoundToDTypeInPlace(master.mutable_data(), master.numel(), master.dtype());
  if (call.working.defined()) MEMPLAN_RETURN_IF_ERROR(Cast(call.master, call.working));
  return OkStatus();
}

}  // namespace memplan
