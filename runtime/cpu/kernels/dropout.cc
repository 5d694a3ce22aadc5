// Dropout with a seeded mask. The mask comes from a counter-based generator (SplitMix64 of
// seed + element index), so it depends only on the seed and the element, which is what lets a
// recomputed forward reproduce it exactly.

#include <cmath>
#include <string>

#include "runtime/counter_rng.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// The drop probability: input 1 (opset 12+) or the `ratio` attribute (older), default 0.5.
Expected<double> DropRatio(const Attributes* attributes, const std::vector<Tensor>& inputs) {
  double ratio = AttributesOf(attributes).GetFloat("ratio", 0.5);
  if (inputs.size() > 1 && inputs[1].defined()) ratio = inputs[1].data()[0];
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    return MakeError("Dropout: ratio " + std::to_string(ratio) + " is outside [0, 1)");
  }
  return ratio;
}

Expected<ForwardResult> DropoutForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Dropout", "input"));
  MEMPLAN_TRY(double ratio, DropRatio(args.attributes, args.inputs));
  // The mask is the optional ONNX output and the saved extra at once: one buffer.
  Tensor mask = args.num_outputs >= 2 ? NewOutput(ctx, x.shape(), DType::kBool)
                                      : NewExtra(ctx, x.shape(), DType::kBool);
  Tensor y = NewOutput(ctx, x.shape(), x.dtype());
  const bool active = ctx.training && ratio > 0.0;
  const auto scale = static_cast<float>(1.0 / (1.0 - ratio));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = !active || DropoutUniform(ctx.seed, i) >= ratio;
    mask.mutable_data()[i] = keep ? 1.0f : 0.0f;
    y.mutable_data()[i] = keep ? (active ? x.data()[i] * scale : x.data()[i]) : 0.0f;
  }
  return OutputWithSavedExtras(std::move(y), args.num_outputs, {{"mask", std::move(mask)}});
}

// dx = dy * mask / (1 - ratio), the scale recomputed from the ratio (a constant input or an
// attribute), like native_dropout_backward's scalar argument.
Expected<InputGradients> DropoutBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Dropout", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Dropout"));
  if (!args.NeedsGrad(0)) return grads;
  if (args.InputPresent(1) && !(args.inputs.size() > 1 && args.inputs[1].defined())) {
    return MakeError("Dropout: backward needs the ratio input (a constant)");
  }
  MEMPLAN_TRY(double ratio, DropRatio(args.attributes, args.inputs));
  Tensor mask;
  auto it = args.extras.find("mask");
  if (it != args.extras.end()) {
    mask = it->second;
  } else {
    MEMPLAN_TRY(mask, RequireTensor(args.outputs, 1, "Dropout", "saved mask output"));
  }
  const bool active = ctx.training && ratio > 0.0;
  const auto scale = static_cast<float>(active ? 1.0 / (1.0 - ratio) : 1.0);
  Tensor dx = NewInputGradient(ctx, args, 0);
  for (int64_t i = 0; i < dx.numel(); ++i) {
    dx.mutable_data()[i] = dy.data()[i] * mask.data()[i] * scale;
  }
  RoundToOwnDType(dx);
  grads[0] = std::move(dx);
  return grads;
}

}  // namespace

void RegisterDropoutKernels(KernelRegistry& registry) {
  registry.Register("Dropout", &DropoutForward, &DropoutBackward);
}

}  // namespace memplan
