#pragma once
// The simple recompute schedules: references for the optimal planner and choices a user may
// force. Each returns a schedule with its exact predicted peak (chain_schedule_simulator.h); none
// looks at a budget.

#include "analyzer/recompute/chain.h"
#include "analyzer/recompute/recompute_schedule.h"
#include "graph/expected.h"

namespace memplan {

// Every stage stored: no recompute, the largest peak.
Expected<RecomputeSchedule> PlanNoRecompute(const Chain& chain);

// Every stage recomputed, each in its own segment: only the stage outputs are kept through
// forward (what wrapping every block in torch.utils.checkpoint does). Every forward runs twice.
Expected<RecomputeSchedule> PlanRecomputeAll(const Chain& chain);

enum class SqrtSpacing : uint8_t {
  kByStageCount,  // Chen et al. 2016, section 4.1: segments of ceil(sqrt(L)) stages
  kByMemory,      // their greedy variant: close a segment once its stored bytes reach
                  // total stored bytes / sqrt(L), so segments hold about equal memory
};

struct SqrtCheckpointOptions {
  SqrtSpacing spacing = SqrtSpacing::kByStageCount;
};

// Chen et al. "Training Deep Nets with Sublinear Memory Cost": about sqrt(L) recomputed segments
// of about sqrt(L) stages; the last segment is stored, since its backward follows the forward at
// once and recomputing it would save nothing at the peak.
Expected<RecomputeSchedule> PlanSqrtCheckpoints(const Chain& chain,
                                                const SqrtCheckpointOptions& options = {});

}  // namespace memplan
