// MaxPool (optional Indices output), AveragePool, GlobalAveragePool.
// FLOPs: one compare/add per window element per output element (prod(kernel) * elements(Y));
// GlobalAveragePool one add per input element. Backward scatters each output gradient back over
// its window: backward_flops_factor 1.

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/window_rules.h"

namespace memplan {
namespace {

Expected<std::vector<TensorInfo>> PoolShape(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* x, RequiredInput(ctx, 0));
  auto outs = EmptyOutputs(ctx);
  for (size_t i = 0; i < outs.size(); ++i) outs[i].dtype = i == 0 ? x->dtype : DType::kInt64;
  if (outs.empty() || !x->shape.known) return outs;
  if (x->shape.rank() < 3) {
    return MakeError(NodeError(ctx.node, "input must have rank >= 3 ([N, C, spatial...]), got " +
                                             std::to_string(x->shape.rank())));
  }
  if (!ctx.attrs().Has("kernel_shape"))
    return MakeError(NodeError(ctx.node, "missing 'kernel_shape' attribute"));
  size_t spatial = x->shape.rank() - 2;
  MEMPLAN_TRY(WindowAttributes window, ReadWindowAttributes(ctx.node, spatial, {}));
  Shape y;
  y.dims = {x->shape.dims[0], x->shape.dims[1]};
  for (size_t a = 0; a < spatial; ++a) {
    MEMPLAN_TRY(std::optional<Dim> d, WindowOutputDim(ctx.node, x->shape.dims[a + 2], window, a));
    if (!d) d = FreshDim(ctx, "pool_out");
    if (!d) return outs;
    if (auto c = d->constant_value(); c && *c <= 0) {
      return MakeError(
          NodeError(ctx.node, "output spatial size " + std::to_string(*c) + " is not positive"));
    }
    y.dims.push_back(*d);
  }
  for (auto& out : outs) out.shape = y;  // Indices has Y's shape
  return outs;
}

OpCost WindowCost(const OpContext& ctx) {
  int64_t window = 1;
  for (int64_t k : ctx.attrs().GetInts("kernel_shape")) window *= k;
  return PerOutputElementCost(ctx, window);
}

// max_pool2d_with_indices: self: max_pool2d_with_indices_backward(grad, self, ..., result1): the
// input and the int64 argmax indices (shape of Y) are kept.
std::vector<SavedTensor> MaxPoolSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved{SaveInput(0)};
  if (ctx.outputs.size() > 1 && ctx.outputs[1].present) {
    saved.push_back(SaveOutput(1));
  } else {
    Shape y = ctx.outputs.empty() ? Shape::Unknown() : ctx.outputs[0].shape;
    saved.push_back(SaveExtra("indices", DType::kInt64, y));
  }
  return saved;
}

OpSchema MaxPoolSchema() {
  return WindowedSchema("MaxPool", PoolShape, WindowCost,
                        "max_pool2d_with_indices / max_pool3d_with_indices save self and result1 "
                        "(int64 indices, the output's shape)",
                        WhenDifferentiable(MaxPoolSaved));
}

OpSchema AveragePoolSchema() {
  return WindowedSchema("AveragePool", PoolShape, WindowCost,
                        "avg_pool2d / avg_pool3d: avg_pool2d_backward(grad, self, ...) saves self",
                        WhenDifferentiable(AlwaysSave({SaveInput(0)})));
}

// GlobalAveragePool is adaptive_avg_pool2d(x, 1) in PyTorch, which AdaptiveAveragePooling.cpp
// lowers to input.mean({-1, -2}, keepdim=true) when the output is 1x1 (3-D: mean over 3 dims).
// mean.dim's backward needs only sizes and numel, so nothing is saved. (torch <= 1.13's
// mean.dim formula used self.sizes() and so saved self; current derivatives.yaml does not.)
Expected<std::vector<TensorInfo>> GlobalPoolShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputInInput0DType(ctx));
  const TensorInfo& x = ctx.inputs[0];
  if (outs.empty() || !x.shape.known) return outs;
  if (x.shape.rank() < 3) {
    return MakeError(
        NodeError(ctx.node, "input must have rank >= 3, got " + std::to_string(x.shape.rank())));
  }
  Shape y = x.shape;
  for (size_t i = 2; i < y.rank(); ++i) y.dims[i] = Dim(1);
  outs[0].shape = std::move(y);
  return outs;
}

OpSchema GlobalAveragePoolSchema() {
  return WindowedSchema("GlobalAveragePool", GlobalPoolShape, PerInputElementCostRule(kSimpleFlops),
                        "adaptive_avg_pool2d(x, 1) = x.mean({-1,-2}, keepdim) "
                        "(ATen AdaptiveAveragePooling.cpp); mean.dim: mean_backward(grad, "
                        "self.sym_sizes(), dim, self.sym_numel(), keepdim) saves no tensor");
}

}  // namespace

void RegisterPoolingOps(OpRegistry& registry) {
  registry.Register(MaxPoolSchema());
  registry.Register(AveragePoolSchema());
  registry.Register(GlobalAveragePoolSchema());
}

}  // namespace memplan
