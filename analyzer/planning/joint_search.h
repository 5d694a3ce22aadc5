#pragma once
// The joint search over the four knobs: precision x recompute x micro-batch, with accumulation
// derived from the global batch. For each precision and recompute choice it runs the micro-batch
// planner (analyzer/planning/planner.h), then picks the plan with the highest estimated samples/s
// under the budget and keeps the memory-vs-throughput Pareto frontier as the candidates table. It
// returns what it decided as a trace; the sentence reports print is written from that trace in
// analyzer/report/plan_explanation.h.

#include <optional>
#include <string>
#include <vector>

#include "analyzer/planning/planner.h"
#include "analyzer/vocabulary/precision.h"
#include "analyzer/vocabulary/recompute_choice.h"
#include "analyzer/vocabulary/recompute_unit.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

struct SearchOptions {
  PrecisionChoice precision = PrecisionChoice::kFp32;
  // auto = none when the largest micro-batch without recompute reaches the target (the global
  // batch, or any m when none is given), optimal otherwise.
  RecomputeChoice recompute = RecomputeChoice::kNone;
  // node: any node set (the chain DP); module: whole checkpoint modules, exactly what the exports
  // wrap in torch.utils.checkpoint; auto: module when the node names carry module scopes and the
  // kind has a module form (all, optimal, auto; not sqrt), node otherwise.
  RecomputeUnit recompute_unit = RecomputeUnit::kAuto;
  // --fp32-ops / --fp16-ops: op types or node names forced to a dtype in mixed precision.
  std::vector<std::string> force_fp32;
  std::vector<std::string> force_fp16;
};

// One configuration the search planned (a precision and a recompute choice): what its
// micro-batch planner chose.
struct ConfigurationOutcome {
  PlanCandidate chosen;  // its chosen (m, k); chosen.recompute is the recompute label
  bool feasible = false;
  int64_t largest_fitting_micro_batch = 0;
  // The largest under the headroom (TrainingPlan::largest_within_headroom), and the throughput
  // knee when the chosen m is it (TrainingPlan::knee and the best rate it was compared with).
  int64_t largest_within_headroom = 0;
  bool knee = false;
  int64_t knee_best_micro_batch = 0;
  double knee_best_samples_per_second = 0;
  size_t recomputed_nodes = 0;      // nodes its program re-runs in backward
  size_t checkpointed_modules = 0;  // modules it checkpoints (module unit)
};

// What the search decided and what it compared: every configuration kept, in search order
// (per precision tried: the recompute plan when one was kept, then the plan without recompute
// unless a forced recompute kind worked), and the index of the winner.
struct SearchTrace {
  std::vector<ConfigurationOutcome> configurations;
  size_t chosen = 0;
  std::optional<int64_t> fixed_micro_batch;             // --micro-batch
  std::optional<int64_t> global_batch;                  // --global-batch
  RecomputeChoice recompute = RecomputeChoice::kNone;   // --recompute as asked
  RecomputeUnit recompute_unit = RecomputeUnit::kNode;  // --recompute-unit as resolved
};

struct JointPlan {
  TrainingPlan plan;                          // the chosen plan
  PlannerOptions options_used;                // the planner options of the chosen configuration
  SearchTrace trace;                          // why this plan (ExplainPlanChoice writes it out)
  std::vector<std::string> checkpoint_nodes;  // nodes kept as recompute checkpoints
};

// Errors: the planner's; --recompute-unit module with sqrt (no module form) or on a model whose
// node names carry no module scope while a recompute kind is asked.
Expected<JointPlan> PlanJointly(const Graph& graph, const PlannerOptions& base,
                                const SearchOptions& search);

}  // namespace memplan
