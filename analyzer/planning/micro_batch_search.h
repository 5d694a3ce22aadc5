#pragma once
// PlanTraining's search over one derived program (MicroBatchSearch, in named stages) and the
// limits it judges every micro-batch against. Internal to analyzer/planning/.

#include <optional>

#include "analyzer/planning/candidate_evaluator.h"

namespace memplan::planning {

// What PlanTraining judges every micro-batch against, validated once: the budget, the headroom
// and the per-rank batch a requested global batch leaves each GPU.
struct PlanLimits {
  int64_t budget_bytes = 0;
  int64_t headroom_bytes = 0;
  int64_t ranks = 1;
  std::optional<int64_t> rank_batch;
};

Expected<PlanLimits> PlanLimitsOf(const PlannerOptions& options);

// PlanTraining's search on the program `evaluator` holds, with the limits of `options`.
Expected<TrainingPlan> PlanOn(const Graph& graph, const PlannerOptions& options,
                              const PlanLimits& limits, CandidateEvaluator& evaluator);

}  // namespace memplan::planning
