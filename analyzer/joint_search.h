#pragma once
// The joint search over the four knobs: precision x recompute x micro-batch, with accumulation
// derived from the global batch. For each precision and recompute choice it runs the micro-batch
// planner (analyzer/planner.h), then picks the plan with the highest estimated samples/s under
// the budget and keeps the memory-vs-throughput Pareto frontier as the candidates table.

#include <string>
#include <vector>

#include "analyzer/planner.h"
#include "analyzer/vocabulary/precision.h"
#include "analyzer/vocabulary/recompute_choice.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

struct SearchOptions {
  PrecisionChoice precision = PrecisionChoice::kFp32;
  // auto = none when the largest micro-batch without recompute reaches the target (the global
  // batch, or any m when none is given), optimal otherwise.
  RecomputeChoice recompute = RecomputeChoice::kNone;
  // --fp32-ops / --fp16-ops: op types or node names forced to a dtype in mixed precision.
  std::vector<std::string> force_fp32;
  std::vector<std::string> force_fp16;
  // A recompute plan must buy at least this much larger micro-batch over no recompute to be
  // worth its extra forward time: below it, the extra compute outweighs the per-kernel
  // efficiency a larger m brings.
  double min_recompute_micro_batch_gain = 1.5;
};

struct JointPlan {
  TrainingPlan plan;             // the chosen plan
  PlannerOptions options_used;   // the planner options of the chosen configuration
  std::string explanation;       // one sentence on why this plan
  std::vector<std::string> checkpoint_nodes;  // nodes kept as recompute checkpoints
};

Expected<JointPlan> PlanJointly(const Graph& graph, const PlannerOptions& base,
                                const SearchOptions& search);

}  // namespace memplan
