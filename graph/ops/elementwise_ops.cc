// Elementwise ops: binary arithmetic with broadcasting (Add, Sub, Mul, Div, Pow), activations,
// and Dropout. Add/Sub/Mul/Div/Neg also fold the symbolic contents of integer shape tensors,
// because exporters compute Reshape targets with them (e.g. Div(Gather(Shape(x), 2), 12)).

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "graph/ops/common_rules.h"
#include "graph/ops/gated_mlp_ops.h"
#include "graph/ops/glu_op.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/rsqrt_op.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"

namespace memplan {
namespace {

using DimOp = std::function<std::optional<Dim>(const Dim&, const Dim&)>;

// Applies `op` elementwise to two folded contents, broadcasting a one-element side (a scalar or
// [1]) against the other. nullopt when either side is not folded or any element cannot be.
std::optional<std::vector<Dim>> CombineContents(const TensorInfo& a, const TensorInfo& b,
                                                const DimOp& op) {
  if (!a.contents || !b.contents) return std::nullopt;
  const auto& ca = *a.contents;
  const auto& cb = *b.contents;
  if (ca.empty() || cb.empty()) return std::nullopt;
  if (ca.size() != cb.size() && ca.size() != 1 && cb.size() != 1) return std::nullopt;
  size_t n = std::max(ca.size(), cb.size());
  std::vector<Dim> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto r = op(ca[ca.size() == 1 ? 0 : i], cb[cb.size() == 1 ? 0 : i]);
    if (!r) return std::nullopt;
    out.push_back(std::move(*r));
  }
  return out;
}

// Integer division as ONNX Div does it on shape values: exact polynomial division when it is
// exact (batch*seq / seq = batch), else truncating division of constants.
std::optional<Dim> DivideDims(const Dim& a, const Dim& b) {
  if (auto exact = a.DivideExactly(b)) return exact;
  auto divisor = b.constant_value();
  if (!divisor) return std::nullopt;
  return a.FloorDivide(*divisor);
}

// Float arithmetic on values known at import (Value::float_values): torch traces Python-float
// shape arithmetic into the graph, int(num_positions ** 0.5) as Pow(16.0, 0.5) then Cast
// (DINOv2), math.ceil(h / p) * p as Mul(Ceil(Constant), Constant) then Cast (MobileViT's unfold
// into patches). The result is computed in the output's precision as ONNX computes it, so the
// Cast to int64 makes integer contents and the Reshape / Resize it sizes keep their shapes.
double InOutputPrecision(DType dtype, double value) {
  return dtype == DType::kFloat64 ? value : static_cast<double>(static_cast<float>(value));
}

ShapeRule FoldFloatValues(ShapeRule base, std::function<std::optional<double>(double, double)> f) {
  return [base = std::move(base),
          f = std::move(f)](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, base(ctx));
    if (outs.empty() || !IsFloating(outs[0].dtype) || ctx.inputs.size() < 2) return outs;
    const auto& a = ctx.inputs[0].float_values;
    const auto& b = ctx.inputs[1].float_values;
    if (!a || !b || a->empty() || b->empty() ||
        (a->size() != b->size() && a->size() != 1 && b->size() != 1))
      return outs;
    std::vector<double> values;
    for (size_t i = 0; i < std::max(a->size(), b->size()); ++i) {
      const DType t = outs[0].dtype;
      const auto v = f(InOutputPrecision(t, (*a)[a->size() == 1 ? 0 : i]),
                       InOutputPrecision(t, (*b)[b->size() == 1 ? 0 : i]));
      if (!v || !std::isfinite(*v)) return outs;
      values.push_back(InOutputPrecision(t, *v));
    }
    outs[0].float_values = std::move(values);
    return outs;
  };
}

