// Gather along `axis` (embeddings are Gather on axis 0). Backward scatter-adds into a zeroed
// tensor of the data's shape, so repeated indices accumulate (embedding_dense_backward).

#include <algorithm>
#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// data viewed as [outer, axis_size, inner]; indices flattened to `count` entries.
struct GatherPlan {
  int64_t outer = 1, axis_size = 1, inner = 1;
  TensorShape output;
};

Expected<GatherPlan> PlanGather(const Attributes& attrs, const TensorShape& data,
                                const TensorShape& indices) {
  const auto rank = static_cast<int64_t>(data.size());
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(attrs.GetInt("axis", 0), rank, "Gather"));
  GatherPlan plan;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = data[static_cast<size_t>(d)];
    if (d < axis) plan.outer *= size;
    if (d == axis) plan.axis_size = size;
    if (d > axis) plan.inner *= size;
    if (d == axis)
      plan.output.insert(plan.output.end(), indices.begin(), indices.end());
    else
      plan.output.push_back(size);
  }
  return plan;
}

// Indices with negatives wrapped, or an error for one out of range.
Expected<std::vector<int64_t>> ResolveIndices(const Tensor& indices, int64_t axis_size) {
  std::vector<int64_t> resolved = indices.ToInt64Vector();
  for (int64_t& i : resolved) {
    if (i < -axis_size || i >= axis_size) {
      return MakeError("Gather: index " + std::to_string(i) + " is out of range for a dim of " +
                       std::to_string(axis_size));
    }
    if (i < 0) i += axis_size;
  }
  return resolved;
}

Expected<ForwardResult> GatherForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor data, RequireTensor(args.inputs, 0, "Gather", "input"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "Gather", "input"));
  MEMPLAN_TRY(GatherPlan plan,
              PlanGather(AttributesOf(args.attributes), data.shape(), indices.shape()));
  MEMPLAN_TRY(std::vector<int64_t> index, ResolveIndices(indices, plan.axis_size));
  Tensor y = NewOutput(ctx, plan.output, data.dtype());
  const auto count = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < plan.outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      const float* src =
          data.data() + (o * plan.axis_size + index[static_cast<size_t>(j)]) * plan.inner;
      float* dst = y.mutable_data() + (o * count + j) * plan.inner;
      std::copy(src, src + plan.inner, dst);
    }
  }
  return SingleOutput(std::move(y));
}

Expected<InputGradients> GatherBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Gather", "output gradient"));
  MEMPLAN_TRY(Tensor indices, RequireTensor(args.inputs, 1, "Gather", "saved indices"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "Gather"));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(GatherPlan plan,
              PlanGather(AttributesOf(args.attributes), args.input_shapes[0], indices.shape()));
  MEMPLAN_TRY(std::vector<int64_t> index, ResolveIndices(indices, plan.axis_size));
  Tensor dx = NewInputGradient(ctx, args, 0);
  const auto count = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < plan.outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      const float* src = dy.data() + (o * count + j) * plan.inner;
      float* dst =
          dx.mutable_data() + (o * plan.axis_size + index[static_cast<size_t>(j)]) * plan.inner;
      for (int64_t k = 0; k < plan.inner; ++k) dst[k] += src[k];
    }
  }
  RoundToOwnDType(dx);
  grads[0] = std::move(dx);
  return grads;
}

}  // namespace

void RegisterGatherKernels(KernelRegistry& registry) {
  registry.Register("Gather", &GatherForward, &GatherBackward);
}

}  // namespace memplan
