// Losses: ONNX SoftmaxCrossEntropyLoss, and the two losses the analyzer appends to a model in the
// "memplan" domain: MseLoss(prediction, label) = mean((prediction - label)^2) and
// SumLoss(prediction, label) = sum(prediction) (label unused). Both memplan losses output a
// float32 scalar. All losses run in fp32 under autocast.

#include "graph/ops/common_rules.h"
#include "graph/ops/op_families.h"
#include "graph/ops/op_registry.h"
#include "graph/ops/shape_helpers.h"

namespace memplan {
namespace {

constexpr const char* kMemplanDomain = "memplan";
constexpr int64_t kMseFlopsPerElement = 3;  // subtract, square, accumulate

// SoftmaxCrossEntropyLoss(scores [N, C, d...], labels [N, d...], weights? [C]) ->
// (output: scalar for reduction mean/sum, [N, d...] for none; log_prob?: scores' shape).
Expected<std::vector<TensorInfo>> CrossEntropyShape(const OpContext& ctx) {
  MEMPLAN_TRY(const TensorInfo* scores, RequiredInput(ctx, 0));
  MEMPLAN_TRY(const TensorInfo* labels, RequiredInput(ctx, 1));
  auto outs = EmptyOutputs(ctx);
  if (outs.empty()) return outs;
  std::string reduction = ctx.attrs().GetString("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    return MakeError(NodeError(ctx.node, "unknown reduction '" + reduction + "'"));
  }
  if (scores->shape.known && scores->shape.rank() < 2) {
    return MakeError(NodeError(ctx.node, "scores must have rank >= 2 ([N, C, ...])"));
  }
  if (scores->shape.known && labels->shape.known &&
      labels->shape.rank() + 1 != scores->shape.rank()) {
    return MakeError(NodeError(ctx.node, "labels must have one dimension fewer than scores"));
  }
  outs[0].dtype = scores->dtype;
  if (reduction == "none") {
    outs[0].shape = labels->shape;
  } else {
    outs[0].shape = Shape{};  // scalar
  }
  if (outs.size() > 1) {
    outs[1].dtype = scores->dtype;
    outs[1].shape = scores->shape;
  }
  return outs;
}

// The dtype cross entropy's [N, C] tensors have: the scores' as the op reads them.
// aten cross_entropy_loss calls log_softmax(self, class_dim, self.scalar_type()), so the log-probs
// are in the scores' dtype (bf16 scores, bf16 log-probs; the kernel accumulates in fp32 inside);
// nll_loss_backward's grad_input is zeros_like(self) and _log_softmax_backward_data returns
// input_dtype: both the same. Autocast casts the scores to fp32 first (cross_entropy_loss is on
// its fp32 list), which the program shows as a cast before the loss.
DType CrossEntropyDType(DType scores) { return IsFloating(scores) ? scores : DType::kFloat32; }

// cross_entropy = nll_loss(log_softmax(scores), labels). _log_softmax saves its result and
// nll_loss_forward saves self (that same log-prob tensor), target and total_weight (a scalar, not
// counted).
std::vector<SavedTensor> CrossEntropySaved(const OpContext& ctx) {
  std::vector<SavedTensor> saved;
  if (ctx.outputs.size() > 1 && ctx.outputs[1].present) {
    saved.push_back(SaveOutput(1));
  } else {
    saved.push_back(
        SaveExtra("log_prob", CrossEntropyDType(ctx.inputs[0].dtype), ctx.inputs[0].shape));
  }
  saved.push_back(SaveInput(1));
  if (ctx.has_input(2)) saved.push_back(SaveInput(2));
  return saved;
}

OpSchema CrossEntropySchema() {
  OpSchema s;
  s.op_type = "SoftmaxCrossEntropyLoss";
  s.infer_shapes = CrossEntropyShape;
  s.cost = PerInputElementCostRule(kSoftmaxFlopsPerElement);
  s.SetSaved(DerivativesSource("_log_softmax saves result; nll_loss_forward: nll_loss_backward("
                               "grad, self, target, weight, reduction, ignore_index, "
                               "total_weight) saves the log-probs, target and weight"),
             WhenDifferentiable(CrossEntropySaved));
  s.gradient_inputs = GradientOnlyForFloatingInput0();
  // Backward runs in two kernels: nll_loss_backward writes the log-probs' gradient ([N, C], the
  // log-probs' dtype), then _log_softmax_backward_data the scores' gradient from it; the first
  // is freed only after the second is written, so a [N, C] tensor more than the input gradient
  // is live (measured on an H100: BERT-base's MLM head at 16 x 512 tokens, 2 x 954 MiB).
  s.backward_workspace = [](const OpContext& ctx) {
    if (ctx.inputs.empty()) return Dim(0);
    const TensorInfo& scores = ctx.inputs[0];
    return TensorBytes(scores.shape.NumElements(), CrossEntropyDType(scores.dtype));
  };
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFp32Required,
           AutocastSource("log_softmax (fp32_set_opt_dtype) and nll_loss (fp32) lists"));
  return s;
}

Expected<std::vector<TensorInfo>> ScalarLossShape(const OpContext& ctx, bool check_label) {
  MEMPLAN_TRY(const TensorInfo* prediction, RequiredInput(ctx, 0));
  if (check_label) {
    MEMPLAN_TRY(const TensorInfo* label, RequiredInput(ctx, 1));
    auto b = BroadcastShapes(prediction->shape, label->shape);
    if (!b) {
      return MakeError(
          NodeError(ctx.node, "prediction and label shapes do not match: " + b.error().message));
    }
  }
  auto outs = EmptyOutputs(ctx);
  if (!outs.empty()) {
    outs[0].dtype = DType::kFloat32;
    outs[0].shape = Shape{};
  }
  return outs;
}

// What sets memplan's two losses apart; they share the rest: the memplan domain, the float32 scalar
// output, a gradient for the prediction alone and fp32 under autocast.
struct ScalarLossSpec {
  const char* op_type;
  bool check_label;  // the label's shape must broadcast with the prediction's
  int64_t flops_per_element;
  const char* saved_rule;  // what derivatives.yaml says backward keeps
  SavedRule saved;
  const char* autocast_list;
};

OpSchema ScalarLossSchema(ScalarLossSpec spec) {
  OpSchema s;
  s.op_type = spec.op_type;
  s.domain = kMemplanDomain;
  s.infer_shapes = [check_label = spec.check_label](const OpContext& ctx) {
    return ScalarLossShape(ctx, check_label);
  };
  s.cost = PerInputElementCostRule(spec.flops_per_element);
  s.SetSaved(DerivativesSource(spec.saved_rule), std::move(spec.saved));
  s.gradient_inputs = GradientOnlyForFloatingInput0();
  s.backward_flops_factor = kElementwiseBackwardFactor;
  s.SetAmp(AmpCategory::kFp32Required, AutocastSource(spec.autocast_list));
  return s;
}

OpSchema MseLossSchema() {
  // mse_loss: self: mse_loss_backward(grad, self, target, reduction), target: the same with the
  // roles swapped: both operands are saved.
  return ScalarLossSchema({
      .op_type = "MseLoss",
      .check_label = true,
      .flops_per_element = kMseFlopsPerElement,
      .saved_rule =
          "mse_loss: mse_loss_backward(grad, self, target, reduction) saves self and target",
      .saved = WhenDifferentiable(
          [](const OpContext& ctx) { return SaveInput0AndPresent(ctx, /*optional=*/{1}); }),
      .autocast_list = "fp32 list (mse_loss)",
  });
}

OpSchema SumLossSchema() {
  return ScalarLossSchema({
      .op_type = "SumLoss",
      .check_label = false,
      .flops_per_element = kSimpleFlops,
      .saved_rule = "sum: grad.expand_symint(self.sym_sizes()) saves no tensor",
      .saved = nullptr,
      .autocast_list = "fp32_set_opt_dtype list (sum)",
  });
}

}  // namespace

void RegisterLossOps(OpRegistry& registry) {
  registry.Register(CrossEntropySchema());
  registry.Register(MseLossSchema());
  registry.Register(SumLossSchema());
}

}  // namespace memplan
