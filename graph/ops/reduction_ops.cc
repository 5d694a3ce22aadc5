// ReduceMean, ReduceSum, ReduceMax (axes as an attribute before opset 13 (Sum) / 18 (others) and
// as input 1 after; keepdims; noop_with_empty_axes) and Softmax, LogSoftmax.
// FLOPs: one add/compare per input element for reductions, kSoftmaxFlopsPerElement per element
// for the softmax family.

#include <algorithm>
#include <set>

#include "graph/ops/common_rules.h"
#include "graph/ops/max_dim_op.h"
#include "graph/ops/normalization_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"
#include "graph/ops/variance_op.h"

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

// memplan:MaxDim: the values reduced as ReduceMax's output, the indices int64 of the same shape.
Expected<std::vector<TensorInfo>> MaxDimShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, ReduceShape(ctx));
  if (outs.size() > 1 && outs[1].present) {
    outs[1].dtype = DType::kInt64;
    outs[1].shape = outs[0].shape;
  }
  return outs;
}

// max.dim keeps its indices: output 1 when the node exposes them (an ArgMax was fused in), else
// a buffer of the values' shape.
std::vector<SavedTensor> MaxDimSaved(const OpContext& ctx) {
  Shape values = ctx.outputs.empty() ? Shape{} : ctx.outputs[0].shape;
  return {OutputOrExtra(ctx, 1, max_dim::kIndices, DType::kInt64, std::move(values))};
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
  s.normalises_over_axis = true;
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
  // The other reductions exporters write: each keeps self and result, as its torch op.
  auto self_and_result = WhenDifferentiable([](const OpContext&) {
    return std::vector<SavedTensor>{SaveInput(0), SaveOutput(0)};
  });
  registry.Register(ReduceSchema("ReduceMin", self_and_result,
                                 "amin: scale_grad_by_count(..., result == self, dim) saves self "
                                 "and result",
                                 AmpCategory::kFollowInputs,
                                 "amin is not listed, runs in its "
                                 "input's dtype"));
  for (const char* op : {"ReduceL1", "ReduceL2"}) {
    registry.Register(ReduceSchema(
        op, self_and_result,
        "linalg_vector_norm: linalg_vector_norm_backward(grad, self, ord, result, dim, keepdim) "
        "saves self and result",
        AmpCategory::kFp32Required, "fp32_set_opt_dtype list (linalg_vector_norm)"));
  }
  registry.Register(ReduceSchema(
      "ReduceLogSumExp", self_and_result,
      "logsumexp: logsumexp_backward(grad, self, result, dim, keepdim) saves self and result",
      AmpCategory::kFp32Required, "fp32 list (logsumexp)"));
  registry.Register(ReduceSchema(
      "ReduceProd", self_and_result,
      "prod.dim_int: prod_backward(grad, self.to(grad.scalar_type()), result, dim, keepdim) saves "
      "self and result",
      AmpCategory::kFp32Required, "fp32_set_opt_dtype list (prod)"));
  registry.Register(ReduceSchema("ReduceSumSquare", WhenDifferentiable(AlwaysSave({SaveInput(0)})),
                                 "x.pow(2).sum(dim): pow.Tensor_Scalar saves self, sum nothing",
                                 AmpCategory::kFp32Required, "fp32 list (pow)"));

  OpSchema max_dim = ReduceSchema(
      max_dim::kOpType, WhenDifferentiable(MaxDimSaved),
      "max.dim: value_selecting_reduction_backward_symint(grad, dim, indices, self.sym_sizes(), "
      "keepdim) saves indices only",
      AmpCategory::kFollowInputs, "max is not listed, runs in its input's dtype");
  max_dim.domain = max_dim::kDomain;
  max_dim.infer_shapes = MaxDimShape;
  registry.Register(std::move(max_dim));
  // Mean, subtract, square, mean: three simple FLOPs per input element.
  OpSchema var = ReduceSchema(
      variance::kOpType, WhenDifferentiable(AlwaysSave({SaveInput(0)})),
      "var.correction: var_backward(grad, self, dim, correction, keepdim) saves self only",
      AmpCategory::kFollowInputs, "var is not listed, runs in its input's dtype");
  var.domain = variance::kDomain;
  var.cost = PerInputElementCostRule(3 * kSimpleFlops);
  registry.Register(std::move(var));
  registry.Register(SoftmaxSchema("Softmax", "_softmax"));
  registry.Register(SoftmaxSchema("LogSoftmax", "_log_softmax"));
}

}  // namespace memplan
