// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual) with numpy broadcasting, and
// And, Or, Xor, Not, IsNaN, IsInf: boolean outputs (1 or 0), no gradient (derivatives.yaml: not
// differentiable). Exports build attention masks with them (GPT's causal mask by Equal; Swin's
// shifted-window mask by Not); on constants the executor folds them through these kernels.

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"

namespace memplan {
namespace {

struct EqualOp {
  static constexpr const char* kName = "Equal";
  static bool Holds(float a, float b) { return a == b; }
};
struct LessOp {
  static constexpr const char* kName = "Less";
  static bool Holds(float a, float b) { return a < b; }
};
struct GreaterOp {
  static constexpr const char* kName = "Greater";
  static bool Holds(float a, float b) { return a > b; }
};
struct LessOrEqualOp {
  static constexpr const char* kName = "LessOrEqual";
  static bool Holds(float a, float b) { return a <= b; }
};
struct GreaterOrEqualOp {
  static constexpr const char* kName = "GreaterOrEqual";
  static bool Holds(float a, float b) { return a >= b; }
};

struct AndOp {
  static constexpr const char* kName = "And";
  static bool Holds(float a, float b) { return a != 0.0f && b != 0.0f; }
};
struct OrOp {
  static constexpr const char* kName = "Or";
  static bool Holds(float a, float b) { return a != 0.0f || b != 0.0f; }
};
struct XorOp {
  static constexpr const char* kName = "Xor";
  static bool Holds(float a, float b) { return (a != 0.0f) != (b != 0.0f); }
};

template <class Op>
Expected<ForwardResult> ComparisonForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor a, RequireTensor(args.inputs, 0, Op::kName, "input"));
  MEMPLAN_TRY(Tensor b, RequireTensor(args.inputs, 1, Op::kName, "input"));
  MEMPLAN_TRY(TensorShape shape, BroadcastShapes(a.shape(), b.shape(), Op::kName));
  Tensor y = NewOverwrittenOutput(ctx, shape, DType::kBool);
  const std::array<std::vector<int64_t>, 2> strides{BroadcastStrides(a.shape(), shape),
                                                    BroadcastStrides(b.shape(), shape)};
  float* out = y.mutable_data();
  ForEachBroadcastIndex<2>(shape, strides, [&](int64_t i, const std::array<int64_t, 2>& o) {
    out[i] = Op::Holds(a.data()[o[0]], b.data()[o[1]]) ? 1.0f : 0.0f;
  });
  return SingleOutput(std::move(y));
}

Expected<ForwardResult> NotForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Not", "input"));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), DType::kBool);
  for (int64_t i = 0; i < x.numel(); ++i) y.mutable_data()[i] = x.data()[i] != 0.0f ? 0.0f : 1.0f;
  return SingleOutput(std::move(y));
}

// IsNaN, IsInf (detect_positive / detect_negative both 1 by default).
template <bool kNan>
Expected<ForwardResult> ElementTestForward(const KernelContext& ctx, const ForwardArgs& args) {
  constexpr const char* kName = kNan ? "IsNaN" : "IsInf";
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, kName, "input"));
  const Attributes& attrs = AttributesOf(args.attributes);
  const bool positive = attrs.GetInt("detect_positive", 1) != 0;
  const bool negative = attrs.GetInt("detect_negative", 1) != 0;
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), DType::kBool);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data()[i];
    const bool holds =
        kNan ? std::isnan(v) : std::isinf(v) && ((v > 0.0f && positive) || (v < 0.0f && negative));
    y.mutable_data()[i] = holds ? 1.0f : 0.0f;
  }
  return SingleOutput(std::move(y));
}

// Registers each of `Ops` under its kName, in order.
template <class... Ops>
void RegisterComparison(KernelRegistry& registry) {
  (registry.Register(Ops::kName, &ComparisonForward<Ops>, /*backward=*/nullptr), ...);
}

}  // namespace

void RegisterLogicKernels(KernelRegistry& registry) {
  RegisterComparison<EqualOp, LessOp, GreaterOp, LessOrEqualOp, GreaterOrEqualOp>(registry);
  RegisterComparison<AndOp, OrOp, XorOp>(registry);
  registry.Register("Not", &NotForward, /*backward=*/nullptr);
  registry.Register("IsNaN", &ElementTestForward<true>, /*backward=*/nullptr);
  registry.Register("IsInf", &ElementTestForward<false>, /*backward=*/nullptr);
}

}  // namespace memplan
