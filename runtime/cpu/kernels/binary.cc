// Elementwise binary ops with numpy broadcasting (Add, Sub, Mul, Div, Pow, Max, Min, Mod) and
// Where. Backward accumulates each element's contribution straight into the input-shaped gradient,
// which is the sum over broadcast dims without a full-size temporary.

#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/broadcast.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/parallel_for.h"

namespace memplan {
namespace {

// Which operands backward reads (PyTorch saves none for Add/Sub, the other operand for Mul,
// both for Div and Pow; Pow's exponent gradient also reads the result, recomputed here).
struct AddOp {
  static constexpr const char* kName = "Add";
  static constexpr bool kNeedsOperands = false;
  static float Forward(float a, float b) { return a + b; }
  static float GradA(float, float, float dy) { return dy; }
  static float GradB(float, float, float dy) { return dy; }
};
struct SubOp {
  static constexpr const char* kName = "Sub";
  static constexpr bool kNeedsOperands = false;
  static float Forward(float a, float b) { return a - b; }
  static float GradA(float, float, float dy) { return dy; }
  static float GradB(float, float, float dy) { return -dy; }
};
struct MulOp {
  static constexpr const char* kName = "Mul";
  static constexpr bool kNeedsOperands = true;
  static constexpr bool kGradAReadsA = false;  // besides b
  static constexpr bool kGradBReadsB = false;  // besides a
  static float Forward(float a, float b) { return a * b; }
  static float GradA(float, float b, float dy) { return dy * b; }
  static float GradB(float a, float, float dy) { return dy * a; }
};
struct DivOp {
  static constexpr const char* kName = "Div";
  static constexpr bool kNeedsOperands = true;
  static constexpr bool kGradAReadsA = false;  // besides b
  static constexpr bool kGradBReadsB = true;   // besides a
  static float Forward(float a, float b) { return a / b; }
  static float GradA(float, float b, float dy) { return dy / b; }
  static float GradB(float a, float b, float dy) { return -dy * a / (b * b); }
};
struct PowOp {
  static constexpr const char* kName = "Pow";
  static constexpr bool kNeedsOperands = true;
  static constexpr bool kGradAReadsA = true;  // besides b
  static constexpr bool kGradBReadsB = true;  // besides a
  static float Forward(float a, float b) { return std::pow(a, b); }
  // As PyTorch's pow_backward_self: zero where the exponent is zero (avoids 0 * inf at a = 0).
  static float GradA(float a, float b, float dy) {
    return b == 0.0f ? 0.0f : dy * b * std::pow(a, b - 1.0f);
  }
  // As pow_backward_exponent: zero where a == 0 and b >= 0 (the limit), NaN for a < 0.
  static float GradB(float a, float b, float dy) {
    return (a == 0.0f && b >= 0.0f) ? 0.0f : dy * std::pow(a, b) * std::log(a);
  }
};
// Max/Min of two tensors (torch.maximum/minimum, what the exporters write for them): the gradient
// goes to the larger (smaller) operand, split in half on a tie (derivatives.yaml maximum: where(
// self == other, grad / 2, grad).masked_fill_(self < other, 0)).
template <bool kMax>
struct ExtremumOp {
  static constexpr const char* kName = kMax ? "Max" : "Min";
  static constexpr bool kNeedsOperands = true;
  static constexpr bool kGradAReadsA = true;
  static constexpr bool kGradBReadsB = true;
  static bool Wins(float a, float b) { return kMax ? a > b : a < b; }
  static float Forward(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
    return Wins(a, b) || a == b ? a : b;
  }
  static float GradA(float a, float b, float dy) {
    return a == b ? dy / 2.0f : (Wins(a, b) ? dy : 0.0f);
  }
  static float GradB(float a, float b, float dy) { return GradA(b, a, dy); }
};
using MaxOp = ExtremumOp<true>;
using MinOp = ExtremumOp<false>;

// Mod: `fmod` 0 is Python's % (torch.remainder: the sign of the divisor), 1 is C's fmod
// (torch.fmod: the sign of the dividend). derivatives.yaml: self gets grad; other gets
// -grad * self.div(other, rounding_mode "floor" / "trunc"), so a's gradient reads no operand.
template <bool kTruncated>
struct ModOp {
  static constexpr const char* kName = "Mod";
  static constexpr bool kNeedsOperands = true;
  static constexpr bool kGradAReadsA = false;
  static constexpr bool kGradAReadsB = false;
  static constexpr bool kGradBReadsB = true;
  static float Forward(float a, float b) {
    const float r = std::fmod(a, b);
    if constexpr (kTruncated) return r;
    return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
  }
  static float GradA(float, float, float dy) { return dy; }
  static float GradB(float a, float b, float dy) {
    return -dy * (kTruncated ? std::trunc(a / b) : std::floor(a / b));
  }
};
using RemainderOp = ModOp<false>;
using FmodOp = ModOp<true>;

// Whether a's gradient reads b (every op but Mod's, whose is dy itself).
template <class Op>
constexpr bool GradAReadsB() {
  if constexpr (requires { Op::kGradAReadsB; }) {
    return Op::kGradAReadsB;
  } else {
    return true;
  }
}

template <class Op>
Expected<ForwardResult> BinaryForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor a, RequireTensor(args.inputs, 0, Op::kName, "input"));
  MEMPLAN_TRY(Tensor b, RequireTensor(args.inputs, 1, Op::kName, "input"));
  MEMPLAN_TRY(TensorShape shape, BroadcastShapes(a.shape(), b.shape(), Op::kName));
  // ONNX requires equal element types except Pow's exponent; the result takes input 0's type.
  Tensor y = NewOverwrittenOutput(ctx, shape, a.dtype());  // both branches write every element
  const float* pa = a.data();
  const float* pb = b.data();
  float* out = y.mutable_data();
  if (a.shape() == shape && b.shape() == shape) {
    // Nothing broadcast (residual adds, most elementwise ops): one flat, threaded loop.
    ParallelFor(y.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = Op::Forward(pa[i], pb[i]);
    });
  } else {
    const std::array<std::vector<int64_t>, 2> strides = {BroadcastStrides(a.shape(), shape),
                                                         BroadcastStrides(b.shape(), shape)};
    ForEachBroadcastIndex(shape, strides, [&](int64_t i, const std::array<int64_t, 2>& off) {
      out[i] = Op::Forward(pa[off[0]], pb[off[1]]);
    });
  }
  return RoundedSingleOutput(std::move(y));
}