// Clip of known floats by known one-element bounds (either may be absent): timm's "same" padding,
// max((ceil(i / s) - 1) * s + (k - 1) * d + 1 - i, 0), traced by TorchScript from Python floats.
ShapeRule FoldClippedFloatValues(ShapeRule base) {
  return [base = std::move(base)](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, base(ctx));
    if (outs.empty() || !IsFloating(outs[0].dtype) || ctx.inputs.empty()) return outs;
    const auto& a = ctx.inputs[0].float_values;
    if (!a || a->empty()) return outs;
    auto bound = [&](size_t i, double none) -> std::optional<double> {
      if (!ctx.has_input(i)) return none;
      const auto& b = ctx.inputs[i].float_values;
      if (!b || b->size() != 1) return std::nullopt;
      return (*b)[0];
    };
    const auto low = bound(1, -std::numeric_limits<double>::infinity());
    const auto high = bound(2, std::numeric_limits<double>::infinity());
    if (!low || !high) return outs;
    std::vector<double> values;
    for (double x : *a)
      values.push_back(InOutputPrecision(outs[0].dtype, std::min(std::max(x, *low), *high)));
    outs[0].float_values = std::move(values);
    return outs;
  };
}

ShapeRule FoldFloatValues(ShapeRule base, double (*f)(double)) {
  return [base = std::move(base), f](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, base(ctx));
    if (outs.empty() || !IsFloating(outs[0].dtype) || ctx.inputs.empty()) return outs;
    const auto& a = ctx.inputs[0].float_values;
    if (!a || a->empty()) return outs;
    std::vector<double> values;
    for (double x : *a) values.push_back(InOutputPrecision(outs[0].dtype, f(x)));
    outs[0].float_values = std::move(values);
    return outs;
  };
}

// `divides`: the second input is a divisor (Div), so a known integer 0 in it is refused.
ShapeRule BinaryShapeRule(DimOp contents_op, bool divides = false) {
  return [contents_op, divides](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* a, RequiredInput(ctx, 0));
    MEMPLAN_TRY(const TensorInfo* b, RequiredInput(ctx, 1));
    if (divides) MEMPLAN_RETURN_IF_ERROR(RefuseZeroDivisor(ctx.node, *b));
    auto shape = BroadcastShapes(a->shape, b->shape);
    if (!shape) return MakeError(NodeError(ctx.node, shape.error().message));
    auto outs = EmptyOutputs(ctx);
    if (outs.empty()) return outs;
    // ONNX requires equal input types, except Pow whose result has the base's type.
    outs[0].dtype = a->dtype != DType::kUndefined ? a->dtype : b->dtype;
    outs[0].shape = *shape;
    if (contents_op && IsInteger(outs[0].dtype)) {
      outs[0].contents = CombineContents(*a, *b, contents_op);
      // A division of a symbol that is no polynomial (seq // window) names each element with a
      // new symbol, which binding the real axes determines (graph/bound_shape_check.h), so a
      // shape computed from it (a Reshape to [batch, seq // window, window, c]) stays known.
      if (!outs[0].contents && divides) outs[0].contents = FreshContents(ctx, *a, *b, "div");
      // Contents pair elements one to one or broadcast one element; operands of equal counts
      // but other shapes ([1, S] - [S, 1], T5's relative positions) broadcast to more elements
      // than either has, which the pairing does not compute.
      if (outs[0].contents &&
          FoldableElementCount(*shape) != static_cast<int64_t>(outs[0].contents->size()))
        outs[0].contents.reset();
    }
    return outs;
  };
}

// Rsqrt keeps the shape of the Div it replaces: x broadcast against the one it divided, whose
// rank the fusion records as broadcast_rank (only a scalar x grows, to [1]).
Expected<std::vector<TensorInfo>> RsqrtShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  const int64_t rank = ctx.attrs().GetInt(rsqrt::kBroadcastRank, 0);
  if (rank < 0 || rank > 1)
    return MakeError(NodeError(ctx.node, std::string(rsqrt::kBroadcastRank) +
                                             " must be 0 or 1, not " + std::to_string(rank)));
  if (!outs.empty() && outs[0].shape.known && outs[0].shape.rank() < static_cast<size_t>(rank))
    outs[0].shape.dims.assign(static_cast<size_t>(rank), Dim(1));
  return outs;
}

// Glu halves its axis; an odd or non-halvable length is an error, as F.glu's.
Expected<std::vector<TensorInfo>> GluShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  if (outs.empty() || !outs[0].shape.known) return outs;
  Shape& y = outs[0].shape;
  MEMPLAN_TRY(int64_t axis, NormalizeAxis(ctx.attrs().GetInt(glu::kAxis, -1), y.rank(), ctx.node));
  Dim& d = y.dims[static_cast<size_t>(axis)];
  const std::optional<int64_t> length = d.constant_value();
  std::optional<Dim> half = d.DivideExactly(Dim(2));
  if ((length && *length % 2 != 0) || !half)
    return MakeError(NodeError(ctx.node, "Glu halves an axis of odd or unknown length"));
  d = *half;
  return outs;
}

