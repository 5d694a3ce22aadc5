#include "analyzer/baseline/pinned_plan.h"

#include "analyzer/vocabulary/precision.h"
#include "analyzer/vocabulary/recompute_choice.h"

namespace memplan {

PlanFlags PinnedPlanOf(const TrainingPlan& plan) {
  const PlanCandidate& chosen = plan.chosen;
  PlanFlags pinned;
  pinned.micro_batch = chosen.micro_batch;
  if (plan.global_batch_requested) {
    pinned.global_batch = plan.requested_global_batch;  // k = ceil(G / m), as planned
  } else if (chosen.accumulation_steps > 1) {
    pinned.global_batch = chosen.micro_batch * chosen.accumulation_steps;
  }
  pinned.precision = std::string(PrecisionName(chosen.precision));
  // A recompute label is a recompute flag value except kCustom, which no flag names.
  if (chosen.recompute != RecomputeLabel::kCustom)
    pinned.recompute = std::string(RecomputeLabelName(chosen.recompute));
  // The unit the recompute set was chosen at, so a replay checkpoints modules (or nodes) again
  // whatever the default resolves to then.
  if (chosen.recompute != RecomputeLabel::kNone && chosen.recompute != RecomputeLabel::kCustom)
    pinned.recompute_unit = std::string(RecomputeUnitName(plan.recompute_unit));
  return pinned;
}

PlanFlags OverlayPlanFlags(PlanFlags configured, const PlanFlags& pinned) {
  for (const PlanFlagSpec& spec : kPlanFlagTable) {
    switch (spec.type) {
      case PlanFlagType::kPositiveInt:
        if (pinned.*spec.integer) configured.*spec.integer = pinned.*spec.integer;
        break;
      case PlanFlagType::kText:
        if (pinned.*spec.text) configured.*spec.text = pinned.*spec.text;
        break;
      case PlanFlagType::kDims:
        for (const auto& [name, size] : pinned.dims) configured.dims[name] = size;
        break;
      case PlanFlagType::kSwitch:
        configured.*spec.flag = configured.*spec.flag || pinned.*spec.flag;
        break;
    }
  }
  if (pinned.micro_batch) configured.batch.reset();
  return configured;
}

PlanFlags WithoutFixedMicroBatch(PlanFlags flags) {
  flags.batch.reset();
  flags.micro_batch.reset();
  return flags;
}

bool FixesMicroBatch(const PlanFlags& flags) {
  return flags.batch.has_value() || flags.micro_batch.has_value();
}

}  // namespace memplan
