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

// What the four norms share: backward recomputes the normalised values from the saved
// statistics (kNormalizationBackwardFactor); the norms on autocast's fp32 list run in fp32, the
// others in their input's dtype, with statistics in fp32 either way. `fp32_listed` names the ATen
// ops the fp32 list holds for the norm ("layer_norm, native_layer_norm"), null when it is on none.
OpSchema NormSchema(const char* op_type, ShapeRule infer_shapes, int64_t flops_per_element,
                    const char* saved_rule, SavedRule saved, const char* fp32_listed) {
  OpSchema s;
  s.op_type = op_type;
  s.infer_shapes = std::move(infer_shapes);
  s.cost = PerInputElementCostRule(flops_per_element);
  s.SetSaved(DerivativesSource(saved_rule), WhenDifferentiable(std::move(saved)));
  s.backward_flops_factor = kNormalizationBackwardFactor;
  if (fp32_listed) {
    s.SetAmp(AmpCategory::kFp32Required,
             AutocastSource("fp32 list") + " (" + std::string(fp32_listed) + ")");
  } else {
    s.SetAmp(AmpCategory::kFollowInputs,
             AutocastSource("not listed, runs in its input's dtype (statistics in fp32)"));
  }
  return s;
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
//
// native_batch_norm / cudnn_batch_norm: input, weight, bias: ..._backward(grad, input, weight,
// running_mean, running_var, result1 (save_mean), result2 (save_invstd), ...). The running
// statistics are persistent buffers (no extra memory); save_mean/save_invstd are new [C] tensors.
// cuDNN also keeps result3, a reserve space that is empty for plain batch norm.
std::vector<SavedTensor> BatchNormSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1, 3, 4});
  Shape c = ChannelCountKnown(ctx) ? Shape{{ChannelCount(ctx)}} : Shape::Unknown();
  return WithStatistics(std::move(saved), ctx, "save_mean", "save_invstd", c);
}

Expected<std::vector<TensorInfo>> BatchNormShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  DType stats = ctx.has_input(3) ? ctx.inputs[3].dtype : ctx.inputs[0].dtype;
  for (size_t i = 1; i < outs.size(); ++i) {
    outs[i].dtype = stats;
    outs[i].shape = ChannelCountKnown(ctx) ? Shape{{ChannelCount(ctx)}} : Shape::Unknown();
  }
  return outs;
}

OpSchema BatchNormSchema() {
  OpSchema s = NormSchema("BatchNormalization", BatchNormShape, kBatchNormFlopsPerElement,
                          "native_batch_norm / cudnn_batch_norm save input, weight, running_mean, "
                          "running_var, result1 (save_mean [C]) and result2 (save_invstd [C])",
                          BatchNormSaved, /*fp32_listed=*/nullptr);
  s.couples_batch = true;
  // Running mean/var are statistics, not trained.
  s.gradient_inputs = GradientsForFloatingInputsThrough(/*last_slot=*/2);
  return s;
}

// ---------------------------------------------------------------- InstanceNormalization
// PyTorch's instance_norm views X as [1, N*C, ...], repeats weight/bias N times and calls
// batch_norm: saved are X (a view), the repeated weight [N*C] and save_mean/save_invstd [N*C].
std::vector<SavedTensor> InstanceNormSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved{SaveInput(0)};
  const Shape& x = ctx.inputs[0].shape;
  Shape nc = (x.known && x.rank() >= 2) ? Shape{{x.dims[0] * x.dims[1]}} : Shape::Unknown();
  if (ctx.has_input(1)) saved.push_back(SaveExtra("repeated_weight", ctx.inputs[1].dtype, nc));
  return WithStatistics(std::move(saved), ctx, "save_mean", "save_invstd", nc);
}

OpSchema InstanceNormSchema() {
  return NormSchema("InstanceNormalization", OutputLikeInput0, kNormalizationFlopsPerElement,
                    "instance_norm is composite (Normalization.cpp: repeat weight, batch_norm on "
                    "[1, N*C, ...]); native_batch_norm saves input, the repeated weight [N*C], "
                    "save_mean and save_invstd [N*C]",
                    InstanceNormSaved, /*fp32_listed=*/nullptr);
}