// Neg keeps folded contents (negative Reshape targets are built this way).
Expected<std::vector<TensorInfo>> NegShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  const TensorInfo& x = ctx.inputs[0];
  if (!outs.empty() && x.contents && IsInteger(x.dtype)) {
    std::vector<Dim> negated;
    for (const Dim& d : *x.contents) negated.push_back(Dim(0) - d);
    outs[0].contents = std::move(negated);
  }
  return outs;
}

SavedRule SaveInput0() { return WhenDifferentiable(AlwaysSave({SaveInput(0)})); }

SavedRule SaveOutput0() { return WhenDifferentiable(AlwaysSave({SaveOutput(0)})); }

// What a compiled backward of a piecewise-linear activation reads (OpSchema::
// saved_when_compiled): Inductor decomposes threshold_backward(grad, result, 0) to
// where(result <= 0, 0, grad), leaky_relu_backward to where(self > 0, grad, grad * slope) and
// clamp_backward to where((self >= min) & (self <= max), grad, 0), so a bool mask of the output's
// shape (one byte an element, torch.bool) is all backward needs.
SavedRule SaveBoolMask() {
  return WhenDifferentiable([](const OpContext& ctx) {
    return std::vector<SavedTensor>{SaveExtra("mask", DType::kBool, ctx.outputs[0].shape)};
  });
}

GradientRule OnlyInput0() {
  return [](const OpContext& ctx) {
    std::vector<bool> grads(ctx.inputs.size(), false);
    if (!grads.empty()) grads[0] = ctx.has_input(0) && IsFloating(ctx.inputs[0].dtype);
    return grads;
  };
}

struct UnarySpec {
  const char* op_type;
  int64_t flops_per_element;
  SavedRule saved;
  const char* saved_source;
  AmpCategory amp = AmpCategory::kFollowInputs;
};

OpSchema UnarySchema(const UnarySpec& spec) {
  OpSchema s;
  s.op_type = spec.op_type;
  s.infer_shapes = OutputLikeInput0;
  int64_t flops = spec.flops_per_element;
  s.cost = PerOutputElementCostRule(flops);
  s.SetSaved(DerivativesSource(spec.saved_source), spec.saved);
  s.gradient_inputs = OnlyInput0();  // Clip's min/max, LeakyRelu has none: only x is trained
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(spec.amp, spec.amp == AmpCategory::kFp32Required ? AutocastSource("fp32 list")
                                                            : AutocastSource(kNotAutocastListed));
  s.pointwise = true;
  return s;
}

// What a unary op is beyond its UnarySpec row: Gelu's cost by form, the bool mask a compiled
// backward of a piecewise-linear activation reads, the Python-float folding of Ceil/Floor/Clip.
void AdjustUnarySchema(OpSchema& schema) {
  // Gelu-20's approximate="tanh" costs more than the erf form; both save self.
  if (schema.op_type == "Gelu")
    schema.cost = [](const OpContext& ctx) {
      return PerOutputElementCost(ctx, GeluFlopsPerElement(ctx));
    };
  if (schema.op_type == "Relu" || schema.op_type == "LeakyRelu" || schema.op_type == "Clip")
    schema.saved_when_compiled = SaveBoolMask();
  if (schema.op_type == "Ceil")
    schema.infer_shapes =
        FoldFloatValues(schema.infer_shapes, [](double x) { return std::ceil(x); });
  if (schema.op_type == "Floor")
    schema.infer_shapes =
        FoldFloatValues(schema.infer_shapes, [](double x) { return std::floor(x); });
  if (schema.op_type == "Clip") schema.infer_shapes = FoldClippedFloatValues(schema.infer_shapes);
}

