#include "analyzer/program/loss_spec.h"

namespace memplan {

Expected<LossSpec> ResolveLoss(LossKind requested, const std::string& op_type,
                               const std::string& domain, DType output_dtype,
                               const Shape& output_shape, const std::string& output_name,
                               std::optional<size_t> traced_class_axis) {
  if (!output_shape.known) {
    return MakeError("model output '" + output_name +
                     "' has an unknown shape; the loss and its label cannot be sized");
  }
  // No gradient flows from an integer or boolean output (autograd refuses to backpropagate
  // from one), so a loss on it would plan a step that trains nothing.
  if (output_dtype != DType::kUndefined && !IsFloating(output_dtype)) {
    return MakeError("model output '" + output_name + "' is " +
                     std::string(DTypeName(output_dtype)) +
                     ": a loss needs a floating-point output, so choose another loss output");
  }
  const size_t rank = output_shape.rank();
  LossSpec spec;
  spec.kind = requested;
  if (spec.kind == LossKind::kAuto) {
    spec.kind = (IsFloating(output_dtype) && (rank == 2 || rank == 3)) ? LossKind::kCrossEntropy
                                                                       : LossKind::kMse;
  }
  switch (spec.kind) {
    case LossKind::kCrossEntropy:
      if (rank < 2) {
        return MakeError(
            "cross-entropy loss needs [batch, classes], [batch, seq, vocab] or [N, C, d...] "
            "logits, but model output '" +
            output_name + "' has rank " + std::to_string(rank) + "; choose --loss mse or sum");
      }
      spec.op_type = "SoftmaxCrossEntropyLoss";
      spec.domain = "";
      spec.label_dtype = DType::kInt64;
      spec.class_axis = traced_class_axis && *traced_class_axis >= 1 && *traced_class_axis < rank
                            ? *traced_class_axis
                            : CrossEntropyClassAxis(rank);
      spec.label_shape.dims = output_shape.dims;
      spec.label_shape.dims.erase(spec.label_shape.dims.begin() +
                                  static_cast<std::ptrdiff_t>(spec.class_axis));
      break;
    case LossKind::kMse:
      spec.op_type = "MseLoss";
      spec.domain = "memplan";
      spec.label_dtype = output_dtype;
      spec.label_shape = output_shape;
      break;
    case LossKind::kSum:
      spec.op_type = "SumLoss";
      spec.domain = "memplan";
      spec.has_label = false;
      break;
    case LossKind::kAuto:
      break;
  }
  if (!op_type.empty()) {
    spec.op_type = op_type;
    spec.domain = domain;
  }
  return spec;
}

}  // namespace memplan
