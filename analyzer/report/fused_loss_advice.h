#pragma once
// The `--fused-loss` suggestion (issue 43): when the plan's peak is at the loss (the step that
// computes cross entropy or its backward, where the [tokens, vocab] log-probs and their gradients
// live), the CLI plans the same request again with the LM head and the loss fused
// (analyzer/derivation/fused_loss_plan.h) and, where that plan does better, says by how much
// with both plans' numbers. GPT-2 small on an A100-40GB in bf16 with every block checkpointed
// peaks in the loss backward and fits m=50 under the 5% headroom; fused, m=455.

#include <optional>

#include "analyzer/planning/planner.h"
#include "analyzer/report/advice.h"

namespace memplan {

// True when the plan's peak step is the loss or the loss's backward (StepKind kLoss,
// kLossBackward): only then can fusing the loss lower the peak by the logits' tensors.
bool PeakIsAtLoss(const TrainingPlan& plan);

// Advice "fused-loss" comparing the plan as asked with the same request planned with
// --fused-loss: a larger micro-batch under the headroom ("from m=50 to m=455"), a plan where
// none fitted, or, for a fixed micro-batch, a lower peak at it. nullopt when the fused plan does
// not fit or is no better.
std::optional<AdviceItem> FusedLossAdvice(const TrainingPlan& unfused, const TrainingPlan& fused);

}  // namespace memplan