// The ONNX unary ops of one table row each.
void RegisterUnaryOps(OpRegistry& registry) {
  const UnarySpec specs[] = {
      {"Relu", kSimpleFlops, SaveOutput0(), "relu: threshold_backward(grad, result, 0)"},
      {"LeakyRelu", 2 * kSimpleFlops, SaveInput0(),
       "leaky_relu: leaky_relu_backward(grad, self, negative_slope, false)"},
      {"Sigmoid", kTranscendentalFlops, SaveOutput0(), "sigmoid: sigmoid_backward(grad, result)"},
      {"Tanh", kTranscendentalFlops, SaveOutput0(), "tanh: tanh_backward(grad, result)"},
      {"Clip", 2 * kSimpleFlops, SaveInput0(), "clamp: clamp_backward(grad, self, min, max)"},
      {"HardSigmoid", kHardActivationFlops, SaveInput0(),
       "hardsigmoid: hardsigmoid_backward(grad, self)"},
      {"HardSwish", kHardActivationFlops + 1, SaveInput0(),
       "hardswish: hardswish_backward(grad, self)"},
      {"Gelu", kGeluFlops, SaveInput0(), "gelu: gelu_backward(grad, self, approximate)"},
      // Swish (opset 24) with alpha = 1 is SiLU; the import fusion writes it for x * Sigmoid(x).
      {"Swish", kTranscendentalFlops + kSimpleFlops, SaveInput0(),
       "silu: silu_backward(grad, self) (infinitely_differentiable_silu_backward under grad mode)"},
      {"Erf", kTranscendentalFlops, SaveInput0(),
       "erf: 2.0 / sqrt(M_PI) * exp(-(self.pow(2))) * grad"},
      {"Sqrt", kSimpleFlops, SaveOutput0(), "sqrt: grad / (2 * result.conj())"},
      {"Reciprocal", kSimpleFlops, SaveOutput0(), "reciprocal: -grad * (result * result).conj()",
       AmpCategory::kFp32Required},
      {"Exp", kTranscendentalFlops, SaveOutput0(), "exp: grad * result.conj()",
       AmpCategory::kFp32Required},
      {"Log", kTranscendentalFlops, SaveInput0(), "log: grad.div(self.conj())",
       AmpCategory::kFp32Required},
      {"Abs", kSimpleFlops, SaveInput0(), "abs: grad * self.sgn()"},
      // Step functions: zeros_like(grad), nothing saved (a gradient of zeros still flows).
      {"Sign", kSimpleFlops, SaveNothing(), "sign: zeros_like(grad)"},
      {"Floor", kSimpleFlops, SaveNothing(), "floor: zeros_like(grad)"},
      {"Ceil", kSimpleFlops, SaveNothing(), "ceil: zeros_like(grad)"},
      {"Round", kSimpleFlops, SaveNothing(), "round: zeros_like(grad)"},
      {"Softplus", 2 * kTranscendentalFlops, SaveInput0(),
       "softplus: softplus_backward(grad, self, beta, threshold)", AmpCategory::kFp32Required},
      {"Mish", 3 * kTranscendentalFlops, SaveInput0(), "mish: mish_backward(grad, self)"},
      // selu and celu are elu with other constants (CompositeImplicit): all keep self.
      {"Elu", kTranscendentalFlops, SaveInput0(),
       "elu: elu_backward(grad, alpha, scale, input_scale, /*is_result=*/false, self)"},
      {"Selu", kTranscendentalFlops, SaveInput0(),
       "selu -> elu(self, alpha, scale): elu_backward(..., is_result=false, self)"},
      {"Celu", kTranscendentalFlops, SaveInput0(),
       "celu -> elu(self, alpha, 1, 1 / alpha): elu_backward(..., is_result=false, self)"},
      // Rotary embeddings' cos/sin tables (Llama, Mistral exports).
      {"Cos", kTranscendentalFlops, SaveInput0(), "cos: grad * -self.sin().conj()"},
      {"Sin", kTranscendentalFlops, SaveInput0(), "sin: grad * self.cos().conj()"},
  };
  for (const auto& spec : specs) {
    OpSchema schema = UnarySchema(spec);
    AdjustUnarySchema(schema);
    registry.Register(std::move(schema));
  }
}

