// ReduceMean, ReduceSum, ReduceMax (axes as an attribute before opset 13 (Sum) / 18 (others) and
// as input 1 after; keepdims; noop_with_empty_axes) and Softmax, LogSoftmax.
// FLOPs: one add/compare per input element for reductions, kSoftmaxFlopsPerElement per element
// for the softmax family.

#include <algorithm>
#include <set>

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

Expected<std::vector<TensorInfo>> ReduceShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputInInput0DType(ctx));
  const TensorInfo& x = ctx.inputs[0];
  if (outs.empty() || !x.shape.known) return outs;
  std::optional<std::vector<int64_t>> axes;
  if (ctx.attrs().Has("axes")) {
    axes = ctx.attrs().GetInts("axes");
  } else if (ctx.has_input(1)) {
    axes = ConstantInts(ctx.inputs[1]);
    if (!axes) return outs;  // axes computed at run time: leave the shape to ONNX inference
  } else {
    axes = std::vector<int64_t>{};
  }
  bool keepdims = ctx.attrs().GetInt("keepdims", 1) != 0;
  if (axes->empty()) {
    if (ctx.attrs().GetInt("noop_with_empty_axes", 0) != 0) {
      outs[0].shape = x.shape;  // identity
      return outs;
    }
    for (size_t i = 0; i < x.shape.rank(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  std::set<int64_t> reduced;
  for (int64_t a : *axes) {
    MEMPLAN_TRY(int64_t axis, NormalizeAxis(a, x.shape.rank(), ctx.node));
    reduced.insert(axis);
  }
  Shape y;
  for (size_t i = 0; i < x.shape.rank(); ++i) {
    if (reduced.count(static_cast<int64_t>(i)) == 0) {
      y.dims.push_back(x.shape.dims[i]);
    } else if (keepdims) {
      y.dims.push_back(Dim(1));
    }
  }
  outs[0].shape = std::move(y);
  return outs;
}

OpSchema ReduceSchema(const char* op_type, SavedRule saved, const std::string& saved_source,
                      AmpCategory amp, const std::string& amp_source) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = ReduceShape;
  s.cost = PerInputElementCostRule(kSimpleFlops);
  s.saved_for_backward = std::move(saved);
  s.gradient_inputs = GradientOnlyForFloatingInput0();
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.amp = amp;
  s.saved_source = DerivativesSource(saved_source);
  s.amp_source = AutocastSource(amp_source);
  return s;
}

Expected<std::vector<TensorInfo>> SoftmaxShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  const Shape& x = ctx.inputs[0].shape;
  if (!outs.empty() && x.known && x.rank() > 0) {
    // Validate the axis (default -1 since opset 13, 1 before; both in range for rank >= 2).
    MEMPLAN_RETURN_IF_ERROR(NormalizeAxis(ctx.attrs().GetInt("axis", -1), x.rank(), ctx.node));
  }
  return outs;
}

OpSchema SoftmaxSchema(const char* op_type, const char* aten) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = SoftmaxShape;
  s.cost = PerOutputElementCostRule(kSoftmaxFlopsPerElement);
  s.saved_for_backward = WhenDifferentiable(AlwaysSave({SaveOutput(0)}));
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.amp = AmpCategory::kFp32Required;
  s.saved_source = DerivativesSource(
      std::string(aten) +
      ": ..._backward_data(grad, result, dim, self.scalar_type()) saves the output");
  s.amp_source = AutocastSource("fp32_set_opt_dtype list (softmax, log_softmax)");
  return s;
}

}  // namespace

void RegisterReductionOps(OpRegistry& registry) {
  registry.Register(ReduceSchema(
      "ReduceSum", SaveNothing(),
      "sum.dim_IntList: sum_backward(grad, self.sym_sizes(), dim, keepdim) saves no tensor",
      AmpCategory::kFp32Required, "fp32_set_opt_dtype list (sum)"));
  registry.Register(ReduceSchema(
      "ReduceMean", SaveNothing(),
      "mean.dim: mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim) saves no "
      "tensor (torch <= 1.13 saved self)",
      AmpCategory::kFollowInputs, "mean is not listed, runs in its input's dtype"));
  registry.Register(
      ReduceSchema("ReduceMax", WhenDifferentiable([](const OpContext&) {
                     return std::vector<SavedTensor>{SaveInput(0), SaveOutput(0)};
                   }),
                   "amax: scale_grad_by_count(restore_reduced_dims(grad, dim, keepdim), "
                   "restore_reduced_dims(result, dim, keepdim) == self, dim) saves self and result",
                   AmpCategory::kFollowInputs, "amax is not listed, runs in its input's dtype"));
  registry.Register(SoftmaxSchema("Softmax", "_softmax"));
  registry.Register(SoftmaxSchema("LogSoftmax", "_log_softmax"));
}

}  // namespace memplan
