// Elementwise unary ops. Each op says which forward tensor its backward reads (the one PyTorch's
// derivatives.yaml saves): Relu/Sigmoid/Tanh/Sqrt/Exp/Reciprocal/Rsqrt the result,
// Erf/Log/Gelu/Cos/Sin/LeakyRelu/HardSigmoid/HardSwish/Swish/Abs/Softplus/Mish the input, Neg and
// the step functions (Sign, Floor, Ceil, Round) nothing.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops/rsqrt_op.h"
#include "runtime/cpu/kernel_registry.h"
#include "runtime/cpu/kernels/activation_math.h"
#include "runtime/cpu/kernels/kernel_families.h"
#include "runtime/cpu/kernels/kernel_util.h"
#include "runtime/cpu/parallel_for.h"
#include "runtime/precision_emulation.h"

namespace memplan {
namespace {

enum class Saves { kNothing, kInput, kOutput };

using activation_math::kTwoOverSqrtPi;

struct ReluOp {
  static constexpr const char* kName = "Relu";
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return x > 0.0f ? x : 0.0f; }
  static float Grad(float y, float dy) { return y > 0.0f ? dy : 0.0f; }
};
struct SigmoidOp {
  static constexpr const char* kName = "Sigmoid";
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return activation_math::Sigmoid(x); }
  static float Grad(float y, float dy) { return dy * y * (1.0f - y); }
};
struct TanhOp {
  static constexpr const char* kName = "Tanh";
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return std::tanh(x); }
  static float Grad(float y, float dy) { return dy * (1.0f - y * y); }
};
struct ErfOp {
  static constexpr const char* kName = "Erf";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return std::erf(x); }
  static float Grad(float x, float dy) { return dy * kTwoOverSqrtPi * std::exp(-x * x); }
};
struct CosOp {
  static constexpr const char* kName = "Cos";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return std::cos(x); }
  static float Grad(float x, float dy) { return -dy * std::sin(x); }
};
struct SinOp {
  static constexpr const char* kName = "Sin";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return std::sin(x); }
  static float Grad(float x, float dy) { return dy * std::cos(x); }
};
struct SqrtOp {
  static constexpr const char* kName = "Sqrt";
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return std::sqrt(x); }
  static float Grad(float y, float dy) { return dy / (2.0f * y); }
};
struct NegOp {
  static constexpr const char* kName = "Neg";
  static constexpr Saves kSaves = Saves::kNothing;
  static float Forward(float x) { return -x; }
  static float Grad(float, float dy) { return -dy; }
};
struct AbsOp {
  static constexpr const char* kName = "Abs";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return std::fabs(x); }
  // abs: grad * self.sgn(), 0 at 0.
  static float Grad(float x, float dy) { return x > 0.0f ? dy : (x < 0.0f ? -dy : 0.0f); }
};
// Piecewise constant: torch's backward is zeros_like(grad), nothing saved.
template <float (*kFunction)(float)>
struct StepOp {
  static constexpr Saves kSaves = Saves::kNothing;
  static float Forward(float x) { return kFunction(x); }
  static float Grad(float, float) { return 0.0f; }
};
float SignOf(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
float FloorOf(float x) { return std::floor(x); }
float CeilOf(float x) { return std::ceil(x); }
// ONNX Round and torch.round both round half to even.
float RoundOf(float x) { return std::nearbyint(x); }
struct SignOp : StepOp<&SignOf> {
  static constexpr const char* kName = "Sign";
};
struct FloorOp : StepOp<&FloorOf> {
  static constexpr const char* kName = "Floor";
};
struct CeilOp : StepOp<&CeilOf> {
  static constexpr const char* kName = "Ceil";
};
struct RoundOp : StepOp<&RoundOf> {
  static constexpr const char* kName = "Round";
};
// Softplus (beta 1, threshold 20 as F.softplus's defaults; ONNX's has neither and does not
// linearise, which differs from torch's by under 2e-9 above 20).
struct SoftplusOp {
  static constexpr const char* kName = "Softplus";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
  static float Grad(float x, float dy) { return x > 20.0f ? dy : dy / (1.0f + std::exp(-x)); }
};
// Mish: x * tanh(softplus(x)); mish_backward(grad, self).
struct MishOp {
  static constexpr const char* kName = "Mish";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return x * std::tanh(SoftplusOp::Forward(x)); }
  static float Grad(float x, float dy) {
    const float t = std::tanh(SoftplusOp::Forward(x));
    const float s = 1.0f / (1.0f + std::exp(-x));
    return dy * (t + x * s * (1.0f - t * t));
  }
};
// ONNX Elu (alpha), Selu (alpha, gamma), Celu (alpha): torch's elu(x, alpha, scale, input_scale)
// with (alpha, 1, 1), (alpha, gamma, 1) and (alpha, 1, 1 / alpha); elu_backward reads self.
template <int kKind>  // 0 Elu, 1 Selu, 2 Celu
struct EluFamilyOp {
  static constexpr const char* kName = kKind == 0 ? "Elu" : (kKind == 1 ? "Selu" : "Celu");
  static constexpr Saves kSaves = Saves::kInput;
  struct Params {
    float alpha;
    float scale;
    float input_scale;
  };
  static Params Read(const Attributes& a) {
    if constexpr (kKind == 1)
      return {static_cast<float>(a.GetFloat("alpha", 1.67326319217681884765625)),
              static_cast<float>(a.GetFloat("gamma", 1.05070102214813232421875)), 1.0f};
    const auto alpha = static_cast<float>(a.GetFloat("alpha", 1.0));
    return {alpha, 1.0f, kKind == 2 ? 1.0f / alpha : 1.0f};
  }
  static float Forward(const Params& p, float x) {
    return x > 0.0f ? p.scale * x : p.scale * p.alpha * std::expm1(p.input_scale * x);
  }
  static float Grad(const Params& p, float x, float dy) {
    return x > 0.0f ? dy * p.scale
                    : dy * p.scale * p.alpha * p.input_scale * std::exp(p.input_scale * x);
  }
};
using EluOp = EluFamilyOp<0>;
using SeluOp = EluFamilyOp<1>;
using CeluOp = EluFamilyOp<2>;
struct ExpOp {
  static constexpr const char* kName = "Exp";
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return std::exp(x); }
  static float Grad(float y, float dy) { return dy * y; }
};
struct LogOp {
  static constexpr const char* kName = "Log";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return std::log(x); }
  static float Grad(float x, float dy) { return dy / x; }
};
struct ReciprocalOp {
  static constexpr const char* kName = "Reciprocal";
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return 1.0f / x; }
  static float Grad(float y, float dy) { return -dy * y * y; }
};

