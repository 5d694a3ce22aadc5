// ReduceMean, ReduceSum, ReduceMax and the others exporters write (ReduceMin, ReduceL1, ReduceL2,
// ReduceSumSquare, ReduceLogSumExp, ReduceProd; memplan:MaxDim, memplan:Variance) over `axes`
// (attribute in older opsets, input 1 from ReduceSum-13 / ReduceMean-18), keepdims,
// noop_with_empty_axes. Backward broadcasts the gradient back.

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/ops/max_dim_op.h"
#include "graph/ops/variance_op.h"
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

// amax's and amin's backward (scale_grad_by_count): the gradient split evenly among the elements
// equal to the reduced extremum, which the saved output holds.
Expected<InputGradients> ExtremumBackward(const KernelContext& ctx, const BackwardArgs& args,
                                          const char* op) {
  return FirstInputBackward(args, 1, op, [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, op, "saved input"));
    MEMPLAN_TRY(Tensor y, RequireTensor(args.outputs, 0, op, "saved output"));
    MEMPLAN_TRY(ReducePlan plan,
                PlanReduce(op, AttributesOf(args.attributes), args.inputs, x.shape()));
    if (NumElements(plan.kept) != dy.numel() || y.numel() != dy.numel())
      return MakeError(std::string(op) + ": output gradient has the wrong size");
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

Expected<InputGradients> ReduceMaxBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return ExtremumBackward(ctx, args, "ReduceMax");
}

// The other reductions exporters write (torch.norm / F.normalize -> ReduceL2, ReduceL1; amin ->
// ReduceMin; logsumexp -> ReduceLogSumExp; prod -> ReduceProd; ReduceSumSquare): forward folds
// each output's elements in double, backward maps each input element from (x, y, dy) as the
// derivatives.yaml formula, reading the saved self and result.
struct FoldedReduce {
  ReducePlan plan;
  std::vector<double> values;  // one per output element, in kept-shape order
  std::array<std::vector<int64_t>, 1> strides;
};

template <class Fold>
Expected<FoldedReduce> FoldReduce(std::string_view op, const Attributes& attrs,
                                  const std::vector<Tensor>& inputs, const Tensor& x, double init,
                                  Fold fold) {
  MEMPLAN_TRY(ReducePlan plan, PlanReduce(op, attrs, inputs, x.shape()));
  FoldedReduce r{plan,
                 std::vector<double>(static_cast<size_t>(NumElements(plan.kept)), init),
                 {BroadcastStrides(plan.kept, x.shape())}};
  ForEachBroadcastIndex(x.shape(), r.strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    double& acc = r.values[static_cast<size_t>(off[0])];
    acc = fold(acc, static_cast<double>(x.data()[i]));
  });
  return r;
}

struct ReduceMinOp {
  static constexpr const char* kName = "ReduceMin";
  static constexpr double kInit = std::numeric_limits<double>::infinity();
  static double Fold(double acc, double v) { return std::isnan(v) || v < acc ? v : acc; }
  static double Finish(double acc) { return acc; }
};
struct ReduceL1Op {
  static constexpr const char* kName = "ReduceL1";
  static constexpr double kInit = 0.0;
  static double Fold(double acc, double v) { return acc + std::fabs(v); }
  static double Finish(double acc) { return acc; }
  // linalg_vector_norm_backward, ord 1: grad * self.sgn().
  static double Grad(double x, double, double dy) { return x > 0 ? dy : (x < 0 ? -dy : 0.0); }
};
struct ReduceL2Op {
  static constexpr const char* kName = "ReduceL2";
  static constexpr double kInit = 0.0;
  static double Fold(double acc, double v) { return acc + v * v; }
  static double Finish(double acc) { return std::sqrt(acc); }
  // linalg_vector_norm_backward, ord 2: grad * self / result, 0 where the norm is 0.
  static double Grad(double x, double y, double dy) { return y == 0.0 ? 0.0 : dy * x / y; }
};
struct ReduceSumSquareOp {
  static constexpr const char* kName = "ReduceSumSquare";
  static constexpr double kInit = 0.0;
  static double Fold(double acc, double v) { return acc + v * v; }
  static double Finish(double acc) { return acc; }
  static double Grad(double x, double, double dy) { return 2.0 * x * dy; }
  // The registry saves self only (graph/ops/reduction_ops.cc): the result is not kept.
  static constexpr bool kReadsResult = false;
};
// Sums exp(v - shift) with no shift known in advance: folds as a running log-sum-exp.
struct ReduceLogSumExpOp {
  static constexpr const char* kName = "ReduceLogSumExp";
  static constexpr double kInit = -std::numeric_limits<double>::infinity();
  static double Fold(double acc, double v) {
    const double hi = std::max(acc, v);
    if (std::isinf(hi) && hi < 0) return hi;
    return hi + std::log(std::exp(acc - hi) + std::exp(v - hi));
  }
  static double Finish(double acc) { return acc; }
  // logsumexp_backward: grad * exp(self - result).
  static double Grad(double x, double y, double dy) { return dy * std::exp(x - y); }
};

