#pragma once
// Which loss the training program appends to the model output: the one type the planner
// (analyzer/program/loss_spec.h), the runtime's loss kernels and the CLI share.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analyzer/vocabulary/name_table.h"

namespace memplan {

#define MEMPLAN_LOSS_KINDS(X)                                                                     \
  X(kAuto, "auto") /* a request only: cross entropy for [batch, classes] logits, mse otherwise */ \
  /* logits against class ids, one per position (-100 ignored); see below */                      \
  X(kCrossEntropy, "cross_entropy")                                                               \
  X(kMse, "mse") /* mean squared error against a target of the prediction's shape */              \
  X(kSum, "sum") /* the sum of the output's elements; no label (a memory benchmark's loss) */
// "cross_entropy" -> kCrossEntropy; error "unknown loss 'x' (choose one of: auto, ...)".
MEMPLAN_VOCABULARY(LossKind, MEMPLAN_LOSS_KINDS, "loss");

// Which dimension of cross-entropy logits holds the classes; the labels have the logits' shape
// without it. The last one for [batch, classes] and for a language model's [batch, seq, vocab] (the
// logits torch's LM losses flatten to rows); dimension 1 of [N, C, d1, d2, ...] at rank 4 and
// above, the per-pixel / per-voxel loss of segmentation models, as F.cross_entropy and ONNX
// SoftmaxCrossEntropyLoss take it. Rank 1 has no batch: it is refused before this is asked.
// Whether the loss is a mean over the batch's samples (cross entropy and mse reduce by mean, as
// PyTorch's default reduction does) rather than a sum. Gradient accumulation divides every
// micro-batch's loss by the number of micro-batches k (as the exported loops do, `loss / k`, and
// DDP averages over ranks): for a mean that makes k micro-batches one batch of k times the
// samples; for a sum over the samples it gives the mean of the micro-batches' sums, 1/k of the
// whole batch's sum. (A sum of an output without the batch dimension, such as the fused linear
// cross entropy's scalar, keeps the reduction the model made: runtime/verification.cc.)
inline bool LossAveragesOverBatch(LossKind kind) { return kind != LossKind::kSum; }

inline size_t CrossEntropyClassAxis(size_t logits_rank) { return logits_rank == 3 ? 2 : 1; }

}  // namespace memplan
