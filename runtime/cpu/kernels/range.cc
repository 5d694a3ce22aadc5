// Range(start, limit, delta), torch.arange: one scalar each, the sequence of
// runtime/range_sequence.h in the inputs' dtype. Usually the executor materialises a Range as a
// constant (runtime/constant_values.h); this kernel runs one whose inputs are computed during the
// step: the dynamo exporter stores arange's bounds as float scalar initializers cast to int64,
// which the importer counts as weights, so the Range is a step of the program (Llama's
// cache_position from a Hugging Face config). No backward: derivatives.yaml, arange is not
// differentiable.

#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/range_sequence.h"

namespace memplan {
namespace {

Expected<double> ScalarInput(const std::vector<Tensor>& inputs, size_t index, const char* role) {
  MEMPLAN_TRY(Tensor t, RequireTensor(inputs, index, "Range", role));
  if (t.numel() != 1)
    return MakeError(std::string("Range: ") + role + " must be a scalar, not " +
                     std::to_string(t.numel()) + " elements");
  return static_cast<double>(t.data()[0]);
}

Expected<ForwardResult> RangeForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(double start, ScalarInput(args.inputs, 0, "start"));
  MEMPLAN_TRY(double limit, ScalarInput(args.inputs, 1, "limit"));
  MEMPLAN_TRY(double delta, ScalarInput(args.inputs, 2, "delta"));
  MEMPLAN_TRY(std::vector<float> values, RangeSequence(start, limit, delta));
  Tensor y = NewOverwrittenOutput(ctx, TensorShape{static_cast<int64_t>(values.size())},
                                  args.inputs[0].dtype());
  for (size_t i = 0; i < values.size(); ++i) y.mutable_data()[i] = values[i];
  return SingleOutput(std::move(y));
}

}  // namespace

void RegisterRangeKernels(KernelRegistry& registry) {
  registry.Register("Range", &RangeForward, nullptr);
}

}  // namespace memplan
