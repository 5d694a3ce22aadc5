// ReduceMean, ReduceSum and ReduceMax over `axes` (attribute in older opsets, input 1 from
// ReduceSum-13 / ReduceMean-18), keepdims, noop_with_empty_axes. Backward broadcasts the gradient
// back.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

struct ReducePlan {
  TensorShape kept;    // input shape with reduced dims set to 1 (keepdims shape)
  TensorShape output;  // kept, or without the reduced dims when keepdims = 0
  int64_t count = 1;   // elements summed into each output
};

Expected<ReducePlan> PlanReduce(std::string_view op, const Attributes& attrs,
                                const std::vector<Tensor>& inputs, const TensorShape& x) {
  const IntList axes = IntsFromInputOrAttribute(inputs, 1, attrs, "axes");
  const bool keepdims = attrs.GetInt("keepdims", 1) != 0;
  const bool noop_if_empty = attrs.GetInt("noop_with_empty_axes", 0) != 0;
  const auto rank = static_cast<int64_t>(x.size());
  std::vector<bool> reduced(x.size(), false);
  if (axes.values.empty()) {
    if (!noop_if_empty) std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (int64_t axis : axes.values) {
      MEMPLAN_TRY(int64_t a, NormalizeAxis(axis, rank, op));
      reduced[static_cast<size_t>(a)] = true;
    }
  }
  ReducePlan plan;
  for (size_t d = 0; d < x.size(); ++d) {
    plan.kept.push_back(reduced[d] ? 1 : x[d]);
    if (reduced[d]) plan.count *= x[d];
    if (!reduced[d] || keepdims) plan.output.push_back(reduced[d] ? 1 : x[d]);
  }
  return plan;
}

template <bool kMean>
Expected<ForwardResult> ReduceForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = kMean ? "ReduceMean" : "ReduceSum";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(ReducePlan plan,
              PlanReduce(kOp, AttributesOf(args.attributes), args.inputs, x.shape()));
  // Sum in double into a scratch of the output's size, then round once into the output.
  std::vector<double> sums(static_cast<size_t>(NumElements(plan.kept)), 0.0);
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
  ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    sums[static_cast<size_t>(off[0])] += x.data()[i];
  });
  Tensor y = NewOutput(ctx, plan.output, x.dtype());
  const double divisor = kMean ? static_cast<double>(plan.count) : 1.0;
  for (size_t i = 0; i < sums.size(); ++i) {
    y.mutable_data()[i] = static_cast<float>(sums[i] / divisor);
  }
  return RoundedSingleOutput(std::move(y));
}

template <bool kMean>
Expected<InputGradients> ReduceBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = kMean ? "ReduceMean" : "ReduceSum";
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, kOp));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(ReducePlan plan,
              PlanReduce(kOp, AttributesOf(args.attributes), args.inputs, args.input_shapes[0]));
  if (NumElements(plan.kept) != dy.numel()) {
    return MakeError(std::string(kOp) + ": output gradient has the wrong size");
  }
  Tensor dx = NewInputGradient(ctx, args, 0);
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, dx.shape())};
  const float scale = kMean ? 1.0f / static_cast<float>(plan.count) : 1.0f;
  ForEachBroadcastIndex(dx.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    dx.mutable_data()[i] = dy.data()[off[0]] * scale;
  });
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

// ReduceMax (torch.amax): the largest value over the axes; NaN wins, as amax propagates it.
Expected<ForwardResult> ReduceMaxForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "ReduceMax", "input"));
  MEMPLAN_TRY(ReducePlan plan,
              PlanReduce("ReduceMax", AttributesOf(args.attributes), args.inputs, x.shape()));
  if (plan.count == 0) return MakeError("ReduceMax: reducing an empty axis has no maximum");
  std::vector<float> best(static_cast<size_t>(NumElements(plan.kept)),
                          -std::numeric_limits<float>::infinity());
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
  ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    float& b = best[static_cast<size_t>(off[0])];
    const float v = x.data()[i];
    if (v > b || std::isnan(v)) b = std::isnan(b) ? b : v;
  });
  Tensor y = NewOverwrittenOutput(ctx, plan.output, x.dtype());
  std::copy(best.begin(), best.end(), y.mutable_data());
  return SingleOutput(std::move(y));
}

// amax's backward: the gradient split evenly among the elements equal to the maximum
// (scale_grad_by_count).
Expected<InputGradients> ReduceMaxBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "ReduceMax", [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "ReduceMax", "saved input"));
    MEMPLAN_TRY(Tensor y, RequireTensor(args.outputs, 0, "ReduceMax", "saved output"));
    MEMPLAN_TRY(ReducePlan plan,
                PlanReduce("ReduceMax", AttributesOf(args.attributes), args.inputs, x.shape()));
    if (NumElements(plan.kept) != dy.numel() || y.numel() != dy.numel())
      return MakeError("ReduceMax: output gradient has the wrong size");
    const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
    std::vector<int64_t> ties(static_cast<size_t>(dy.numel()), 0);
    ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
      if (x.data()[i] == y.data()[off[0]]) ++ties[static_cast<size_t>(off[0])];
    });
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
      const auto o = static_cast<size_t>(off[0]);
      dx.mutable_data()[i] =
          x.data()[i] == y.data()[off[0]] ? dy.data()[off[0]] / static_cast<float>(ties[o]) : 0.0f;
    });
    return dx;
  });
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& registry) {
  registry.Register("ReduceMean", &ReduceForward<true>, &ReduceBackward<true>);
  registry.Register("ReduceSum", &ReduceForward<false>, &ReduceBackward<false>);
  registry.Register("ReduceMax", &ReduceMaxForward, &ReduceMaxBackward);
}

}  // namespace memplan