// memplan:Rsqrt (torch.rsqrt): d/dx x^(-1/2) = -y^3 / 2.
struct RsqrtOp {
  static constexpr const char* kName = rsqrt::kOpType;
  static constexpr Saves kSaves = Saves::kOutput;
  static float Forward(float x) { return 1.0f / std::sqrt(x); }
  static float Grad(float y, float dy) { return -0.5f * dy * y * y * y; }
};

// The activations with attributes (LeakyRelu's slope, HardSigmoid's alpha and beta, Gelu's
// approximation, Swish's alpha): the op reads them once per call into its Params, and its Forward
// and Grad take them first. Backward follows derivatives.yaml: each keeps its input.
struct LeakyReluOp {
  static constexpr const char* kName = "LeakyRelu";
  static constexpr Saves kSaves = Saves::kInput;
  struct Params {
    float alpha;
  };
  static Params Read(const Attributes& a) {
    return {static_cast<float>(a.GetFloat("alpha", 0.01))};
  }
  // leaky_relu_backward(grad, self, negative_slope): self > 0 picks the slope.
  static float Forward(const Params& p, float x) { return x > 0.0f ? x : p.alpha * x; }
  static float Grad(const Params& p, float x, float dy) { return x > 0.0f ? dy : p.alpha * dy; }
};
struct HardSigmoidOp {
  static constexpr const char* kName = "HardSigmoid";
  static constexpr Saves kSaves = Saves::kInput;
  struct Params {
    float alpha, beta;
  };
  static Params Read(const Attributes& a) {
    return {static_cast<float>(a.GetFloat("alpha", 0.2)),
            static_cast<float>(a.GetFloat("beta", 0.5))};
  }
  static float Forward(const Params& p, float x) {
    return std::clamp(p.alpha * x + p.beta, 0.0f, 1.0f);
  }
  // hardsigmoid_backward: the slope strictly inside the linear part, 0 on the flats.
  static float Grad(const Params& p, float x, float dy) {
    const float z = p.alpha * x + p.beta;
    return z > 0.0f && z < 1.0f ? dy * p.alpha : 0.0f;
  }
};
// HardSwish (opset 14, torch's hardswish): x * HardSigmoid(x; 1/6, 0.5).
struct HardSwishOp {
  static constexpr const char* kName = "HardSwish";
  static constexpr Saves kSaves = Saves::kInput;
  static float Forward(float x) { return x * std::clamp(x / 6.0f + 0.5f, 0.0f, 1.0f); }
  // hardswish_backward: 0 below -3, x / 3 + 1/2 up to 3 (inclusive), 1 above.
  static float Grad(float x, float dy) {
    if (x < -3.0f) return 0.0f;
    return x <= 3.0f ? dy * (x / 3.0f + 0.5f) : dy;
  }
};

