// Softmax and LogSoftmax along one axis (opset-13 semantics; the default axis is -1). Backward
// reads the output, as PyTorch's _softmax_backward_data does.
// Opsets < 13 instead coerce the input to 2-D at `axis` (default 1). The two agree when `axis`
// is the last dim; for other axes an old-opset model needs its own handling (not done here).

#include <cmath>
#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

// [outer, length, inner] view of the input around `axis`.
struct AxisLayout {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t Offset(int64_t o, int64_t i) const { return o * length * inner + i; }  // element 0
};

Expected<AxisLayout> AxisLayoutOf(const Attributes& attrs, const TensorShape& x,
                                  std::string_view op) {
  const auto rank = static_cast<int64_t>(x.size());
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(attrs.GetInt("axis", -1), rank, op));
  AxisLayout layout;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t size = x[static_cast<size_t>(d)];
    if (d < axis) layout.outer *= size;
    if (d == axis) layout.length = size;
    if (d > axis) layout.inner *= size;
  }
  return layout;
}

template <bool kLog>
Expected<ForwardResult> SoftmaxForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr std::string_view kOp = kLog ? "LogSoftmax" : "Softmax";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(AxisLayout layout, AxisLayoutOf(AttributesOf(args.attributes), x.shape(), kOp));
  Tensor y = NewOutput(ctx, x.shape(), x.dtype());
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t i = 0; i < layout.inner; ++i) {
      const float* p = x.data() + layout.Offset(o, i);
      float* q = y.mutable_data() + layout.Offset(o, i);
      const int64_t step = layout.inner;
      float max = -INFINITY;
      for (int64_t j = 0; j < layout.length; ++j) max = std::max(max, p[j * step]);
      double sum = 0.0;
      for (int64_t j = 0; j < layout.length; ++j) sum += std::exp(p[j * step] - max);
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < layout.length; ++j) {
        const double shifted = p[j * step] - max;
        q[j * step] = static_cast<float>(kLog ? shifted - log_sum : std::exp(shifted) / sum);
      }
    }
  }
  return RoundedSingleOutput(std::move(y));
}

// Softmax: dx = y (dy - sum(dy y)); LogSoftmax: dx = dy - exp(y) sum(dy).
template <bool kLog>
Expected<InputGradients> SoftmaxBackward(const KernelContext& ctx, const BackwardArgs& args) {
  constexpr std::string_view kOp = kLog ? "LogSoftmax" : "Softmax";
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(Tensor y, RequireTensor(args.outputs, 0, kOp, "saved output"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, kOp));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(AxisLayout layout, AxisLayoutOf(AttributesOf(args.attributes), y.shape(), kOp));
  Tensor dx = NewInputGradient(ctx, args, 0);
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t i = 0; i < layout.inner; ++i) {
      const int64_t base = layout.Offset(o, i), step = layout.inner;
      const float* g = dy.data() + base;
      const float* p = y.data() + base;
      float* out = dx.mutable_data() + base;
      double sum = 0.0;
      for (int64_t j = 0; j < layout.length; ++j) {
        sum += kLog ? g[j * step] : static_cast<double>(g[j * step]) * p[j * step];
      }
      for (int64_t j = 0; j < layout.length; ++j) {
        const double v = kLog ? g[j * step] - std::exp(static_cast<double>(p[j * step])) * sum
                              : p[j * step] * (g[j * step] - sum);
        out[j * step] = static_cast<float>(v);
      }
    }
  }
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry& registry) {
  registry.Register("Softmax", &SoftmaxForward<false>, &SoftmaxBackward<false>);
  registry.Register("LogSoftmax", &SoftmaxForward<true>, &SoftmaxBackward<true>);
}

}  // namespace memplan
