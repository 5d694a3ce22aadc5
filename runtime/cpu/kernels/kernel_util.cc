#include "runtime/cpu/kernels/kernel_util.h"

#include "runtime/precision_emulation.h"

namespace memplan {

const Attributes& AttributesOf(const Attributes* attributes) {
  static const Attributes kEmpty;
  return attributes != nullptr ? *attributes : kEmpty;
}

Expected<Tensor> RequireTensor(const std::vector<Tensor>& tensors, size_t index,
                               std::string_view op, std::string_view role) {
  if (index >= tensors.size() || !tensors[index].defined()) {
    return MakeError(std::string(op) + ": " + std::string(role) + " " + std::to_string(index) +
                     " is missing");
  }
  return tensors[index];
}

Tensor OptionalTensor(const std::vector<Tensor>& tensors, size_t index) {
  return index < tensors.size() ? tensors[index] : Tensor();
}

Expected<Tensor> RequireExtra(const BackwardArgs& args, const std::string& name,
                              std::string_view op) {
  auto it = args.extras.find(name);
  if (it == args.extras.end() || !it->second.defined())
    return MakeError(std::string(op) + ": saved '" + name + "' from forward is missing");
  return it->second;
}

Expected<Tensor> SavedOutputOrExtra(const BackwardArgs& args, size_t output,
                                    const std::string& name, std::string_view op) {
  if (output < args.outputs.size() && args.outputs[output].defined()) return args.outputs[output];
  return RequireExtra(args, name, op);
}

Tensor NewOutput(const KernelContext& ctx, TensorShape shape, DType dtype) {
  return Tensor::Zeros(std::move(shape), dtype, *ctx.allocator, ctx.output_category);
}

Tensor NewExtra(const KernelContext& ctx, TensorShape shape, DType dtype) {
  return Tensor::Zeros(std::move(shape), dtype, *ctx.allocator, ctx.extra_category);
}

namespace {
DType InputGradientDType(const BackwardArgs& args, size_t input) {
  MEMPLAN_CHECK(input < args.input_shapes.size());
  return input < args.input_dtypes.size() ? FloatResultType(args.input_dtypes[input])
                                          : DType::kFloat32;
}
}  // namespace

Tensor NewInputGradient(const KernelContext& ctx, const BackwardArgs& args, size_t input) {
  const DType dtype = InputGradientDType(args, input);  // checks `input` first
  return NewOutput(ctx, args.input_shapes[input], dtype);
}

Tensor NewOverwrittenOutput(const KernelContext& ctx, TensorShape shape, DType dtype) {
  return Tensor::Uninitialized(std::move(shape), dtype, *ctx.allocator, ctx.output_category);
}

Tensor NewOverwrittenInputGradient(const KernelContext& ctx, const BackwardArgs& args,
                                   size_t input) {
  const DType dtype = InputGradientDType(args, input);
  return NewOverwrittenOutput(ctx, args.input_shapes[input], dtype);
}

Expected<InputGradients> MakeGradientSlots(const BackwardArgs& args, size_t required_inputs,
                                           std::string_view op) {
  if (args.input_shapes.size() < required_inputs) {
    return MakeError(std::string(op) + ": backward needs the shapes of its first " +
                     std::to_string(required_inputs) + " inputs, got " +
                     std::to_string(args.input_shapes.size()));
  }
  return InputGradients(args.input_shapes.size());
}

DType FloatResultType(DType dtype) { return IsFloating(dtype) ? dtype : DType::kFloat32; }

void RoundToOwnDType(const Tensor& tensor) {
  RoundToDTypeInPlace(tensor.mutable_data(), tensor.numel(), tensor.dtype());
}

InputGradients WithRoundedGradients(InputGradients grads, Tensor dx, Tensor dw, Tensor db) {
  for (size_t i = 0; i < 3; ++i) {
    Tensor* t = i == 0 ? &dx : i == 1 ? &dw : &db;
    if (t->defined()) grads = WithRoundedGradient(std::move(grads), i, std::move(*t));
  }
  return grads;
}

void PutRoundedGradient(InputGradients& grads, size_t input, Tensor gradient) {
  RoundToOwnDType(gradient);
  grads[input] = std::move(gradient);
}

InputGradients WithRoundedGradient(InputGradients grads, size_t input, Tensor gradient) {
  PutRoundedGradient(grads, input, std::move(gradient));
  return grads;
}

ForwardResult OutputWithSavedExtras(Tensor y, int num_outputs,
                                    std::vector<std::pair<std::string, Tensor>> extras) {
  RoundToOwnDType(y);
  ForwardResult result;
  result.outputs.push_back(std::move(y));
  for (size_t i = 0; i < extras.size(); ++i) {
    auto& [name, tensor] = extras[i];
    if (num_outputs >= static_cast<int>(i) + 2) result.outputs.push_back(tensor);
    result.extras[name] = std::move(tensor);
  }
  return result;
}

Expected<int64_t> NormalizeAxis(int64_t axis, int64_t rank, std::string_view op) {
  const int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    return MakeError(std::string(op) + ": axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  }
  return normalized;
}

IntList IntsFromInputOrAttribute(const std::vector<Tensor>& inputs, size_t index,
                                 const Attributes& attributes, const std::string& name) {
  if (index < inputs.size() && inputs[index].defined()) {
    return {inputs[index].ToInt64Vector(), true};
  }
  if (attributes.Has(name)) return {attributes.GetInts(name), true};
  return {};
}

std::vector<int64_t> ContiguousStrides(const TensorShape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

ForwardResult SingleOutput(Tensor output) {
  ForwardResult result;
  result.outputs.push_back(std::move(output));
  return result;
}

ForwardResult RoundedSingleOutput(Tensor output) {
  RoundToOwnDType(output);
  return SingleOutput(std::move(output));
}

}  // namespace memplan
