// BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization.
//
// The planner simulates training, so every norm is taken in training mode whatever the exported
// training_mode attribute says: batch statistics are computed and kept for backward. The
// statistics PyTorch keeps are float32 for fp16/bf16/fp32 inputs (the CUDA kernels' accumulate
// type), float64 for float64; see StatisticsDType.
//
// FLOPs: kBatchNormFlopsPerElement (sum, sum of squares, normalise, scale+shift) for BatchNorm,
// kNormalizationFlopsPerElement for the others (two-pass statistics), per input element.

#include <string>
#include <utility>
#include <vector>

#include "graph/ops/common_rules.h"
#include "graph/ops/normalization_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

Dim ChannelCount(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  if (x.known && x.rank() >= 2) return x.dims[1];
  if (ctx.has_input(1) && ctx.inputs[1].shape.known && ctx.inputs[1].shape.rank() == 1)
    return ctx.inputs[1].shape.dims[0];
  return Dim(0);
}

bool ChannelCountKnown(const OpContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  return (x.known && x.rank() >= 2) ||
         (ctx.has_input(1) && ctx.inputs[1].shape.known && ctx.inputs[1].shape.rank() == 1);
}

std::string NormAmpSource(bool fp32) {
  return AutocastSource(fp32 ? "fp32 list"
                             : "not listed, runs in its input's dtype (statistics in fp32)");
}

// `saved` and then the two statistics a training-mode norm keeps for backward, its mean and
// inverse standard deviation (named as the ATen kernel names them), each of `shape` in X's
// StatisticsDType.
std::vector<SavedTensor> WithStatistics(std::vector<SavedTensor> saved, const OpContext& ctx,
                                        std::string mean, std::string inv_std, const Shape& shape) {
  const DType stats = StatisticsDType(ctx.inputs[0].dtype);
  saved.push_back(SaveExtra(std::move(mean), stats, shape));
  saved.push_back(SaveExtra(std::move(inv_std), stats, shape));
  return saved;
}

// ---------------------------------------------------------------- BatchNormalization
// Inputs X, scale, B, input_mean, input_var; outputs Y, running_mean?, running_var? (opset >= 14)
// or Y, mean?, var?, saved_mean?, saved_var? (opset 9-13). Every extra output is [C].
OpSchema BatchNormSchema() {
  OpSchema s;
  s.op_type = "BatchNormalization";
  s.couples_batch = true;
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
    DType stats = ctx.has_input(3) ? ctx.inputs[3].dtype : ctx.inputs[0].dtype;
    for (size_t i = 1; i < outs.size(); ++i) {
      outs[i].dtype = stats;
      outs[i].shape = ChannelCountKnown(ctx) ? Shape{{ChannelCount(ctx)}} : Shape::Unknown();
    }
    return outs;
  };
  s.cost = PerInputElementCostRule(kBatchNormFlopsPerElement);
  // native_batch_norm / cudnn_batch_norm: input, weight, bias: ..._backward(grad, input, weight,
  // running_mean, running_var, result1 (save_mean), result2 (save_invstd), ...). The running
  // statistics are persistent buffers (no extra memory); save_mean/save_invstd are new [C]
  // tensors. cuDNN also keeps result3, a reserve space that is empty for plain batch norm.
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1, 3, 4});
    Shape c = ChannelCountKnown(ctx) ? Shape{{ChannelCount(ctx)}} : Shape::Unknown();
    return WithStatistics(std::move(saved), ctx, "save_mean", "save_invstd", c);
  });
  // Running mean/var are statistics, not trained.
  s.gradient_inputs = GradientsForFloatingInputsThrough(/*last_slot=*/2);
  s.backward_flops_factor = kNormalizationBackwardFactor;
  s.amp = AmpCategory::kFollowInputs;
  s.saved_source = DerivativesSource(
      "native_batch_norm / cudnn_batch_norm save input, weight, running_mean, "
      "running_var, result1 (save_mean [C]) and result2 (save_invstd [C])");
  s.amp_source = NormAmpSource(false);
  return s;
}

