#pragma once
// The plan a baseline pins: what the planner chose for a configuration (micro-batch, global batch
// and so accumulation, precision, recompute), written as plan flags so `memplan check` can replay
// it. Replaying matters: re-planning a grown model lets the planner pick a smaller micro-batch,
// and the peak then shrinks although the model got bigger (ResNet-18 -> ResNet-50 read as an
// improvement). The pinned flags go through the one plan-flag table (plan_flags.h), so a flag
// another part of memplan adds is stored and replayed the same way; a flag the planner resolves
// (an "auto" that becomes one choice) gets one line in PinnedPlanOf.

#include <string>

#include "analyzer/baseline/plan_flags.h"
#include "analyzer/planning/planner.h"

namespace memplan {

// The chosen plan of `plan` as flags: micro_batch, global_batch (the requested G, or m * k when
// the plan accumulates without one), precision, recompute and its unit (when it recomputes) as
// the plan resolved them. A recompute set no flag can name (a caller-given custom set) is left
// out.
PlanFlags PinnedPlanOf(const TrainingPlan& plan);

// `configured` with every flag `pinned` sets replacing its own. A pinned micro-batch replaces
// --batch too (both name the micro-batch).
PlanFlags OverlayPlanFlags(PlanFlags configured, const PlanFlags& pinned);

// `flags` without a fixed micro-batch (--batch, --micro-batch): what the planner searches to find
// the largest micro-batch that fits.
PlanFlags WithoutFixedMicroBatch(PlanFlags flags);

// True when `flags` fix the micro-batch.
bool FixesMicroBatch(const PlanFlags& flags);

}  // namespace memplan
