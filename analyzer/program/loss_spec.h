#pragma once
// Which loss the training program appends to the model output, and the label it needs.

#include <optional>
#include <string>

#include "analyzer/program/training_program.h"
#include "graph/dim.h"
#include "graph/dtype.h"
#include "graph/expected.h"

namespace memplan {

struct LossSpec {
  LossKind kind = LossKind::kMse;  // resolved, never kAuto
  std::string op_type;             // registry entry of the loss op
  std::string domain;
  bool has_label = true;
  DType label_dtype = DType::kUndefined;
  Shape label_shape;
  size_t class_axis = 1;  // cross entropy: the logits' class dimension
};

// Resolves kAuto (cross entropy for rank-2/3 floating logits [batch, classes] or
// [batch, seq, vocab], mse otherwise: a rank-4 output may be a segmentation map or an image, so
// per-pixel cross entropy is asked for explicitly) and the label: int64 class ids, the logits'
// shape without the class axis ([batch], [batch, seq], [N, H, W]...), for cross entropy,
// the output's dtype and shape for mse, none for sum. The class axis is `traced_class_axis`
// where the graph tells it (analyzer/derivation/logits_class_axis.h: [N, T, C] logits transposed
// to [N, C, T] keep their classes at 1), CrossEntropyClassAxis(rank) otherwise. Empty
// op_type/domain pick the built-in op (ai.onnx SoftmaxCrossEntropyLoss, memplan MseLoss, memplan
// SumLoss). Errors: unknown output shape, cross entropy on an output of rank below 2.
Expected<LossSpec> ResolveLoss(LossKind requested, const std::string& op_type,
                               const std::string& domain, DType output_dtype,
                               const Shape& output_shape, const std::string& output_name,
                               std::optional<size_t> traced_class_axis = std::nullopt);

}  // namespace memplan