struct NoParams {};
template <class Op>
constexpr bool kHasParams = requires {
  typename Op::Params;
};

template <class Op>
auto ParamsOf(const Attributes* attributes) {
  if constexpr (kHasParams<Op>) {
    return Op::Read(AttributesOf(attributes));
  } else {
    return NoParams{};
  }
}
template <class Op, class P>
float ForwardOf(const P& p, float x) {
  if constexpr (kHasParams<Op>) {
    return Op::Forward(p, x);
  } else {
    return Op::Forward(x);
  }
}
template <class Op, class P>
float GradOf(const P& p, float saved, float dy) {
  if constexpr (kHasParams<Op>) {
    return Op::Grad(p, saved, dy);
  } else {
    return Op::Grad(saved, dy);
  }
}

template <class Op>
Expected<ForwardResult> UnaryForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, Op::kName, "input"));
  const auto params = ParamsOf<Op>(args.attributes);
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  const float* in = x.data();
  float* out = y.mutable_data();
  ParallelFor(x.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = ForwardOf<Op>(params, in[i]);
  });
  return RoundedSingleOutput(std::move(y));
}

template <class Op>
Expected<InputGradients> UnaryBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, Op::kName, "output gradient"));
  Tensor saved;
  if constexpr (Op::kSaves == Saves::kInput) {
    MEMPLAN_TRY(saved, RequireTensor(args.inputs, 0, Op::kName, "saved input"));
  } else if constexpr (Op::kSaves == Saves::kOutput) {
    MEMPLAN_TRY(saved, RequireTensor(args.outputs, 0, Op::kName, "saved output"));
  }
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, Op::kName));
  if (!args.NeedsGrad(0)) return grads;
  const auto params = ParamsOf<Op>(args.attributes);
  Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
  const float* g = dy.data();
  const float* s = saved.defined() ? saved.data() : nullptr;
  float* out = dx.mutable_data();
  ParallelFor(dx.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = GradOf<Op>(params, s != nullptr ? s[i] : 0.0f, g[i]);
  });
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

// Rsqrt has the shape of the Div the import fusion replaced (graph/fusion/rsqrt.cc): a scalar x
// divided into ones(1) gave [1].
Expected<ForwardResult> RsqrtForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(ForwardResult result, UnaryForward<RsqrtOp>(ctx, args));
  Tensor& y = result.outputs[0];
  if (y.rank() == 0 && AttributesOf(args.attributes).GetInt(rsqrt::kBroadcastRank, 0) == 1)
    y = y.View({1});
  return result;
}