// Forward of the smooth reductions above and of ReduceMin (whose backward is amin's).
template <class Op>
Expected<ForwardResult> FoldedReduceForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, Op::kName, "input"));
  MEMPLAN_TRY(FoldedReduce r, FoldReduce(Op::kName, AttributesOf(args.attributes), args.inputs, x,
                                         Op::kInit, &Op::Fold));
  Tensor y = NewOverwrittenOutput(ctx, r.plan.output, x.dtype());
  for (size_t i = 0; i < r.values.size(); ++i)
    y.mutable_data()[i] = static_cast<float>(Op::Finish(r.values[i]));
  return RoundedSingleOutput(std::move(y));
}

// Whether Op's gradient reads the forward result (saved as output 0); true unless it says not.
template <class Op>
constexpr bool ReadsResult() {
  if constexpr (requires { Op::kReadsResult; })
    return Op::kReadsResult;
  else
    return true;
}

template <class Op>
Expected<InputGradients> FoldedReduceBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, Op::kName, [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, Op::kName, "saved input"));
    Tensor y;
    if constexpr (ReadsResult<Op>()) {
      MEMPLAN_TRY(y, RequireTensor(args.outputs, 0, Op::kName, "saved output"));
    }
    MEMPLAN_TRY(ReducePlan plan,
                PlanReduce(Op::kName, AttributesOf(args.attributes), args.inputs, x.shape()));
    if (NumElements(plan.kept) != dy.numel() || (ReadsResult<Op>() && y.numel() != dy.numel()))
      return MakeError(std::string(Op::kName) + ": output gradient has the wrong size");
    const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
      const double result = ReadsResult<Op>() ? static_cast<double>(y.data()[off[0]]) : 0.0;
      dx.mutable_data()[i] =
          static_cast<float>(Op::Grad(x.data()[i], result, static_cast<double>(dy.data()[off[0]])));
    });
    return dx;
  });
}

Expected<InputGradients> ReduceMinBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return ExtremumBackward(ctx, args, "ReduceMin");
}

// ReduceProd: prod_backward(grad, self, result): grad * result / self where self != 0; with one
// zero in the slice, that element gets the product of the others; with two or more, all get 0.
Expected<ForwardResult> ReduceProdForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "ReduceProd", "input"));
  MEMPLAN_TRY(FoldedReduce r, FoldReduce("ReduceProd", AttributesOf(args.attributes), args.inputs,
                                         x, 1.0, [](double acc, double v) { return acc * v; }));
  Tensor y = NewOverwrittenOutput(ctx, r.plan.output, x.dtype());
  for (size_t i = 0; i < r.values.size(); ++i)
    y.mutable_data()[i] = static_cast<float>(r.values[i]);
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> ReduceProdBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "ReduceProd", [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "ReduceProd", "saved input"));
    const Attributes& attrs = AttributesOf(args.attributes);
    MEMPLAN_TRY(FoldedReduce zeros,
                FoldReduce("ReduceProd", attrs, args.inputs, x, 0.0,
                           [](double acc, double v) { return acc + (v == 0); }));
    MEMPLAN_TRY(FoldedReduce others,
                FoldReduce("ReduceProd", attrs, args.inputs, x, 1.0,
                           [](double acc, double v) { return v == 0 ? acc : acc * v; }));
    if (static_cast<int64_t>(zeros.values.size()) != dy.numel())
      return MakeError("ReduceProd: output gradient has the wrong size");
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    ForEachBroadcastIndex(x.shape(), zeros.strides,
                          [&](int64_t i, const std::array<int64_t, 1>& off) {
                            const auto o = static_cast<size_t>(off[0]);
                            const double v = x.data()[i];
                            const double g = dy.data()[off[0]];
                            double d = 0.0;
                            if (zeros.values[o] == 0) d = g * others.values[o] / v;
                            if (zeros.values[o] == 1 && v == 0) d = g * others.values[o];
                            dx.mutable_data()[i] = static_cast<float>(d);
                          });
    return dx;
  });
}