// ---------------------------------------------------------------- LayerNormalization
// Inputs X, Scale, B?; attribute axis (default -1); outputs Y, Mean?, InvStdDev? whose shape is
// X's dims before `axis` followed by ones.
Expected<Shape> LayerNormStatShape(const OpContext& ctx) {
  return TrailingNormStatShape(ctx, ctx.attrs().GetInt("axis", -1));
}

// native_layer_norm: input, weight, bias: native_layer_norm_backward(grad, input, shape,
// result1 (mean), result2 (rstd), weight, bias, mask). Mean/rstd have the leading dims of X
// followed by ones. When the node exposes Mean/InvStdDev those outputs are the same tensors.
std::vector<SavedTensor> LayerNormSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1, 2});
  const Shape stat = StatShapeOrUnknown(ctx, ctx.attrs().GetInt("axis", -1));
  const DType stats = StatisticsDType(ctx.inputs[0].dtype);
  saved.push_back(OutputOrExtra(ctx, 1, "mean", stats, stat));
  saved.push_back(OutputOrExtra(ctx, 2, "rstd", stats, stat));
  return saved;
}

Expected<std::vector<TensorInfo>> LayerNormShape(const OpContext& ctx) {
  MEMPLAN_TRY(auto outs, OutputLikeInput0(ctx));
  MEMPLAN_TRY(Shape stat, LayerNormStatShape(ctx));
  DType stash = DTypeFromOnnx(static_cast<int32_t>(ctx.attrs().GetInt("stash_type", 1)))
                    .value_or(DType::kFloat32);
  for (size_t i = 1; i < outs.size(); ++i) {
    outs[i].dtype = stash;
    outs[i].shape = stat;
  }
  return outs;
}

OpSchema LayerNormSchema() {
  return NormSchema("LayerNormalization", LayerNormShape, kNormalizationFlopsPerElement,
                    "native_layer_norm saves input, weight, bias, result1 (mean) and result2 "
                    "(rstd), both of shape X.shape[:axis] + [1]*rest",
                    LayerNormSaved, /*fp32_listed=*/"layer_norm, native_layer_norm");
}

// ---------------------------------------------------------------- GroupNormalization
// native_group_norm: input, weight, bias: native_group_norm_backward(grad, input, result1,
// result2, weight, N, C, HxW, group, mask); mean/rstd are [N, group].
std::vector<SavedTensor> GroupNormSaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved = SaveInput0AndPresent(ctx, /*optional=*/{1});
  const Shape& x = ctx.inputs[0].shape;
  int64_t groups = ctx.attrs().GetInt("num_groups", 1);
  Shape ng = (x.known && x.rank() >= 1) ? Shape{{x.dims[0], Dim(groups)}} : Shape::Unknown();
  return WithStatistics(std::move(saved), ctx, "mean", "rstd", ng);
}

Expected<std::vector<TensorInfo>> GroupNormShape(const OpContext& ctx) {
  if (ctx.attrs().GetInt("num_groups", 0) <= 0)
    return MakeError(NodeError(ctx.node, "num_groups must be a positive attribute"));
  return OutputLikeInput0(ctx);
}

OpSchema GroupNormSchema() {
  return NormSchema("GroupNormalization", GroupNormShape, kNormalizationFlopsPerElement,
                    "native_group_norm saves input, weight, result1 (mean) and result2 (rstd), "
                    "both [N, group]",
                    GroupNormSaved, /*fp32_listed=*/"group_norm");
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& registry) {
  // Scale and shift are trained weights; BatchNorm's running statistics (slots 3, 4) are buffers
  // that become initializers too: MarkTrainableParameters (graph/trainable_parameters.h) then
  // finds no gradient reaching them.
  OpSchema batch_norm = BatchNormSchema();
  batch_norm.weight_inputs = {1, 2, 3, 4};
  registry.Register(std::move(batch_norm));
  for (OpSchema s : {InstanceNormSchema(), LayerNormSchema(), GroupNormSchema()}) {
    s.weight_inputs = {1, 2};
    registry.Register(std::move(s));
  }
}

}  // namespace memplan