// The unary ops with their own shape rule or domain: memplan's fused Rsqrt and Glu, Microsoft's
// Gelu, Neg (which negates symbolic contents).
void RegisterOtherUnaryOps(OpRegistry& registry) {
  // memplan:Rsqrt: torch.rsqrt, which torch.onnx writes as Div(ones(1), Sqrt(x)); the import
  // fusion (graph/fusion/rsqrt.cc) writes it back. In autocast's fp32 list, unlike Sqrt and Div.
  OpSchema rsqrt =
      UnarySchema({rsqrt::kOpType, 2 * kSimpleFlops, SaveOutput0(),
                   "rsqrt: -0.5 * grad * result.pow(3).conj()", AmpCategory::kFp32Required});
  rsqrt.domain = rsqrt::kDomain;
  rsqrt.infer_shapes = RsqrtShape;
  registry.Register(std::move(rsqrt));

  // memplan:Glu: F.glu, which torch.onnx writes as Split, Sigmoid, Mul; the import fusion
  // (graph/fusion/glu.cc) writes it back. A sigmoid and a product per output element.
  OpSchema glu_op = UnarySchema({glu::kOpType, kTranscendentalFlops + kSimpleFlops, SaveInput0(),
                                 "glu: glu_backward(grad, self, dim) saves self only"});
  glu_op.domain = glu::kDomain;
  glu_op.pointwise = false;  // it halves an axis: aten.glu is not tagged pointwise
  glu_op.infer_shapes = GluShape;
  registry.Register(std::move(glu_op));

  // Exporters also emit Gelu in Microsoft's contrib domain; it is the same op.
  OpSchema ms_gelu = UnarySchema(
      {"Gelu", kGeluFlops, SaveInput0(), "gelu: gelu_backward(grad, self, approximate)"});
  ms_gelu.domain = "com.microsoft";
  registry.Register(std::move(ms_gelu));

  OpSchema neg = UnarySchema({"Neg", kSimpleFlops, SaveNothing(), "neg: grad.neg()"});
  neg.infer_shapes = NegShape;
  registry.Register(std::move(neg));
}

OpSchema BinarySchema(const char* op_type, DimOp contents_op, SavedRule saved,
                      const std::string& saved_source, double backward_factor,
                      AmpCategory amp = AmpCategory::kFollowInputs) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = BinaryShapeRule(std::move(contents_op));
  s.cost = PerOutputElementCostRule(kSimpleFlops);
  s.SetSaved(DerivativesSource(saved_source), std::move(saved));
  s.backward_flops_factor = backward_factor;
  s.pointwise = true;
  s.SetAmp(amp, amp == AmpCategory::kFp32Required
                    ? AutocastSource("fp32 list")
                    : AutocastSource("not listed, runs in its inputs' dtype"));
  return s;
}

// An op whose output is the sum or difference of its inputs (OpSchema::adds_inputs).
OpSchema Additive(OpSchema s) {
  s.adds_inputs = true;
  return s;
}

void RegisterAdditiveOps(OpRegistry& registry) {
  // Sums and differences of known floats fold too (Python-float shape arithmetic, as Mul and Div
  // below: timm's "same" padding amounts).
  OpSchema add = Additive(BinarySchema(
      "Add", [](const Dim& a, const Dim& b) -> std::optional<Dim> { return a + b; }, SaveNothing(),
      "add.Tensor: grad (alpha-scaled); nothing saved", kElementwiseBackwardFactor));
  add.infer_shapes = FoldFloatValues(
      add.infer_shapes, [](double a, double b) -> std::optional<double> { return a + b; });
  registry.Register(std::move(add));
  OpSchema sub = Additive(BinarySchema(
      "Sub", [](const Dim& a, const Dim& b) -> std::optional<Dim> { return a - b; }, SaveNothing(),
      "sub.Tensor: grad, -grad * alpha; nothing saved", kElementwiseBackwardFactor));
  sub.infer_shapes = FoldFloatValues(
      sub.infer_shapes, [](double a, double b) -> std::optional<double> { return a - b; });
  registry.Register(std::move(sub));
}

