#include "analyzer/report/fused_loss_advice.h"

#include <sstream>

#include "analyzer/text/memory_size.h"

namespace memplan {

bool PeakIsAtLoss(const TrainingPlan& plan) {
  const LogicalTime at = plan.simulation.peak_at.step;
  if (at < 0 || static_cast<size_t>(at) >= plan.program.steps.size()) return false;
  const StepKind kind = plan.program.step(at).kind;
  return kind == StepKind::kLoss || kind == StepKind::kLossBackward;
}

std::optional<AdviceItem> FusedLossAdvice(const TrainingPlan& unfused, const TrainingPlan& fused) {
  if (!fused.feasible) return std::nullopt;
  // Capacity is compared where the plans recommend from: the largest micro-batch under the
  // headroom (the throughput knee may pick a smaller m in either plan). A fixed micro-batch has
  // no capacity to compare, only the peak at that m.
  const int64_t m = unfused.largest_within_headroom;
  const int64_t fused_m = fused.largest_within_headroom;
  std::ostringstream s;
  s << "The peak is in the loss (" << unfused.simulation.peak_step_name
    << "), where cross entropy's log-probabilities and their gradients over the whole vocabulary "
       "are live: --fused-loss (Liger's fused linear cross entropy, the logits never "
       "materialised) ";
  if (!unfused.feasible) {
    s << "fits m=" << fused.chosen.micro_batch << " (peak " << FormatBytes(fused.chosen.peak_bytes)
      << " of " << FormatBytes(fused.budget_bytes) << "), where nothing fits without it.";
  } else if (!unfused.micro_batch_fixed && fused_m > m) {
    s << "raises the largest micro-batch under the headroom from m=" << m << " to m=" << fused_m
      << ".";
  } else if (unfused.micro_batch_fixed && fused.chosen.micro_batch == unfused.chosen.micro_batch &&
             fused.chosen.peak_bytes < unfused.chosen.peak_bytes) {
    s << "lowers the peak at m=" << unfused.chosen.micro_batch << " from "
      << FormatBytes(unfused.chosen.peak_bytes) << " to " << FormatBytes(fused.chosen.peak_bytes)
      << ".";
  } else {
    return std::nullopt;
  }
  return AdviceItem{"fused-loss", s.str()};
}

}  // namespace memplan
