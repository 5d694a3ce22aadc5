#include "analyzer/planning/strategy_search.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"
#include "graph/bound_shape_check.h"

namespace memplan {

StrategyOutcome OutcomeOf(ParallelStrategy strategy, const TrainingPlan& plan) {
  StrategyOutcome o;
  o.strategy = strategy;
  o.feasible = plan.feasible;
  o.chosen = plan.chosen;
  o.model_states = ModelStateBytesOf(plan.program, plan.simulation.buffer_bytes);
  o.communication_seconds = plan.time.communication_seconds;
  o.communication_total_seconds = plan.time.communication_total_seconds;
  return o;
}

Expected<StrategySearch> SearchParallelStrategies(const Graph& graph, const PlannerOptions& base,
                                                  const SearchOptions& search,
                                                  const std::vector<ParallelStrategy>& excluded,
                                                  const StrategyRegime& regime) {
  MEMPLAN_CHECK(base.program.data_parallel.has_value());
  StrategySearch result;
  std::optional<JointPlan> best;
  const int64_t nodes = base.program.data_parallel->nodes;
  // Every strategy plans this graph: its node costs are analysed once for all of them.
  PlannerOptions shared = base;
  if (!shared.node_costs) shared.node_costs = std::make_shared<NodeCostsCache>();
  if (!shared.micro_batch_shapes && !base.tensor_parallel.enabled())
    shared.micro_batch_shapes = std::make_shared<MicroBatchShapeCheck>(graph, base.bindings);
  for (const NamedValue<ParallelStrategy>& entry : kParallelStrategyNames) {
    // On one node hybrid-shard's shard group is every rank: the fsdp plan again.
    if (ShardsWithinNode(entry.value) && nodes <= 1) continue;
    if (std::find(excluded.begin(), excluded.end(), entry.value) != excluded.end()) continue;
    PlannerOptions options = shared;
    options.program.data_parallel->strategy = entry.value;
    if (regime) regime(entry.value, options.program);
    MEMPLAN_TRY(JointPlan joint, PlanJointly(graph, options, search));
    StrategyOutcome outcome = OutcomeOf(entry.value, joint.plan);
    bool better = !best;
    if (best) {
      const StrategyOutcome& current = result.outcomes[result.chosen];
      if (outcome.feasible != current.feasible) {
        better = outcome.feasible;
      } else if (outcome.feasible) {
        // Strictly faster wins, so ties keep the simpler strategy (the table's order).
        better = outcome.chosen.samples_per_second > current.chosen.samples_per_second;
      } else {
        better = outcome.chosen.peak_bytes < current.chosen.peak_bytes;
      }
    }
    result.outcomes.push_back(outcome);
    if (better) {
      result.chosen = result.outcomes.size() - 1;
      best = std::move(joint);
    }
  }
  result.best = std::move(*best);
  result.explanation = ExplainStrategyChoice(result.outcomes, result.chosen,
                                             base.program.data_parallel->ranks, nodes);
  return result;
}

namespace {

// What the strategy shards, for the sentence: "optimizer state", "optimizer state and gradients".
std::string ShardedStates(ParallelStrategy s) {
  if (ShardsParameters(s)) return "parameters, gradients and optimizer state";
  if (ShardsGradients(s)) return "gradients and optimizer state";
  if (ShardsOptimizerState(s)) return "optimizer state";
  return "nothing";
}

}  // namespace

std::string ExplainStrategyChoice(const std::vector<StrategyOutcome>& outcomes, size_t chosen,
                                  int64_t ranks, int64_t nodes) {
  MEMPLAN_CHECK(chosen < outcomes.size());
  const StrategyOutcome& pick = outcomes[chosen];
  const StrategyOutcome* ddp = nullptr;
  for (const StrategyOutcome& o : outcomes)
    if (o.strategy == ParallelStrategy::kDdp) ddp = &o;
  std::ostringstream s;
  s << ParallelStrategyName(pick.strategy) << ": ";
  if (!pick.feasible) {
    s << "no strategy fits on " << ranks << " GPUs; this one needs the least ("
      << FormatBytes(pick.chosen.peak_bytes) << " per rank at micro-batch "
      << pick.chosen.micro_batch << ")";
    return s.str();
  }
  s << "the fastest that fits, " << FormatFixed(pick.chosen.samples_per_second, 1)
    << " samples/s at micro-batch " << pick.chosen.micro_batch << " x "
    << pick.chosen.accumulation_steps << " x " << ranks << " GPUs";
  if (pick.strategy != ParallelStrategy::kDdp && ddp != nullptr) {
    const int64_t freed = ddp->model_states.total() - pick.model_states.total();
    const int64_t ways = ShardsWithinNode(pick.strategy) && nodes > 0 ? ranks / nodes : ranks;
    s << "; " << ShardedStates(pick.strategy) << " sharded " << ways << " ways"
      << (ways == ranks ? "" : " within each node (replicated across nodes)") << " frees "
      << FormatBytes(freed) << " of model states per rank against ddp";
  }
  for (const StrategyOutcome& o : outcomes) {
    if (&o == &pick) continue;
    s << "; " << ParallelStrategyName(o.strategy);
    if (!o.feasible) {
      s << " does not fit (" << FormatBytes(o.chosen.peak_bytes) << " per rank)";
      continue;
    }
    s << " " << FormatFixed(o.chosen.samples_per_second, 1) << " samples/s";
    if (o.chosen.micro_batch > pick.chosen.micro_batch)
      s << " at a larger micro-batch " << o.chosen.micro_batch;
    // Differences below a millisecond are noise at a step's scale.
    if (o.communication_seconds - pick.communication_seconds >= 5e-4)
      s << ", " << FormatFixed(o.communication_seconds - pick.communication_seconds, 3)
        << " s more unhidden communication per step";
  }
  return s.str();
}

}  // namespace memplan
