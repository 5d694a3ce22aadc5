// memplan:SwiGlu (Liger's LigerSiLUMulFunction): c = silu(a) * b over two tensors of one shape.
// Backward from the saved a and b alone, recomputing the sigmoid as Liger's swiglu_backward does:
// da = dc * b * s * (1 + a * (1 - s)), db = dc * a * s, with s = sigmoid(a).

#include <cmath>
#include <string_view>

#include "graph/ops/swiglu_op.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

constexpr std::string_view kOp = swiglu::kOpType;

float Sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// Liger's kernel reads a and b row by row at one stride: one shape, no broadcasting.
Expected<std::pair<Tensor, Tensor>> GateAndUp(const std::vector<Tensor>& inputs) {
  MEMPLAN_TRY(Tensor a, RequireTensor(inputs, 0, kOp, "gate input a"));
  MEMPLAN_TRY(Tensor b, RequireTensor(inputs, 1, kOp, "up input b"));
  if (a.shape() != b.shape()) return MakeError("SwiGlu: a and b must have one shape");
  return std::make_pair(std::move(a), std::move(b));
}

Expected<ForwardResult> SwiGluForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(auto ab, GateAndUp(args.inputs));
  const auto& [a, b] = ab;
  Tensor c = NewOverwrittenOutput(ctx, a.shape(), a.dtype());
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.mutable_data();
  for (int64_t i = 0; i < a.numel(); ++i) pc[i] = pa[i] * Sigmoid(pa[i]) * pb[i];
  return RoundedSingleOutput(std::move(c));
}

Expected<InputGradients> SwiGluBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dc, RequireTensor(args.grad_outputs, 0, kOp, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, kOp));
  if (!args.NeedsGrad(0) && !args.NeedsGrad(1)) return grads;
  MEMPLAN_TRY(auto ab, GateAndUp(args.inputs));
  const auto& [a, b] = ab;
  if (dc.numel() != a.numel()) return MakeError("SwiGlu: output gradient has the wrong size");
  const float* pa = a.data();
  const float* pb = b.data();
  const float* g = dc.data();
  if (args.NeedsGrad(0)) {
    Tensor da = NewOverwrittenInputGradient(ctx, args, 0);
    float* out = da.mutable_data();
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float s = Sigmoid(pa[i]);
      out[i] = g[i] * pb[i] * s * (1.0f + pa[i] * (1.0f - s));
    }
    PutRoundedGradient(grads, 0, std::move(da));
  }
  if (args.NeedsGrad(1)) {
    Tensor db = NewOverwrittenInputGradient(ctx, args, 1);
    float* out = db.mutable_data();
    for (int64_t i = 0; i < a.numel(); ++i) out[i] = g[i] * pa[i] * Sigmoid(pa[i]);
    PutRoundedGradient(grads, 1, std::move(db));
  }
  return grads;
}

}  // namespace

void RegisterSwiGluKernels(KernelRegistry& registry) {
  registry.Register(swiglu::kOpType, &SwiGluForward, &SwiGluBackward, swiglu::kDomain);
}

}  // namespace memplan
