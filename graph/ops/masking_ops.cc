// Ops models use to build masks and index patterns rather than to transform activations:
//   * Mod(A, B) (fmod attribute): Swin's shifted-window mask, and shape arithmetic such as
//     `(window - H % window) % window` (padding to a multiple), so integer contents fold;
//   * Trilu(input, k?) (upper attribute): causal masks;
//   * Bernoulli(input) (dtype, seed attributes): random masks (stochastic depth, dropout written
//     out by hand);
//   * RandomUniformLike / RandomNormalLike(input) (dtype, high/low or mean/scale, seed): what
//     torch.onnx writes for rand_like / randn_like and for bernoulli (a uniform draw compared
//     with the probability, torch 1.13).
// None of them saves a tensor for backward: remainder/fmod only need the divisor when the divisor
// itself is trained (never, for masks); tril/triu's backward is grad.tril(k); bernoulli and the
// random draws have no gradient.

#include <algorithm>
#include <limits>

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/shape_ops_folding.h"

namespace memplan {
namespace {

// ONNX Mod on integers: fmod=0 takes the divisor's sign (Python %), fmod=1 the dividend's (C).
std::optional<int64_t> IntegerMod(int64_t a, int64_t b, bool fmod) {
  if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return std::nullopt;
  int64_t r = a % b;
  if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Folds constant integer contents, broadcasting a one-element side; nullopt otherwise.
std::optional<std::vector<Dim>> ModContents(const TensorInfo& a, const TensorInfo& b, bool fmod) {
  if (!a.contents || !b.contents || a.contents->empty() || b.contents->empty()) return std::nullopt;
  const auto& ca = *a.contents;
  const auto& cb = *b.contents;
  if (ca.size() != cb.size() && ca.size() != 1 && cb.size() != 1) return std::nullopt;
  std::vector<Dim> out;
  for (size_t i = 0; i < std::max(ca.size(), cb.size()); ++i) {
    auto x = ca[ca.size() == 1 ? 0 : i].constant_value();
    auto y = cb[cb.size() == 1 ? 0 : i].constant_value();
    if (!x || !y) return std::nullopt;
    auto r = IntegerMod(*x, *y, fmod);
    if (!r) return std::nullopt;
    out.emplace_back(*r);
  }
  return out;
}

// The broadcast of A and B, with its integer contents folded where both fold.
Expected<std::vector<TensorInfo>> ModShape(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* a, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* b, RequiredInput(ctx, 1));
  MEMPLAN_RETURN_IF_ERROR(RefuseZeroDivisor(ctx.node, *b));
  auto shape = BroadcastShapes(a->shape, b->shape);
  if (!shape) return MakeError(NodeError(ctx.node, shape.error().message));
  auto outs = SingleOutput(a->dtype, *shape);
  if (IsInteger(a->dtype)) {
    outs[0].contents = ModContents(*a, *b, ctx.attrs().GetInt("fmod", 0) != 0);
    // seq % window: a new symbol per element, determined once seq is bound (as Div's).
    if (!outs[0].contents) outs[0].contents = FreshContents(ctx, *a, *b, "mod");
    // As Div's: [1, S] % [S, 1] broadcasts beyond the one-to-one pairing.
    if (outs[0].contents &&
        FoldableElementCount(*shape) != static_cast<int64_t>(outs[0].contents->size()))
      outs[0].contents.reset();
  }
  return outs;
}

OpSchema ModSchema() {
  OpSchema s;
  s.op_type = "Mod";
  s.infer_shapes = ModShape;
  // One division, one multiply and one subtract per element.
  s.cost = PerOutputElementCostRule(3 * kSimpleFlops);
  s.SetSaved(DerivativesSource("remainder.Tensor / fmod.Tensor: self: grad, other: -grad * "
                               "self.div(other, rounding_mode); self and other saved only for "
                               "other's grad"),
             [](const OpContext& ctx) {
               if (!InputRequiresGrad(ctx, 1)) return std::vector<SavedTensor>{};
               return std::vector<SavedTensor>{SaveInput(0), SaveInput(1)};
             });
  s.backward_flops_factor = kTwoGradientElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFollowInputs, AutocastSource("not listed, runs in its inputs' dtype"));
  return s;
}

OpSchema TriluSchema() {
  OpSchema s;
  s.op_type = "Trilu";
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
    if (x->shape.known && x->shape.rank() < 2)
      return MakeError(NodeError(ctx.node, "input must have rank >= 2"));
    return SingleOutput(x->dtype, x->shape);
  };
  // A compare and a select per element.
  s.cost = PerOutputElementCostRule(2 * kSimpleFlops);
  s.SetSaved(
      DerivativesSource("tril / triu: grad.tril(diagonal) / grad.triu(diagonal); nothing saved"));
  s.gradient_inputs = GradientsAtSlots({0});
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFollowInputs, AutocastSource(kNotAutocastListed));
  return s;
}

// CumSum(x, axis): running sums along one axis (exclusive, reverse attributes). RoBERTa's and
// OPT's position ids are a cumsum of the padding mask. derivatives.yaml: cumsum:
// cumsum_backward(grad, dim), the reversed running sum of the gradient; nothing saved.
OpSchema CumSumSchema() {
  OpSchema s;
  s.op_type = "CumSum";
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
    return SingleOutput(x->dtype, x->shape);
  };
  s.cost = PerOutputElementCostRule(kSimpleFlops);
  s.SetSaved(DerivativesSource("cumsum: cumsum_backward(grad, dim); nothing saved"));
  s.gradient_inputs = GradientsAtSlots({0});
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFp32Required, AutocastSource("fp32 list") + " (cumsum)");
  return s;
}

// Bernoulli, RandomUniformLike, RandomNormalLike: a draw per element of the input's shape, in
// the `dtype` attribute's type (else the input's); no gradient (bernoulli's probabilities and
// rand_like's input give no gradient), seeded per node and micro-batch like Dropout.
OpSchema RandomDrawSchema(const char* op_type, const char* derivatives) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
    DType dtype = x->dtype;
    if (ctx.attrs().Has("dtype")) {
      dtype = DTypeFromOnnx(static_cast<int32_t>(ctx.attrs().GetInt("dtype", 0)))
                  .value_or(DType::kUndefined);
    }
    return SingleOutput(dtype, x->shape);
  };
  // One random draw and one compare or scale per element.
  s.cost = PerOutputElementCostRule(2 * kSimpleFlops);
  s.SetSaved(DerivativesSource(derivatives));
  s.gradient_inputs = [](const OpContext& ctx) {
    return std::vector<bool>(ctx.inputs.size(), false);
  };
  s.backward_flops_factor = 0.0;
  s.stochastic = true;
  s.SetAmp(AmpCategory::kFollowInputs, AutocastSource(kNotAutocastListed));
  return s;
}

}  // namespace

void RegisterMaskingOps(OpRegistry& registry) {
  registry.Register(ModSchema());
  registry.Register(TriluSchema());
  registry.Register(CumSumSchema());
  registry.Register(RandomDrawSchema(
      "Bernoulli", "bernoulli: self: zeros_like(grad) (not differentiable); nothing saved"));
  registry.Register(
      RandomDrawSchema("RandomUniformLike", "rand_like: not differentiable; nothing saved"));
  registry.Register(
      RandomDrawSchema("RandomNormalLike", "randn_like: not differentiable; nothing saved"));
}

}  // namespace memplan
