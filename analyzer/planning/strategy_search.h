#pragma once
// `--parallel auto`: plan every data-parallel strategy (ddp, zero1, zero2, zero3, fsdp, and
// hybrid-shard when the ranks span several nodes: on one node it is fsdp) with the
// joint search (analyzer/planning/joint_search.h) on the same ranks, budget and global batch, keep
// the fastest (samples/s over all ranks) that fits, and say why in one sentence. When none fits,
// the one with the smallest per-rank peak is returned (infeasible), so the report says what is
// missing.

#include <functional>
#include <string>
#include <vector>

#include "analyzer/parallel/engine_regime.h"
#include "analyzer/planning/joint_search.h"
#include "analyzer/precision/model_state_bytes.h"
#include "analyzer/vocabulary/parallel_strategy.h"
#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

// One strategy as planned.
struct StrategyOutcome {
  ParallelStrategy strategy = ParallelStrategy::kDdp;
  bool feasible = false;
  PlanCandidate chosen;              // its chosen (m, k): peak per rank, samples/s of all ranks
  ModelStateBytes model_states;      // per rank
  double communication_seconds = 0;  // exposed, per optimizer step
  double communication_total_seconds = 0;  // all collectives, per optimizer step
};

struct StrategySearch {
  JointPlan best;                         // the chosen strategy's plan
  std::vector<StrategyOutcome> outcomes;  // in kParallelStrategyNames order, those tried
  size_t chosen = 0;                      // index into outcomes
  std::string explanation;                // "zero2: the fastest that fits ..."
};

// REQUIRES: base.program.data_parallel set (ranks, nodes, engine defaults); its strategy is
// ignored. `excluded` strategies are not tried (an export target that cannot run them).
// `regime`, when set, puts each strategy's program in the regime its engine (or the export
// target) runs (ApplyEngineRegime, config_export's ApplyExportRegime); unset, every strategy is
// planned in base's regime.
// Errors: those of PlanJointly (the first strategy's, which every strategy shares).
using StrategyRegime = std::function<void(ParallelStrategy, ProgramOptions&)>;
Expected<StrategySearch> SearchParallelStrategies(
    const Graph& graph, const PlannerOptions& base, const SearchOptions& search,
    const std::vector<ParallelStrategy>& excluded = {}, const StrategyRegime& regime = {});

// The outcome of a plan already made with one strategy (for reports of a fixed --parallel).
StrategyOutcome OutcomeOf(ParallelStrategy strategy, const TrainingPlan& plan);

// The sentence for `outcomes[chosen]` against the others, on `ranks` GPUs over `nodes` machines
// (hybrid-shard shards ranks / nodes ways).
std::string ExplainStrategyChoice(const std::vector<StrategyOutcome>& outcomes, size_t chosen,
                                  int64_t ranks, int64_t nodes = 1);

}  // namespace memplan