// Gelu: activation_math's, approximate "none" (erf) or "tanh". Backward reads the input.
struct GeluOp {
  static constexpr const char* kName = "Gelu";
  static constexpr Saves kSaves = Saves::kInput;
  struct Params {
    bool tanh;
  };
  static Params Read(const Attributes& a) { return {a.GetString("approximate", "none") == "tanh"}; }
  static float Forward(const Params& p, float v) { return activation_math::Gelu(p.tanh, v); }
  static float Grad(const Params& p, float v, float dy) {
    return dy * activation_math::GeluDerivative(p.tanh, v);
  }
};

// ONNX Runtime's com.microsoft BiasGelu(A, B) (exact erf gelu of A + B) and FastGelu(X, bias?)
// (the tanh form of gelu of X + bias): GeluOp's math on the biased sum, bias [H] over X's last
// dim H. The registry saves "gelu_input" (the sum, as gelu_backward keeps the addmm result it
// was fed) when a bias is fused, else X itself; backward reads that alone, and the bias gradient
// is dX summed over rows.
template <bool kTanh>
struct BiasedGeluOp {
  static constexpr const char* kName = kTanh ? "FastGelu" : "BiasGelu";
  static constexpr GeluOp::Params kParams{kTanh};
};

// The bias's length: X's last dim.
template <class Op>
Expected<int64_t> BiasWidth(const TensorShape& x, const TensorShape& bias) {
  const int64_t width = x.empty() ? 1 : x.back();
  if (NumElements(bias) != width || (bias.size() > 1 && bias.size() > x.size()))
    return MakeError(std::string(Op::kName) + ": bias " + ShapeToString(bias) +
                     " is not one value per element of input " + ShapeToString(x) + "'s last dim");
  return width;
}

template <class Op>
Expected<ForwardResult> BiasedGeluForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, Op::kName, "input"));
  const Tensor bias = OptionalTensor(args.inputs, 1);
  Tensor gelu_input = x;
  std::vector<std::pair<std::string, Tensor>> extras;
  if (bias.defined()) {
    MEMPLAN_TRY(const int64_t width, BiasWidth<Op>(x.shape(), bias.shape()));
    gelu_input = NewExtra(ctx, x.shape(), x.dtype());
    const float* in = x.data();
    const float* b = bias.data();
    float* s = gelu_input.mutable_data();
    ParallelFor(x.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) s[i] = in[i] + b[i % width];
    });
    RoundToOwnDType(gelu_input);
    extras.emplace_back("gelu_input", gelu_input);
  }
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  const float* s = gelu_input.data();
  float* out = y.mutable_data();
  ParallelFor(x.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = GeluOp::Forward(Op::kParams, s[i]);
  });
  return OutputWithSavedExtras(std::move(y), args.num_outputs, std::move(extras));
}

template <class Op>
Expected<InputGradients> BiasedGeluBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, Op::kName, "output gradient"));
  const bool biased = args.InputPresent(1);
  Tensor saved;
  if (biased) {
    MEMPLAN_TRY(saved, RequireExtra(args, "gelu_input", Op::kName));
  } else {
    MEMPLAN_TRY(saved, RequireTensor(args.inputs, 0, Op::kName, "saved input"));
  }
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, biased ? 2 : 1, Op::kName));
  if (saved.numel() != dy.numel())
    return MakeError(std::string(Op::kName) + ": output gradient " + ShapeToString(dy.shape()) +
                     " does not match the saved gelu input " + ShapeToString(saved.shape()));
  const bool bias_grad = biased && args.NeedsGrad(1);
  if (!args.NeedsGrad(0) && !bias_grad) return grads;
  // The sum's gradient is X's.
  Tensor dsum = NewOverwrittenInputGradient(ctx, args, 0);
  const float* g = dy.data();
  const float* s = saved.data();
  float* out = dsum.mutable_data();
  ParallelFor(dsum.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = GeluOp::Grad(Op::kParams, s[i], g[i]);
  });
  Tensor dbias;
  if (bias_grad) {
    MEMPLAN_TRY(const int64_t width, BiasWidth<Op>(args.input_shapes[0], args.input_shapes[1]));
    std::vector<double> sums(static_cast<size_t>(width), 0.0);
    for (int64_t i = 0; i < dsum.numel(); ++i) sums[static_cast<size_t>(i % width)] += out[i];
    dbias = NewOverwrittenInputGradient(ctx, args, 1);
    for (int64_t e = 0; e < width; ++e)
      dbias.mutable_data()[e] = static_cast<float>(sums[static_cast<size_t>(e)]);
  }
  if (!args.NeedsGrad(0)) dsum = Tensor();
  return WithRoundedGradients(std::move(grads), std::move(dsum), std::move(dbias), Tensor());
}

