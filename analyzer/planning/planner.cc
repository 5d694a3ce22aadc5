#include "analyzer/planning/planner.h"

#include "graph/checked_math.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "analyzer/cost/collective_cost.h"
#include "analyzer/planning/fit_probe.h"
#include "analyzer/planning/micro_batch_search.h"
#include "analyzer/simulation/allocation_script.h"
#include "analyzer/simulation/batch_linear_sizes.h"
#include "analyzer/simulation/caching_allocator.h"
#include "analyzer/simulation/caching_peak_memo.h"
#include "analyzer/simulation/exact_allocator.h"
#include "analyzer/simulation/expandable_allocator.h"
#include "analyzer/text/memory_size.h"
#include "graph/bound_shape_check.h"

namespace memplan {

Expected<AllocatorKind> ParseAllocatorKind(std::string_view text) {
  if (std::optional<AllocatorKind> kind = FindName(kAllocatorKindNames, text)) return *kind;
  return MakeError("--allocator: expected caching, expandable or exact, got '" + std::string(text) +
                   "'");
}

Expected<Headroom> ParseHeadroom(std::string_view text) {
  Headroom headroom;
  if (text == "0") return headroom;
  if (!text.empty() && text.back() == '%') {
    const std::string number(text.substr(0, text.size() - 1));
    char* end = nullptr;
    const double percent = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(percent))
      return MakeError("expected a percentage such as 5% or a size such as 1G, got '" +
                       std::string(text) + "'");
    if (percent < 0 || percent > kMaxHeadroomFraction * 100)
      return MakeError("must be between 0% and 50% of the budget, got '" + std::string(text) + "'");
    headroom.fraction = percent / 100;
    return headroom;
  }
  if (!text.empty() && text.front() == '-')
    return MakeError("must not be negative, got '" + std::string(text) + "'");
  MEMPLAN_TRY(headroom.bytes, ParseMemorySize(text));
  return headroom;
}

Expected<double> ParseKneeTolerance(std::string_view text) {
  if (text == "0") return 0.0;
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number(percent ? text.substr(0, text.size() - 1) : text);
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (!percent || number.empty() || end != number.c_str() + number.size() || !std::isfinite(value))
    return MakeError(
        "expected a percentage such as 2% (0 for the largest micro-batch that fits), "
        "got '" +
        std::string(text) + "'");
  if (value < 0 || value >= 50)
    return MakeError("must be at least 0% and below 50%, got '" + std::string(text) + "'");
  return value / 100;
}

CollectiveCostOptions ResolvedCollectiveOptions(const PlannerOptions& options) {
  CollectiveCostOptions resolved = options.collectives;
  if (resolved.intra_node.bytes_per_second <= 0)
    resolved.intra_node = DefaultIntraNodeLink(options.gpu);
  if (resolved.inter_node.bytes_per_second <= 0) resolved.inter_node = DefaultInterNodeLink();
  if (options.program.data_parallel) resolved.nodes = options.program.data_parallel->nodes;
  return resolved;
}

OffloadCostOptions ResolvedOffloadCostOptions(const PlannerOptions& options) {
  OffloadCostOptions resolved = options.offload_cost;
  if (resolved.host_link.bytes_per_second <= 0) resolved.host_link = DefaultHostLink(options.gpu);
  return resolved;
}

Expected<const NodeCosts*> NodeCostsCache::Of(const Graph& graph) {
  MEMPLAN_CHECK(graph_ == nullptr || graph_ == &graph);
  if (!costs_) {
    MEMPLAN_TRY(NodeCosts costs, AnalyzeNodeCosts(graph));
    costs_ = std::move(costs);
    graph_ = &graph;
  }
  return &*costs_;
}

int64_t Headroom::BytesOf(int64_t budget) const {
  MEMPLAN_CHECK(budget >= 0 && fraction >= 0 && bytes >= 0);
  return bytes + static_cast<int64_t>(fraction * static_cast<double>(budget));
}

using planning::CandidateEvaluator;
using planning::CeilDiv;
using planning::EvaluatorFor;
using planning::PlanLimits;
using planning::PlanLimitsOf;
using planning::PlanOn;
using planning::RecomputeLabelOf;

struct FitProbe::State {
  const Graph* graph = nullptr;
  PlannerOptions options;  // the evaluator reads them by reference
  std::unique_ptr<CandidateEvaluator> evaluator;
};

FitProbe::FitProbe(std::unique_ptr<State> state) : state_(std::move(state)) {}
FitProbe::~FitProbe() = default;

Expected<std::unique_ptr<FitProbe>> FitProbe::Derive(const Graph& graph,
                                                     const PlannerOptions& options) {
  auto state = std::make_unique<State>();
  state->graph = &graph;
  state->options = options;
  MEMPLAN_TRY(state->evaluator, EvaluatorFor(graph, state->options));
  return std::unique_ptr<FitProbe>(new FitProbe(std::move(state)));
}

Expected<FixedMicroBatchFit> FitProbe::At(int64_t micro_batch) {
  PlannerOptions fixed = state_->options;
  fixed.micro_batch = micro_batch;
  MEMPLAN_TRY(PlanLimits limits, PlanLimitsOf(fixed));
  // The accumulation PlanTraining gives a fixed m: k = ceil(G / m) per rank.
  const int64_t k = limits.rank_batch ? CeilDiv(*limits.rank_batch, micro_batch) : 1;
  MEMPLAN_TRY(PlanCandidate c, state_->evaluator->Evaluate(micro_batch, k, limits.budget_bytes,
                                                           /*with_time=*/false));
  FixedMicroBatchFit fit;
  fit.peak_bytes = c.peak_bytes;
  fit.budget_bytes = limits.budget_bytes;
  fit.headroom_bytes = limits.headroom_bytes;
  return fit;
}

Expected<TrainingPlan> PlanTraining(const Graph& graph, const PlannerOptions& options) {
  MEMPLAN_TRY(const PlanLimits limits, PlanLimitsOf(options));
  MEMPLAN_TRY(std::unique_ptr<CandidateEvaluator> evaluator, EvaluatorFor(graph, options));
  return PlanOn(graph, options, limits, *evaluator);
}

Expected<TrainingPlan> FitProbe::Plan(std::optional<RecomputeLabel> label) {
  CandidateEvaluator& evaluator = *state_->evaluator;
  // The evaluator reads state_->options, which differ from `options` only in the label, which
  // only the candidates carry.
  PlannerOptions options = state_->options;
  options.recompute_label = label;
  MEMPLAN_TRY(const PlanLimits limits, PlanLimitsOf(options));
  const RecomputeLabel probe_label = evaluator.recompute_label();
  evaluator.set_recompute_label(RecomputeLabelOf(options, evaluator.program()));
  evaluator.set_keep_program(true);
  Expected<TrainingPlan> plan = PlanOn(*state_->graph, options, limits, evaluator);
  evaluator.set_keep_program(false);
  evaluator.set_recompute_label(probe_label);
  return plan;
}

}  // namespace memplan