void RegisterProductOps(OpRegistry& registry) {
  // mul.Tensor: self's gradient needs `other` and other's needs `self`; the codegen saves each
  // operand only when the *other* one requires grad.
  OpSchema mul = BinarySchema(
      "Mul", [](const Dim& a, const Dim& b) -> std::optional<Dim> { return a * b; },
      [](const OpContext& ctx) {
        std::vector<SavedTensor> saved;
        if (InputRequiresGrad(ctx, 1)) saved.push_back(SaveInput(0));
        if (InputRequiresGrad(ctx, 0)) saved.push_back(SaveInput(1));
        return saved;
      },
      "mul.Tensor: self: mul_tensor_backward(grad, other), other: mul_tensor_backward(grad, "
      "self); each operand saved only if the other requires grad",
      kTwoGradientElementwiseBackwardFactor);
  mul.infer_shapes = FoldFloatValues(
      mul.infer_shapes, [](double a, double b) -> std::optional<double> { return a * b; });
  registry.Register(std::move(mul));

  // div.Tensor: self: grad / other; other: -grad * self / other^2. So the divisor is saved
  // whenever either side needs a gradient and the dividend only when the divisor does.
  OpSchema div = BinarySchema(
      "Div", DivideDims,
      [](const OpContext& ctx) {
        std::vector<SavedTensor> saved;
        bool self_grad = InputRequiresGrad(ctx, 0);
        bool other_grad = InputRequiresGrad(ctx, 1);
        if (other_grad) saved.push_back(SaveInput(0));
        if (self_grad || other_grad) saved.push_back(SaveInput(1));
        return saved;
      },
      "div.Tensor: self: grad / other, other: -grad * self / (other * other); divisor saved, "
      "dividend only if the divisor requires grad",
      kTwoGradientElementwiseBackwardFactor);
  div.infer_shapes = FoldFloatValues(BinaryShapeRule(DivideDims, /*divides=*/true),
                                     [](double a, double b) -> std::optional<double> {
                                       if (b == 0.0) return std::nullopt;
                                       return a / b;
                                     });
  registry.Register(std::move(div));
}

void RegisterLigerGatedProducts(OpRegistry& registry) {
  // Liger's gated MLP products (graph/ops/gated_mlp_ops.h), fused from Mul(act(a), b) under
  // --fusions liger (graph/fusion/gated_mlp.cc): both functions save a and b and recompute act(a)
  // in backward. memplan:SwiGlu, silu(a) * b: a sigmoid and two products per output element;
  // memplan:GeGlu, gelu_tanh(a) * b: a GELU and one product.
  struct GatedProduct {
    const char* op_type;
    const char* domain;
    int64_t flops_per_element;
    const char* source;
  };
  for (const GatedProduct& gated :
       {GatedProduct{swiglu::kOpType, swiglu::kDomain, kTranscendentalFlops + 2 * kSimpleFlops,
                     "liger_kernel/ops/swiglu.py, LigerSiLUMulFunction: ctx.save_for_backward(a, "
                     "b); backward recomputes silu(a)"},
        GatedProduct{geglu::kOpType, geglu::kDomain, kGeluFlops + kSimpleFlops,
                     "liger_kernel/ops/geglu.py, LigerGELUMulFunction: ctx.save_for_backward(a, "
                     "b); backward recomputes gelu(a, approximate='tanh')"}}) {
    OpSchema op = BinarySchema(
        gated.op_type, [](const Dim&, const Dim&) -> std::optional<Dim> { return std::nullopt; },
        WhenDifferentiable(AlwaysSave({SaveInput(0), SaveInput(1)})), "",
        kTwoGradientElementwiseBackwardFactor);
    op.saved_source = gated.source;
    op.domain = gated.domain;
    op.cost = PerOutputElementCostRule(gated.flops_per_element);
    registry.Register(std::move(op));
  }
}

void RegisterPow(OpRegistry& registry) {
  // Pow: a trainable exponent is pow.Tensor_Tensor (saves self, exponent, result); a fixed one
  // comes from `x ** c` with a Python number, i.e. pow.Tensor_Scalar, which saves only self.
  OpSchema pow = BinarySchema(
      "Pow", nullptr, WhenDifferentiable([](const OpContext& ctx) {
        if (InputRequiresGrad(ctx, 1))
          return std::vector<SavedTensor>{SaveInput(0), SaveInput(1), SaveOutput(0)};
        return std::vector<SavedTensor>{SaveInput(0)};
      }),
      "pow.Tensor_Scalar: pow_backward(grad, self, exponent); pow.Tensor_Tensor: "
      "pow_backward_self(grad, self, exponent), pow_backward_exponent(grad, self, exponent, "
      "result)",
      kTwoGradientElementwiseBackwardFactor, AmpCategory::kFp32Required);
  // A power of two constants known at import is folded (FoldFloatValues: DINOv2's
  // int(num_positions ** 0.5)).
  pow.infer_shapes =
      FoldFloatValues(BinaryShapeRule(nullptr),
                      [](double x, double y) -> std::optional<double> { return std::pow(x, y); });
  pow.cost = PerOutputElementCostRule(kTranscendentalFlops);
  pow.gradient_inputs = [](const OpContext& ctx) {
    return std::vector<bool>{ctx.has_input(0) && IsFloating(ctx.inputs[0].dtype),
                             InputRequiresGrad(ctx, 1)};
  };
  registry.Register(std::move(pow));
}

