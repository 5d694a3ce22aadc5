// NonZero (torch.nonzero(x).t()): the coordinates of x's non-zero elements, [rank, count] int64 in
// row-major order of the elements. The count is whatever the values give: the plan holds this
// output at its upper bound (graph/data_dependent_counts.h), the runtime at its real size. Most
// NonZeros read constants (the TorchScript exporter's opset-9 arange, NonZero(ConstantOfShape(n,
// 1)), which as_strided's offsets use) and run once when the executor folds them
// (runtime/constant_values.h). No backward: derivatives.yaml, nonzero is not differentiable.

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

Expected<ForwardResult> NonZeroForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "NonZero", "X"));
  const TensorShape& shape = x.shape();
  const auto rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> flat_positions;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.data()[i] != 0.0f) flat_positions.push_back(i);
  const auto count = static_cast<int64_t>(flat_positions.size());
  Tensor y = NewOverwrittenOutput(ctx, TensorShape{rank, count}, DType::kInt64);
  for (int64_t k = 0; k < count; ++k) {
    int64_t rest = flat_positions[static_cast<size_t>(k)];
    for (int64_t axis = rank - 1; axis >= 0; --axis) {
      const int64_t extent = shape[static_cast<size_t>(axis)];
      y.mutable_data()[axis * count + k] = static_cast<float>(rest % extent);
      rest /= extent;
    }
  }
  return SingleOutput(std::move(y));
}

}  // namespace

void RegisterNonZeroKernels(KernelRegistry& registry) {
  registry.Register("NonZero", &NonZeroForward, nullptr);
}

}  // namespace memplan