// ---------------------------------------------------------------- InstanceNormalization
// PyTorch's instance_norm views X as [1, N*C, ...], repeats weight/bias N times and calls
// batch_norm: saved are X (a view), the repeated weight [N*C] and save_mean/save_invstd [N*C].
OpSchema InstanceNormSchema() {
  OpSchema s;
  s.op_type = "InstanceNormalization";
  s.infer_shapes = OutputLikeInput0;
  s.cost = PerInputElementCostRule(kNormalizationFlopsPerElement);
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    std::vector<SavedTensor> saved{SaveInput(0)};
    const Shape& x = ctx.inputs[0].shape;
    Shape nc = (x.known && x.rank() >= 2) ? Shape{{x.dims[0] * x.dims[1]}} : Shape::Unknown();
    if (ctx.has_input(1)) saved.push_back(SaveExtra("repeated_weight", ctx.inputs[1].dtype, nc));
    return WithStatistics(std::move(saved), ctx, "save_mean", "save_invstd", nc);
  });
  s.backward_flops_factor = kNormalizationBackwardFactor;
  s.amp = AmpCategory::kFollowInputs;
  s.saved_source = DerivativesSource(
      "instance_norm is composite (Normalization.cpp: repeat weight, batch_norm on "
      "[1, N*C, ...]); native_batch_norm saves input, the repeated weight [N*C], "
      "save_mean and save_invstd [N*C]");
  s.amp_source = NormAmpSource(false);
  return s;
}

// ---------------------------------------------------------------- LayerNormalization
// Inputs X, Scale, B?; attribute axis (default -1); outputs Y, Mean?, InvStdDev? whose shape is
// X's dims before `axis` followed by ones.
Expected<Shape> LayerNormStatShape(const OpContext& ctx) {
  return TrailingNormStatShape(ctx, ctx.attrs().GetInt("axis", -1));
}

OpSchema LayerNormSchema() {
  OpSchema s;
  s.op_type = "LayerNormalization";
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
    MEMPLAN_TRY(Shape stat, LayerNormStatShape(ctx));
    DType stash = DTypeFromOnnx(static_cast<int32_t>(ctx.attrs().GetInt("stash_type", 1)))
                      .value_or(DType::kFloat32);
    for (size_t i = 1; i < outs.size(); ++i) {
      outs[i].dtype = stash;
      outs[i].shape = stat;
    }
    return outs;
  };
  s.cost = PerInputElementCostRule(kNormalizationFlopsPerElement);
  // native_layer_norm: input, weight, bias: native_layer_norm_backward(grad, input, shape,
  // result1 (mean), result2 (rstd), weight, bias, mask). Mean/rstd have the leading dims of X
  // followed by ones. When the node exposes Mean/InvStdDev those outputs are the same tensors.
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1, 2});
    const Shape stat = StatShapeOrUnknown(ctx, ctx.attrs().GetInt("axis", -1));
    const DType stats = StatisticsDType(ctx.inputs[0].dtype);
    saved.push_back(OutputOrExtra(ctx, 1, "mean", stats, stat));
    saved.push_back(OutputOrExtra(ctx, 2, "rstd", stats, stat));
    return saved;
  });
  s.backward_flops_factor = kNormalizationBackwardFactor;
  s.amp = AmpCategory::kFp32Required;
  s.saved_source = DerivativesSource(
      "native_layer_norm saves input, weight, bias, result1 (mean) and result2 "
      "(rstd), both of shape X.shape[:axis] + [1]*rest");
  s.amp_source = NormAmpSource(true) + " (layer_norm, native_layer_norm)";
  return s;
}

// ---------------------------------------------------------------- GroupNormalization
OpSchema GroupNormSchema() {
  OpSchema s;
  s.op_type = "GroupNormalization";
  s.infer_shapes = [](const OpContext& ctx) -> Expected<std::vector<TensorInfo>> {
    if (ctx.attrs().GetInt("num_groups", 0) <= 0)
      return MakeError(NodeError(ctx.node, "num_groups must be a positive attribute"));
    return OutputLikeInput0(ctx);
  };
  s.cost = PerInputElementCostRule(kNormalizationFlopsPerElement);
  // native_group_norm: input, weight, bias: native_group_norm_backward(grad, input, result1,
  // result2, weight, N, C, HxW, group, mask); mean/rstd are [N, group].
  s.saved_for_backward = WhenDifferentiable([](const OpContext& ctx) {
    std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1});
    const Shape& x = ctx.inputs[0].shape;
    int64_t groups = ctx.attrs().GetInt("num_groups", 1);
    Shape ng = (x.known && x.rank() >= 1) ? Shape{{x.dims[0], Dim(groups)}} : Shape::Unknown();
    return WithStatistics(std::move(saved), ctx, "mean", "rstd", ng);
  });
  s.backward_flops_factor = kNormalizationBackwardFactor;
  s.amp = AmpCategory::kFp32Required;
  s.saved_source = DerivativesSource(
      "native_group_norm saves input, weight, result1 (mean) and result2 (rstd), "
      "both [N, group]");
  s.amp_source = NormAmpSource(true) + " (group_norm)";
  return s;
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  registry.Register(BatchNormSchema());
  registry.Register(InstanceNormSchema());
  registry.Register(LayerNormSchema());
  registry.Register(GroupNormSchema());
}

}  // namespace memplan