void RegisterMaxMin(OpRegistry& registry) {
  // Max/Min of two tensors: torch.maximum / minimum (and torch.max(a, b)), which both exporters
  // write as ONNX's variadic Max/Min with two inputs. Both formulas read both operands.
  // Integer shape arithmetic folds where both sides are constants (a polynomial Dim has no max).
  for (const char* op : {"Max", "Min"}) {
    const bool is_max = op[1] == 'a';
    DimOp fold = [is_max](const Dim& a, const Dim& b) -> std::optional<Dim> {
      auto x = a.constant_value();
      auto y = b.constant_value();
      if (!x || !y) return std::nullopt;
      return Dim(is_max ? std::max(*x, *y) : std::min(*x, *y));
    };
    registry.Register(BinarySchema(
        op, std::move(fold), WhenDifferentiable(AlwaysSave({SaveInput(0), SaveInput(1)})),
        std::string(is_max ? "maximum" : "minimum") +
            ": at::where(self == other, grad / 2, grad).masked_fill_(self < other (> for "
            "minimum), 0) and the same for other: self and other saved",
        kTwoGradientElementwiseBackwardFactor));
  }
}

// Dropout(data, ratio?, training_mode?) -> (output, mask?). The planner simulates training, so
// dropout is taken as active unless its ratio is 0: the ratio attribute (opset < 12), or the
// constant ratio input (opset >= 12), which the importer records as that same attribute
// (graph/onnx_graph_builder.h). With p == 0 PyTorch returns the input and saves no mask.
// On CUDA, dropout is native_dropout (fused kernel) whose mask (result1) is torch.bool; its
// backward is native_dropout_backward(grad, result1, scale): only the mask is kept.
std::vector<SavedTensor> DropoutSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved;
  if (ctx.attrs().GetFloat("ratio", 0.5) == 0.0) return saved;  // p == 0: returns input
  if (ctx.outputs.size() > 1 && ctx.outputs[1].present) {
    saved.push_back(SaveOutput(1));
  } else if (ctx.has_input(0)) {
    saved.push_back(SaveExtra("dropout_mask", DType::kBool, ctx.inputs[0].shape));
  }
  return saved;
}

void RegisterDropout(OpRegistry& registry) {
  OpSchema s;
  s.op_type = "Dropout";
  s.stochastic = true;
  // Elementwise (a draw and a multiply per element): fusible under torch.compile, never
  // recomputed, as the partitioner's random ops (native_dropout).
  s.pointwise = true;
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
    if (outs.size() > 1) {
      outs[1].dtype = DType::kBool;
      outs[1].shape = ctx.inputs[0].shape;
    }
    return outs;
  };
  // One random draw and one multiply per element.
  s.cost = PerOutputElementCostRule(2 * kSimpleFlops);
  s.SetSaved(DerivativesSource("native_dropout: native_dropout_backward(grad, result1, scale); "
                               "result1 is a bool mask on CUDA (CPU's fallback multiplies by a "
                               "mask of the input dtype)"),
             WhenDifferentiable(DropoutSaved));
  s.gradient_inputs = OnlyInput0();
  // torch's native_dropout(input, p: float, train: bool?): ratio and training_mode are numbers.
  s.scalar_argument_inputs = {1, 2};
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFollowInputs, AutocastSource(kNotAutocastListed));
  registry.Register(std::move(s));
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  RegisterUnaryOps(registry);
  RegisterOtherUnaryOps(registry);
  RegisterAdditiveOps(registry);
  RegisterProductOps(registry);
  RegisterLigerGatedProducts(registry);
  RegisterPow(registry);
  RegisterMaxMin(registry);
  RegisterDropout(registry);
}

}  // namespace memplan
