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

}  // namespace

void RegisterMaskingKernels(KernelRegistry& registry) {
  registry.Register("Trilu", &TriluForward, &TriluBackward);
}

}  // namespace memplan