template <class Op>
void RegisterBiasedGelu(KernelRegistry& registry) {
  registry.Register(Op::kName, &BiasedGeluForward<Op>, &BiasedGeluBackward<Op>, "com.microsoft");
}

// Swish: x * sigmoid(alpha * x) (SiLU when alpha = 1, as the import fusion writes it); backward
// reads x, as silu_backward(grad, self) does.
struct SwishOp {
  static constexpr const char* kName = "Swish";
  static constexpr Saves kSaves = Saves::kInput;
  struct Params {
    float alpha;
  };
  static Params Read(const Attributes& a) { return {static_cast<float>(a.GetFloat("alpha", 1.0))}; }
  static float Forward(const Params& p, float x) { return activation_math::Swish(p.alpha, x); }
  static float Grad(const Params& p, float x, float dy) {
    return dy * activation_math::SwishDerivative(p.alpha, x);
  }
};

// Identity: the output is a view of the input, the gradient a view of the output gradient.
Expected<ForwardResult> IdentityForward(const KernelContext&, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Identity", "input"));
  return SingleOutput(x);
}

Expected<InputGradients> IdentityBackward(const KernelContext&, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Identity", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Identity"));
  if (args.NeedsGrad(0)) grads[0] = dy;
  return grads;
}

// Cast: converts to the `to` dtype (fp16/bf16 rounding, integer truncation); backward converts
// the gradient back to the input's dtype, as autograd does.
ForwardResult CastTo(const KernelContext& ctx, const Tensor& x, DType target) {
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), target);
  std::copy(x.data(), x.data() + x.numel(), y.mutable_data());
  return RoundedSingleOutput(std::move(y));
}

Expected<ForwardResult> CastForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Cast", "input"));
  const int64_t to = AttributesOf(args.attributes).GetInt("to", 0);
  const std::optional<DType> target = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!target || *target == DType::kString || *target == DType::kComplex64 ||
      *target == DType::kComplex128) {
    return MakeError("Cast: unsupported target type code " + std::to_string(to));
  }
  return CastTo(ctx, x, *target);
}

// CastLike(x, like): Cast to like's dtype; `like` gives its type only (and gets no gradient).
Expected<ForwardResult> CastLikeForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "CastLike", "input"));
  MEMPLAN_TRY(Tensor like, RequireTensor(args.inputs, 1, "CastLike", "target_type input"));
  return CastTo(ctx, x, like.dtype());
}