template <class Op>
Expected<InputGradients> BinaryBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, Op::kName, "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 2, Op::kName));
  Tensor a;
  Tensor b;
  const bool want_a = args.NeedsGrad(0);
  const bool want_b =
      args.NeedsGrad(1) && (args.input_dtypes.size() < 2 || IsFloating(args.input_dtypes[1]));
  if constexpr (Op::kNeedsOperands) {
    // Only the operands the wanted gradients read are saved (x / c with a constant c keeps c,
    // not x), so only those are required.
    if (want_b || Op::kGradAReadsA) {
      MEMPLAN_TRY(a, RequireTensor(args.inputs, 0, Op::kName, "saved input"));
    }
    if ((want_a && GradAReadsB<Op>()) || (want_b && Op::kGradBReadsB)) {
      MEMPLAN_TRY(b, RequireTensor(args.inputs, 1, Op::kName, "saved input"));
    }
  }
  Tensor da = want_a ? NewInputGradient(ctx, args, 0) : Tensor();
  Tensor db = want_b ? NewInputGradient(ctx, args, 1) : Tensor();
  const TensorShape& out_shape = dy.shape();
  const std::array<std::vector<int64_t>, 2> strides = {
      BroadcastStrides(args.input_shapes[0], out_shape),
      BroadcastStrides(args.input_shapes[1], out_shape)};
  const float* g = dy.data();
  const float* pa = a.data();
  const float* pb = b.data();
  float* out_a = da.mutable_data();
  float* out_b = db.mutable_data();
  const auto visit = [&](int64_t i, int64_t ia, int64_t ib) {
    const float va = pa != nullptr ? pa[ia] : 0.0f;
    const float vb = pb != nullptr ? pb[ib] : 0.0f;
    if (out_a != nullptr) out_a[ia] += Op::GradA(va, vb, g[i]);
    if (out_b != nullptr) out_b[ib] += Op::GradB(va, vb, g[i]);
  };
  if (args.input_shapes[0] == out_shape && args.input_shapes[1] == out_shape) {
    // Nothing broadcast: every gradient element has one contribution, so chunks are disjoint.
    ParallelFor(dy.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) visit(i, i, i);
    });
  } else {
    ForEachBroadcastIndex(out_shape, strides, [&](int64_t i, const std::array<int64_t, 2>& off) {
      visit(i, off[0], off[1]);
    });
  }
  if (want_a) {
    PutRoundedGradient(grads, 0, std::move(da));
  }
  if (want_b) {
    PutRoundedGradient(grads, 1, std::move(db));
  }
  return grads;
}

