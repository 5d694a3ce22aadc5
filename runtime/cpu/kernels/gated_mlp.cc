// Liger's gated MLP products (graph/ops/gated_mlp_ops.h): c = act(a) * b over two tensors of one
// shape, act SiLU (memplan:SwiGlu, LigerSiLUMulFunction) or the tanh GELU (memplan:GeGlu,
// LigerGELUMulFunction). Backward from the saved a and b alone, recomputing act(a) as Liger's
// swiglu_backward and geglu_backward do: da = dc * b * act'(a), db = dc * act(a).

#include <string>
#include <string_view>

#include "graph/ops/gated_mlp_ops.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/activation_math.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

struct SiluGate {
  static constexpr const char* kOpType = swiglu::kOpType;
  static constexpr const char* kDomain = swiglu::kDomain;
  static float Forward(float a) { return activation_math::Swish(1.0f, a); }
  static float Derivative(float a) { return activation_math::SwishDerivative(1.0f, a); }
};

struct TanhGeluGate {
  static constexpr const char* kOpType = geglu::kOpType;
  static constexpr const char* kDomain = geglu::kDomain;
  static float Forward(float a) { return activation_math::Gelu(/*tanh_approximation=*/true, a); }
  static float Derivative(float a) {
    return activation_math::GeluDerivative(/*tanh_approximation=*/true, a);
  }
};

// Liger's kernels read a and b row by row at one stride: one shape, no broadcasting.
template <class Gate>
Expected<std::pair<Tensor, Tensor>> GateAndUp(const std::vector<Tensor>& inputs) {
  MEMPLAN_TRY(Tensor a, RequireTensor(inputs, 0, Gate::kOpType, "gate input a"));
  MEMPLAN_TRY(Tensor b, RequireTensor(inputs, 1, Gate::kOpType, "up input b"));
  if (a.shape() != b.shape())
    return MakeError(std::string(Gate::kOpType) + ": a and b must have one shape");
  return std::make_pair(std::move(a), std::move(b));
}

template <class Gate>
Expected<ForwardResult> GatedForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(auto ab, GateAndUp<Gate>(args.inputs));
  const auto& [a, b] = ab;
  Tensor c = NewOverwrittenOutput(ctx, a.shape(), a.dtype());
  const float* pa = a.data();
  const float* pb = b.data();
  float* pc = c.mutable_data();
  for (int64_t i = 0; i < a.numel(); ++i) pc[i] = Gate::Forward(pa[i]) * pb[i];
  return RoundedSingleOutput(std::move(c));
}

template <class Gate>
Expected<InputGradients> GatedBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dc, RequireTensor(args.grad_outputs, 0, Gate::kOpType, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, Gate::kOpType));
  if (!args.NeedsGrad(0) && !args.NeedsGrad(1)) return grads;
  MEMPLAN_TRY(auto ab, GateAndUp<Gate>(args.inputs));
  const auto& [a, b] = ab;
  if (dc.numel() != a.numel())
    return MakeError(std::string(Gate::kOpType) + ": output gradient has the wrong size");
  const float* pa = a.data();
  const float* pb = b.data();
  const float* g = dc.data();
  if (args.NeedsGrad(0)) {
    Tensor da = NewOverwrittenInputGradient(ctx, args, 0);
    float* out = da.mutable_data();
    for (int64_t i = 0; i < a.numel(); ++i) out[i] = g[i] * pb[i] * Gate::Derivative(pa[i]);
    PutRoundedGradient(grads, 0, std::move(da));
  }
  if (args.NeedsGrad(1)) {
    Tensor db = NewOverwrittenInputGradient(ctx, args, 1);
    float* out = db.mutable_data();
    for (int64_t i = 0; i < a.numel(); ++i) out[i] = g[i] * Gate::Forward(pa[i]);
    PutRoundedGradient(grads, 1, std::move(db));
  }
  return grads;
}

template <class Gate>
void RegisterGate(KernelRegistry& registry) {
  registry.Register(Gate::kOpType, &GatedForward<Gate>, &GatedBackward<Gate>, Gate::kDomain);
}

}  // namespace

void RegisterGatedMlpKernels(KernelRegistry& registry) {
  RegisterGate<SiluGate>(registry);
  RegisterGate<TanhGeluGate>(registry);
}

}  // namespace memplan