// Clip(x, min?, max?): min and max are inputs from opset 11 (absent = unbounded), attributes
// before. min(max(x, lo), hi) as torch.clamp computes it: hi wins when lo > hi, NaN passes.
struct ClipBounds {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

Expected<ClipBounds> ReadClipBounds(const std::vector<Tensor>& inputs, const Attributes& attrs) {
  ClipBounds b;
  float* bound[2] = {&b.lo, &b.hi};
  const char* names[2] = {"min", "max"};
  for (size_t i = 0; i < 2; ++i) {
    const Tensor t = OptionalTensor(inputs, i + 1);
    if (t.defined()) {
      if (t.numel() != 1) return MakeError(std::string("Clip: ") + names[i] + " is not a scalar");
      *bound[i] = t.data()[0];
    } else if (attrs.Has(names[i])) {
      *bound[i] = static_cast<float>(attrs.GetFloat(names[i], 0.0));
    }
  }
  return b;
}

Expected<ForwardResult> ClipForward(const KernelContext& ctx, const ForwardArgs& args) {
  MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Clip", "input"));
  MEMPLAN_TRY(ClipBounds b, ReadClipBounds(args.inputs, AttributesOf(args.attributes)));
  Tensor y = NewOverwrittenOutput(ctx, x.shape(), x.dtype());
  const float* in = x.data();
  float* out = y.mutable_data();
  ParallelFor(x.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = std::min(std::max(in[i], b.lo), b.hi);
  });
  return RoundedSingleOutput(std::move(y));
}

// clamp_backward(grad, self, min, max): the gradient where lo <= x <= hi, else 0.
Expected<InputGradients> ClipBackward(const KernelContext& ctx, const BackwardArgs& args) {
  return FirstInputBackward(args, 1, "Clip", [&](const Tensor& dy) -> Expected<Tensor> {
    MEMPLAN_TRY(Tensor x, RequireTensor(args.inputs, 0, "Clip", "saved input"));
    MEMPLAN_TRY(ClipBounds b, ReadClipBounds(args.inputs, AttributesOf(args.attributes)));
    Tensor dx = NewOverwrittenInputGradient(ctx, args, 0);
    const float* in = x.data();
    const float* g = dy.data();
    float* out = dx.mutable_data();
    ParallelFor(dx.numel(), ElementwiseGrain(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = in[i] >= b.lo && in[i] <= b.hi ? g[i] : 0.0f;
    });
    return dx;
  });
}

Expected<InputGradients> CastBackward(const KernelContext& ctx, const BackwardArgs& args) {
  MEMPLAN_TRY(Tensor dy, RequireTensor(args.grad_outputs, 0, "Cast", "output gradient"));
  MEMPLAN_TRY(InputGradients grads, MakeGradientSlots(args, 1, "Cast"));
  const bool floating_input = !args.input_dtypes.empty() && IsFloating(args.input_dtypes[0]);
  if (!args.NeedsGrad(0) || !floating_input) return grads;
  Tensor dx = NewInputGradient(ctx, args, 0);
  std::copy(dy.data(), dy.data() + dy.numel(), dx.mutable_data());
  return WithRoundedGradient(std::move(grads), 0, std::move(dx));
}

// Registers each of `Ops` under its kName, in order.
template <class... Ops>
void RegisterUnary(KernelRegistry& registry) {
  (registry.Register(Ops::kName, &UnaryForward<Ops>, &UnaryBackward<Ops>), ...);
}

}  // namespace

void RegisterUnaryKernels(KernelRegistry& registry) {
  RegisterUnary<ReluOp, SigmoidOp, TanhOp, ErfOp, CosOp, SinOp, SqrtOp, NegOp, ExpOp, LogOp,
                ReciprocalOp, LeakyReluOp, HardSigmoidOp, HardSwishOp>(registry);
  RegisterUnary<AbsOp, SignOp, FloorOp, CeilOp, RoundOp, SoftplusOp, MishOp, EluOp, SeluOp, CeluOp>(
      registry);
  registry.Register(rsqrt::kOpType, &RsqrtForward, &UnaryBackward<RsqrtOp>, rsqrt::kDomain);
  RegisterUnary<GeluOp>(registry);
  RegisterBiasedGelu<BiasedGeluOp<false>>(registry);
  RegisterBiasedGelu<BiasedGeluOp<true>>(registry);
  registry.Register("Identity", &IdentityForward, &IdentityBackward);
  RegisterUnary<SwishOp>(registry);
  registry.Register("Cast", &CastForward, &CastBackward);
  registry.Register("CastLike", &CastLikeForward, &CastBackward);
  registry.Register("Clip", &ClipForward, &ClipBackward);
}

}  // namespace memplan