// Where(condition, X, Y): X where condition holds, else Y; all three broadcast together.
Expected<ForwardResult> WhereForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor c, RequireTensor(args.inputs, 0, "Where", "input"));
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 1, "Where", "input"));
  MEMPLAN_TRY(Tensor y, RequireTensor(args.inputs, 2, "Where", "input"));
  MEMPLAN_TRY(TensorShape cx, BroadcastShapes(c.shape(), x.shape(), "Where"));
  MEMPLAN_TRY(TensorShape shape, BroadcastShapes(cx, y.shape(), "Where"));
  Tensor out = NewOutput(ctx, shape, x.dtype());
  const std::array<std::vector<int64_t>, 3> strides = {BroadcastStrides(c.shape(), shape),
                                                       BroadcastStrides(x.shape(), shape),
                                                       BroadcastStrides(y.shape(), shape)};
  const float* pc = c.data();
  const float* px = x.data();
  const float* py = y.data();
  float* po = out.mutable_data();
  ForEachBroadcastIndex(shape, strides, [&](int64_t i, const std::array<int64_t, 3>& off) {
    po[i] = pc[off[0]] != 0.0f ? px[off[1]] : py[off[2]];
  });
  return SingleOutput(std::move(out));
}

Expected<InputGradients> WhereBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Where", "output gradient"));
  MEMPLAN_TRY(Tensor c, RequireTensor(args.inputs, 0, "Where", "saved condition"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 3, "Where"));
  const TensorShape& shape = dy.shape();
  Tensor dx = args.NeedsGrad(1) ? NewInputGradient(ctx, args, 1) : Tensor();
  Tensor dz = args.NeedsGrad(2) ? NewInputGradient(ctx, args, 2) : Tensor();
  const std::array<std::vector<int64_t>, 3> strides = {
      BroadcastStrides(c.shape(), shape), BroadcastStrides(args.input_shapes[1], shape),
      BroadcastStrides(args.input_shapes[2], shape)};
  const float* pc = c.data();
  const float* g = dy.data();
  float* px = dx.mutable_data();
  float* pz = dz.mutable_data();
  ForEachBroadcastIndex(shape, strides, [&](int64_t i, const std::array<int64_t, 3>& off) {
    const bool take_x = pc[off[0]] != 0.0f;
    if (take_x && px != nullptr) px[off[1]] += g[i];
    if (!take_x && pz != nullptr) pz[off[2]] += g[i];
  });
  if (dx.defined()) {
    PutRoundedGradient(grads, 1, std::move(dx));
  }
  if (dz.defined()) {
    PutRoundedGradient(grads, 2, std::move(dz));
  }
  return grads;
}

bool IsFmod(const Attributes* attributes) {
  return AttributesOf(attributes).GetInt("fmod", 0) != 0;
}

Expected<ForwardResult> ModForward(const KernelContext& ctx, const ForwardArgs& args) {
  return IsFmod(args.attributes) ? BinaryForward<FmodOp>(ctx, args)
                                 : BinaryForward<RemainderOp>(ctx, args);
}

Expected<InputGradients> ModBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return IsFmod(args.attributes) ? BinaryBackward<FmodOp>(ctx, args)
                                 : BinaryBackward<RemainderOp>(ctx, args);
}

// Registers each of `Ops` under its kName, in order.
template <class... Ops>
void RegisterBinary(KernelRegistry& registry) {
  (registry.Register(Ops::kName, &BinaryForward<Ops>, &BinaryBackward<Ops>), ...);
}

}  // namespace

void RegisterBinaryKernels(KernelRegistry& registry) {
  RegisterBinary<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp>(registry);
  registry.Register("Mod", &ModForward, &ModBackward);
  registry.Register("Where", &WhereForward, &WhereBackward);
}

}  // namespace memplan