// A one-axis reduction as loops: `outer` rows before the axis, `length` along it, `inner` after.
struct AxisLoops {
  int64_t outer = 1;
  int64_t length = 1;
  int64_t inner = 1;
};

Expected<AxisLoops> LoopsOver(const Attributes& attrs, const TensorShape& x, std::string_view op) {
  const IntList axes = IntsFromInputOrAttribute({}, 1, attrs, "axes");
  if (axes.values.size() != 1) return MakeError(std::string(op) + ": needs exactly one axis");
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(axes.values[0], static_cast<int64_t>(x.size()), op));
  AxisLoops loops;
  for (size_t d = 0; d < x.size(); ++d) {
    const auto a = static_cast<int64_t>(d);
    if (a < axis) loops.outer *= x[d];
    if (a == axis) loops.length = x[d];
    if (a > axis) loops.inner *= x[d];
  }
  return loops;
}

// memplan:MaxDim (torch.max(x, dim)): the largest value along the axis and its first index (NaN
// wins, as max.dim propagates it); the indices are output 1 when declared, else the saved extra.
Expected<ForwardResult> MaxDimForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = max_dim::kOpType;
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  MEMPLAN_TRY(ReducePlan plan, PlanReduce(kOp, attrs, {}, x.shape()));
  MEMPLAN_TRY(AxisLoops loops, LoopsOver(attrs, x.shape(), kOp));
  if (loops.length == 0) return MakeError("MaxDim: reducing an empty axis has no maximum");
  Tensor y = NewOverwrittenOutput(ctx, plan.output, x.dtype());
  Tensor indices = args.num_outputs > 1 ? NewOutput(ctx, plan.output, DType::kInt64)
                                        : NewExtra(ctx, plan.output, DType::kInt64);
  for (int64_t o = 0; o < loops.outer; ++o) {
    for (int64_t i = 0; i < loops.inner; ++i) {
      const float* row = x.data() + o * loops.length * loops.inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < loops.length && !std::isnan(row[best * loops.inner]); ++k) {
        const float v = row[k * loops.inner];
        if (v > row[best * loops.inner] || std::isnan(v)) best = k;
      }
      y.mutable_data()[o * loops.inner + i] = row[best * loops.inner];
      indices.mutable_data()[o * loops.inner + i] = static_cast<float>(best);
    }
  }
  return OutputWithSavedExtras(std::move(y), args.num_outputs,
                               {{max_dim::kIndices, std::move(indices)}});
}

// max.dim's backward: the whole gradient to the selected element (value_selecting_reduction).
Expected<InputGradients> MaxDimBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = max_dim::kOpType;
  return FirstInputBackward(args, 1, kOp, [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor indices, SavedOutputOrExtra(args, 1, max_dim::kIndices, kOp));
    MEMPLAN_TRY(AxisLoops loops,
                LoopsOver(AttributesOf(args.attributes), args.input_shapes[0], kOp));
    if (dy.numel() != loops.outer * loops.inner || indices.numel() != dy.numel())
      return MakeError("MaxDim: output gradient has the wrong size");
    Tensor dx = NewInputGradient(ctx, args, 0);
    for (int64_t o = 0; o < loops.outer; ++o) {
      for (int64_t i = 0; i < loops.inner; ++i) {
        const int64_t at = o * loops.inner + i;
        const auto k = static_cast<int64_t>(indices.data()[at]);
        if (k < 0 || k >= loops.length) return MakeError("MaxDim: saved index out of range");
        dx.mutable_data()[(o * loops.length + k) * loops.inner + i] = dy.data()[at];
      }
    }
    return dx;
  });
}

