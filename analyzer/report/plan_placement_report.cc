#include "analyzer/report/plan_placement_report.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

#include "analyzer/precision/precision_policy.h"
#include "analyzer/report/placement_report.h"
#include "analyzer/text/memory_size.h"
#include "analyzer/text/number_format.h"

namespace memplan {
namespace {

// Mixed-precision casts of the chosen plan: how many cast buffers the program makes per
// micro-batch, their bytes, and the bytes of those held for backward (saved by a reader).
struct CastSummary {
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t held_bytes = 0;
};
CastSummary SummarizeCasts(const TrainingPlan& plan) {
  CastSummary summary;
  const std::vector<int64_t>& sizes = plan.simulation.buffer_bytes;
  for (const Buffer& b : plan.program.buffers) {
    if (b.role != BufferRole::kCast || b.id.index() >= sizes.size()) continue;
    ++summary.count;
    summary.bytes += sizes[b.id.index()];
    if (b.held_for_backward) summary.held_bytes += sizes[b.id.index()];
  }
  return summary;
}

// Placed nodes per reason, in PlacementReason order (not-placed excluded).
constexpr PlacementReason kShownReasons[] = {
    PlacementReason::kFp16Safe, PlacementReason::kFp32Required, PlacementReason::kFollowsInputs,
    PlacementReason::kOverride};
std::map<PlacementReason, int64_t> CountByReason(const PrecisionPlacement& placement) {
  std::map<PlacementReason, int64_t> counts;
  for (PlacementReason r : kShownReasons) counts[r] = 0;
  for (const NodePlacement& p : placement.nodes)
    if (p.reason != PlacementReason::kNotPlaced) ++counts[p.reason];
  return counts;
}

// Each override entry with the number of nodes it placed, in first-match order.
std::vector<std::pair<std::string, int64_t>> OverrideUses(const PrecisionPlacement& placement) {
  std::vector<std::pair<std::string, int64_t>> uses;
  for (const NodePlacement& p : placement.nodes) {
    if (p.reason != PlacementReason::kOverride) continue;
    std::string entry =
        std::string(p.dtype == DType::kFloat32 ? "--fp32-ops " : "--fp16-ops ") + p.override_entry;
    auto it =
        std::find_if(uses.begin(), uses.end(), [&](const auto& use) { return use.first == entry; });
    if (it == uses.end()) {
      uses.emplace_back(entry, 1);
    } else {
      ++it->second;
    }
  }
  return uses;
}

}  // namespace

// Device memory of loss scaling: the buffers the scaler's setup and the unscale/overflow-check
// step allocate (loss_scale and growth tracker for dynamic; found_inf, inv_scale), sized under
// the plan's bindings. Zero without loss scaling.
int64_t LossScalerBytes(const TrainingPlan& plan) {
  int64_t total = 0;
  const std::vector<int64_t>& sizes = plan.simulation.buffer_bytes;
  for (const Step& step : plan.program.steps) {
    if (step.kind != StepKind::kInitLossScaler && step.kind != StepKind::kUnscaleAndCheckOverflow)
      continue;
    for (const MemoryEvent& e : step.begin)
      if (e.action == MemoryEvent::Action::kAlloc && e.buffer.index() < sizes.size())
        total += sizes[e.buffer.index()];
  }
  return total;
}

// The plan's "placement" object (docs/json_schema.md): counts per reason, the casts, and one
// entry per placed node.
nlohmann::ordered_json PlanPlacementJson(const Graph& graph, const TrainingPlan& plan) {
  const PrecisionPlacement& placement = *plan.placement;
  nlohmann::ordered_json j;
  j["working_dtype"] = std::string(DTypeName(WorkingDType(placement.precision)));
  nlohmann::ordered_json counts;
  for (const auto& [reason, count] : CountByReason(placement))
    counts[std::string(PlacementReasonName(reason))] = count;
  j["counts"] = counts;
  CastSummary casts = SummarizeCasts(plan);
  j["cast_buffers"] = casts.count;
  j["cast_bytes"] = casts.bytes;
  j["cast_bytes_held_for_backward"] = casts.held_bytes;
  j["nodes"] = PlacementToJson(graph, placement)["nodes"];
  return j;
}

// The placement in a few lines of text: counts per reason, the overrides, the casts, loss
// scaling. The per-node list is in the JSON only (plan.placement.nodes).
std::string PlanPlacementText(const TrainingPlan& plan) {
  const PrecisionPlacement& placement = *plan.placement;
  std::map<PlacementReason, int64_t> counts = CountByReason(placement);
  std::ostringstream s;
  s << "Mixed    " << PrecisionName(placement.precision)
    << " placement: " << counts[PlacementReason::kFp16Safe] << " fp16-safe, "
    << counts[PlacementReason::kFp32Required] << " fp32-required, "
    << counts[PlacementReason::kFollowsInputs] << " follow their inputs, "
    << counts[PlacementReason::kOverride] << " overridden\n";
  std::vector<std::pair<std::string, int64_t>> uses = OverrideUses(placement);
  if (!uses.empty()) {
    s << "         overrides:";
    for (size_t i = 0; i < uses.size(); ++i)
      s << (i == 0 ? " " : ", ") << uses[i].first << " (" << uses[i].second
        << (uses[i].second == 1 ? " node)" : " nodes)");
    s << "\n";
  }
  CastSummary casts = SummarizeCasts(plan);
  s << "         casts: " << casts.count << " buffers, " << FormatBytes(casts.bytes)
    << " per micro-batch (" << FormatBytes(casts.held_bytes) << " held for backward)\n";
  const LossScaling& scaling = plan.program.loss_scaling;
  s << "         loss scaling " << LossScalingModeName(scaling.mode);
  if (scaling.mode != LossScalingMode::kNone)
    s << " (scale " << FormatFixed(scaling.scale, 0) << ", " << FormatBytes(LossScalerBytes(plan))
      << " on the device)";
  s << "; per-node dtypes and reasons: --json, plan.placement.nodes\n";
  return s.str();
}

}  // namespace memplan
