#pragma once
// Small helpers every kernel family uses: argument access with clear errors, output allocation
// through the executor's allocator, dtype rounding, axis handling.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/attributes.h"
#include "graph/expected.h"
#include "runtime/cpu/kernel_api.h"
#include "runtime/tensor.h"

namespace memplan {

const Attributes& AttributesOf(const Attributes* attributes);

// The defined tensor at `index`, or an error "<op>: <role> <what> is missing".
Expected<Tensor> RequireTensor(const std::vector<Tensor>& tensors, size_t index,
                               std::string_view op, std::string_view role);
// The tensor at `index` or an undefined one when the slot is absent.
Tensor OptionalTensor(const std::vector<Tensor>& tensors, size_t index);
// The defined extra `name` forward saved for backward, or an error
// "<op>: saved '<name>' from forward is missing".
Expected<Tensor> RequireExtra(const BackwardArgs& args, const std::string& name,
                              std::string_view op);

// A tensor forward kept for backward that the node may also declare as an output (Dropout's
// mask, MaxPool's indices, a norm's statistics): output `output` when the node declares it (the
// registry then saves that output, graph/ops/normalization_rules.h OutputOrExtra), else the extra
// `name`, or RequireExtra's error.
Expected<Tensor> SavedOutputOrExtra(const BackwardArgs& args, size_t output,
                                    const std::string& name, std::string_view op);

// A zeroed output in ctx.output_category / a zeroed extra in ctx.extra_category.
Tensor NewOutput(const KernelContext& ctx, TensorShape shape, DType dtype);
Tensor NewExtra(const KernelContext& ctx, TensorShape shape, DType dtype);
// A zeroed gradient for forward input `input` (its shape and dtype; fp32 if the dtype is not
// floating). REQUIRES: args.input_shapes has the entry.
Tensor NewInputGradient(const KernelContext& ctx, const BackwardArgs& args, size_t input);
// The same, not zeroed, for a kernel that writes every element before anything reads it
// (elementwise maps, normalisation outputs): zero-filling each fresh buffer was a large part of
// a CPU verify run. Accounted exactly as the zeroed ones.
Tensor NewOverwrittenOutput(const KernelContext& ctx, TensorShape shape, DType dtype);
Tensor NewOverwrittenInputGradient(const KernelContext& ctx, const BackwardArgs& args,
                                   size_t input);
// One undefined gradient slot per forward input, or an error when args lacks the shapes of the
// first `required_inputs` inputs (the executor must always pass input_shapes).
Expected<InputGradients> MakeGradientSlots(const BackwardArgs& args, size_t required_inputs,
                                           std::string_view op);
// The dtype results of a kernel fed `dtype` get: floating types keep theirs, others give fp32.
DType FloatResultType(DType dtype);
// Rounds every element to the tensor's own dtype (fp16/bf16 emulation; no-op for fp32).
void RoundToOwnDType(const Tensor& tensor);
// `grads` with the gradients of a kernel's (input, weight, bias) in slots 0, 1 and 2, each rounded
// to its own dtype; an undefined one (not needed) leaves its slot as it was.
InputGradients WithRoundedGradients(InputGradients grads, Tensor dx, Tensor dw, Tensor db);
// Puts `gradient`, rounded to its own dtype, in slot `input` of `grads`.
void PutRoundedGradient(InputGradients& grads, size_t input, Tensor gradient);
// `grads` with `gradient`, rounded to its own dtype, in slot `input`: how a backward kernel hands
// back the one gradient it computed last.
InputGradients WithRoundedGradient(InputGradients grads, size_t input, Tensor gradient);
// The backward of an op whose only gradient goes to input 0: checks the output gradient and the
// shapes of the first `required_inputs` inputs, hands back undefined slots when input 0 needs no
// gradient, else puts input_gradient(dy) -> Expected<Tensor>, rounded to its dtype, in slot 0.
template <class InputGradient>
Expected<InputGradients> FirstInputBackward(const BackwardArgs& args, size_t required_inputs,
                                            std::string_view op, InputGradient input_gradient) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, op, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, required_inputs, op));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(Tensor dx, input_gradient(dy));
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}
// The forward result of `y`, rounded to its own dtype, and the saved `extras` in order; extra i
// is also output i + 1 when the node declares that many outputs (Dropout's mask, MaxPool's
// indices, LayerNormalization's mean and invstd).
ForwardResult OutputWithSavedExtras(Tensor y, int num_outputs,
                                    std::vector<std::pair<std::string, Tensor>> extras);

// Maps a possibly negative axis into [0, rank), or an error naming the op.
Expected<int64_t> NormalizeAxis(int64_t axis, int64_t rank, std::string_view op);
// Integer list from input `index` when present (newer opsets), else from attribute `name`
// (older opsets); `found` says whether either existed.
struct IntList {
  std::vector<int64_t> values;
  bool found = false;
};
IntList IntsFromInputOrAttribute(const std::vector<Tensor>& inputs, size_t index,
                                 const Attributes& attributes, const std::string& name);

// Row-major strides of `shape` in elements.
std::vector<int64_t> ContiguousStrides(const TensorShape& shape);

// For every element of `shape` in row-major order, source(coordinate, flat index): one value per
// element, as the kernels that copy through an index (Pad, Tile, GatherElements) resolve each
// output element's source offset once.
template <class Source>
std::vector<int64_t> PerElement(const TensorShape& shape, Source source) {
  std::vector<int64_t> values(static_cast<size_t>(NumElements(shape)));
  std::vector<int64_t> coordinate(shape.size(), 0);
  for (size_t e = 0; e < values.size(); ++e) {
    values[e] = source(static_cast<const std::vector<int64_t>&>(coordinate), e);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++coordinate[d] < shape[d]) break;
      coordinate[d] = 0;
    }
  }
  return values;
}

// A kernel written once over a per-op description (`op`, a constexpr object naming what differs
// between the ops it serves: input slots, layout rules, names), in the registry's signature:
//   registry.Register("RotaryEmbedding", &ForwardFor<kOnnxRotary, RotaryForward>,
//                     &BackwardFor<kOnnxRotary, RotaryBackward>);
template <const auto& op, auto forward>
Expected<ForwardResult> ForwardFor(const KernelContext& ctx, const ForwardArgs& args) {
  return forward(op, ctx, args);
}
template <const auto& op, auto backward>
Expected<InputGradients> BackwardFor(const KernelContext& ctx, const BackwardArgs& args) {
  return backward(op, ctx, args);
}

// ForwardResult with the single output `output`.
ForwardResult SingleOutput(Tensor output);
// The same, `output` first rounded to its own dtype (a kernel that computed it in fp32 numbers).
ForwardResult RoundedSingleOutput(Tensor output);

}  // namespace memplan