// The mean over the axes of every input element, broadcast back: sums in double.
std::vector<double> KeptMeans(const Tensor& x, const ReducePlan& plan) {
  std::vector<double> sums(static_cast<size_t>(NumElements(plan.kept)), 0.0);
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
  ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    sums[static_cast<size_t>(off[0])] += x.data()[i];
  });
  for (double& s : sums) s /= static_cast<double>(plan.count);
  return sums;
}

// memplan:Variance (torch.var, correction 0): mean((x - mean(x))^2) over the axes.
Expected<ForwardResult> VarianceForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = variance::kOpType;
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(ReducePlan plan, PlanReduce(kOp, AttributesOf(args.attributes), {}, x.shape()));
  if (plan.count == 0) return MakeError("Variance: reducing an empty axis has no variance");
  const std::vector<double> means = KeptMeans(x, plan);
  std::vector<double> squares(means.size(), 0.0);
  const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
  ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
    const double d = x.data()[i] - means[static_cast<size_t>(off[0])];
    squares[static_cast<size_t>(off[0])] += d * d;
  });
  Tensor y = NewOutput(ctx, plan.output, x.dtype());
  for (size_t i = 0; i < squares.size(); ++i)
    y.mutable_data()[i] = static_cast<float>(squares[i] / static_cast<double>(plan.count));
  return RoundedSingleOutput(std::move(y));
}

// var_backward: dx = dy * 2 (x - mean) / N, from the saved input alone.
Expected<InputGradients> VarianceBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = variance::kOpType;
  return FirstInputBackward(args, 1, kOp, [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "saved input"));
    MEMPLAN_TRY(ReducePlan plan, PlanReduce(kOp, AttributesOf(args.attributes), {}, x.shape()));
    if (NumElements(plan.kept) != dy.numel())
      return MakeError("Variance: output gradient has the wrong size");
    const std::vector<double> means = KeptMeans(x, plan);
    const std::array<std::vector<int64_t>, 1> strides = {BroadcastStrides(plan.kept, x.shape())};
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    const double scale = 2.0 / static_cast<double>(plan.count);
    ForEachBroadcastIndex(x.shape(), strides, [&](int64_t i, const std::array<int64_t, 1>& off) {
      const auto o = static_cast<size_t>(off[0]);
      dx.mutable_data()[i] = static_cast<float>(dy.data()[o] * scale * (x.data()[i] - means[o]));
    });
    return dx;
  });
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& registry) {
  registry.Register("ReduceMean", &ReduceForward<true>, &ReduceBackward<true>);
  registry.Register("ReduceSum", &ReduceForward<false>, &ReduceBackward<false>);
  registry.Register("ReduceMax", &ReduceMaxForward, &ReduceMaxBackward);
  registry.Register("ReduceMin", &FoldedReduceForward<ReduceMinOp>, &ReduceMinBackward);
  registry.Register("ReduceL1", &FoldedReduceForward<ReduceL1Op>,
                    &FoldedReduceBackward<ReduceL1Op>);
  registry.Register("ReduceL2", &FoldedReduceForward<ReduceL2Op>,
                    &FoldedReduceBackward<ReduceL2Op>);
  registry.Register("ReduceSumSquare", &FoldedReduceForward<ReduceSumSquareOp>,
                    &FoldedReduceBackward<ReduceSumSquareOp>);
  registry.Register("ReduceLogSumExp", &FoldedReduceForward<ReduceLogSumExpOp>,
                    &FoldedReduceBackward<ReduceLogSumExpOp>);
  registry.Register("ReduceProd", &ReduceProdForward, &ReduceProdBackward);
  registry.Register(max_dim::kOpType, &MaxDimForward, &MaxDimBackward, max_dim::kDomain);
  registry.Register(variance::kOpType, &VarianceForward, &VarianceBackward, variance::kDomain);
}

}  // namespace memplan
