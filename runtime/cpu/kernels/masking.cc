// Ops that build masks: Trilu(input, k?) keeps the upper (upper = 1, the default) or lower
// triangle of the last two axes, the diagonal shifted by k, and zeroes the rest (torch.triu /
// torch.tril; nn.Transformer's causal mask). Backward masks the gradient the same way
// (derivatives.yaml: grad.triu(k) / grad.tril(k)); nothing is saved but k.

#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

struct Triangle {
  bool upper = true;
  int64_t k = 0;
  bool Keeps(int64_t row, int64_t col) const { return upper ? col - row >= k : col - row <= k; }
};

// k from the optional input (a one-element integer tensor), upper from the attribute.
Expected<Triangle> TriangleOf(const Attributes* attributes, const std::vector<Tensor>& inputs) {
  Triangle t;
  t.upper = AttributesOf(attributes).GetInt("upper", 1) != 0;
  const Tensor k = OptionalTensor(inputs, 1);
  if (k.defined()) {
    if (k.numel() != 1) return MakeError("Trilu: k must hold one value");
    t.k = static_cast<int64_t>(k.data()[0]);
  }
  return t;
}

// out = in on the kept triangle of every [rows, cols] plane, 0 elsewhere.
Status MaskTriangle(const Tensor& in, Tensor& out, const Triangle& triangle) {
  if (in.rank() < 2) return MakeError("Trilu: the input must have rank >= 2");
  const int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  const float* src = in.data();
  float* dst = out.mutable_data();
  ParallelFor(in.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t col = i % cols, row = (i / cols) % rows;
      dst[i] = triangle.Keeps(row, col) ? src[i] : 0.0f;
    }
  });
  return OkStatus();
}

Expected<ForwardResult> TriluForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Trilu", "input"));
  MEMPLAN_TRY(Triangle triangle, TriangleOf(args.attributes, args.inputs));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  MEMPLAN_RETURN_IF_ERROR(MaskTriangle(x, y, triangle));
  return SingleOutput(std::move(y));
}

Expected<InputGradients> TriluBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Trilu", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Trilu"));
  if (!args.NeedsGrad(0)) return grads;
  // A k the node has must be read, not assumed 0.
  if (args.input_shapes.size() > 1 && !OptionalTensor(args.inputs, 1).defined())
    return MakeError("Trilu: backward needs its k input");
  MEMPLAN_TRY(Triangle triangle, TriangleOf(args.attributes, args.inputs));
  Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
  MEMPLAN_RETURN_IF_ERROR(MaskTriangle(dy, dx, triangle));
  grads[0] = std::move(dx);
  return grads;
}

// CumSum along `axis` (ONNX: input 1, a one-element integer tensor): out[i] = sum of in[j] for
// j <= i (j < i when exclusive), counting from the end when reverse.
struct RunningSum {
  int64_t axis = 0;
  bool exclusive = false;
  bool reverse = false;
};

Expected<RunningSum> RunningSumOf(const Attributes* attributes, const std::vector<Tensor>& inputs,
                                  int64_t rank) {
  const Tensor axis = OptionalTensor(inputs, 1);
  if (!axis.defined() || axis.numel() != 1) return MakeError("CumSum: axis must hold one value");
  RunningSum r;
  MEMPLAN_TRY(r.axis, NormalizeAxis(static_cast<int64_t>(axis.data()[0]), rank, "CumSum"));
  r.exclusive = AttributesOf(attributes).GetInt("exclusive", 0) != 0;
  r.reverse = AttributesOf(attributes).GetInt("reverse", 0) != 0;
  return r;
}

void AccumulateAlong(const Tensor& in, Tensor& out, const RunningSum& r) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < r.axis; ++d) outer *= in.dim(d);
  for (int64_t d = r.axis + 1; d < in.rank(); ++d) inner *= in.dim(d);
  const int64_t n = in.dim(r.axis);
  const float* src = in.data();
  float* dst = out.mutable_data();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      double sum = 0.0;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = r.reverse ? n - 1 - step : step;
        const int64_t at = (o * n + i) * inner + k;
        const double x = src[at];
        if (!r.exclusive) sum += x;
        dst[at] = static_cast<float>(sum);
        if (r.exclusive) sum += x;
      }
    }
  }
}

Expected<ForwardResult> CumSumForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "CumSum", "input"));
  MEMPLAN_TRY(RunningSum r, RunningSumOf(args.attributes, args.inputs, x.rank()));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  AccumulateAlong(x, y, r);
  return SingleOutput(std::move(y));
}

// dx[j] = sum of dy[i] over the i whose sums include x[j]: the running sum the other way.
Expected<InputGradients> CumSumBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "CumSum", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, "CumSum"));
  if (!args.NeedsGrad(0)) return grads;
  MEMPLAN_TRY(RunningSum r, RunningSumOf(args.attributes, args.inputs, dy.rank()));
  r.reverse = !r.reverse;
  Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
  AccumulateAlong(dy, dx, r);
  grads[0] = std::move(dx);
  return grads;
}

}  // namespace

void RegisterMaskingKernels(KernelRegistry& registry) {
  registry.Register("Trilu", &TriluForward, &TriluBackward);
  registry.Register("CumSum", &CumSumForward, &CumSumBackward);
}

}  // namespace memplan
