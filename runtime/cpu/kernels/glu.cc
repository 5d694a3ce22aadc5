// memplan:Glu (F.glu): y = a * sigmoid(b), a and b the two halves of x along `axis`. Backward from
// the saved input alone, as glu_backward: da = dy * sigmoid(b), db = dy * a * s * (1 - s).

#include <cmath>
#include <string_view>

#include "graph/ops/glu_op.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

constexpr std::string_view kOp = glu::kOpType;

// x as `outer` blocks of [a (half rows of `inner`), b (the same)].
struct GluLoops {
  int64_t outer = 1;
  int64_t half = 1;  // a's (and b's) length along the axis, times `inner`
  TensorShape output;
};

Expected<GluLoops> PlanGlu(const Attributes& attrs, const TensorShape& x) {
  MEMPLAN_TRY(int64_t axis,
              NormalizeAxis(attrs.GetInt(glu::kAxis, -1), static_cast<int64_t>(x.size()), kOp));
  const auto a = static_cast<size_t>(axis);
  if (x[a] % 2 != 0) return MakeError("Glu: the halved axis has an odd length");
  GluLoops loops;
  loops.output = x;
  loops.output[a] = x[a] / 2;
  int64_t inner = 1;
  for (size_t d = 0; d < x.size(); ++d) {
    if (d < a) loops.outer *= x[d];
    if (d > a) inner *= x[d];
  }
  loops.half = loops.output[a] * inner;
  return loops;
}

float Sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

Expected<ForwardResult> GluForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "input"));
  MEMPLAN_TRY(GluLoops loops, PlanGlu(AttributesOf(args.attributes), x.shape()));
  Tensor y = NewOverwrittenOutput(ctx, loops.output, x.dtype());
  for (int64_t o = 0; o < loops.outer; ++o) {
    const float* a = x.data() + o * 2 * loops.half;
    const float* b = a + loops.half;
    float* out = y.mutable_data() + o * loops.half;
    for (int64_t i = 0; i < loops.half; ++i) out[i] = a[i] * Sigmoid(b[i]);
  }
  return RoundedSingleOutput(std::move(y));
}

Expected<InputGradients> GluBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, kOp, [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kOp, "saved input"));
    MEMPLAN_TRY(GluLoops loops, PlanGlu(AttributesOf(args.attributes), x.shape()));
    if (dy.numel() != loops.outer * loops.half)
      return MakeError("Glu: output gradient has the wrong size");
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    for (int64_t o = 0; o < loops.outer; ++o) {
      const float* a = x.data() + o * 2 * loops.half;
      const float* b = a + loops.half;
      const float* g = dy.data() + o * loops.half;
      float* da = dx.mutable_data() + o * 2 * loops.half;
      float* db = da + loops.half;
      for (int64_t i = 0; i < loops.half; ++i) {
        const float s = Sigmoid(b[i]);
        da[i] = g[i] * s;
        db[i] = g[i] * a[i] * s * (1.0f - s);
      }
    }
    return dx;
  });
}

}  // namespace

void RegisterGluKernels(KernelRegistry& registry) {
  registry.Register(glu::kOpType, &GluForward, &GluBackward, glu::kDomain);
}

}  // namespace memplan
