#pragma once
// The chosen plan's mixed precision as the analysis report shows it: placed nodes per reason, the
// overrides used, the cast buffers the program makes, and the device bytes of loss scaling. The
// per-node placement itself is placement_report.h's; this adds what the derived program says.

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "analyzer/planning/planner.h"
#include "graph/graph.h"

namespace memplan {

// Device memory of loss scaling: the buffers the scaler's setup and the unscale/overflow-check
// step allocate, sized under the plan's bindings (plan.loss_scaler_bytes). Zero without scaling.
int64_t LossScalerBytes(const TrainingPlan& plan);

// The plan's "placement" object (docs/json_schema.md): counts per reason, the casts, and one
// entry per placed node. REQUIRES: plan.placement.
nlohmann::ordered_json PlanPlacementJson(const Graph& graph, const TrainingPlan& plan);

// The placement in a few lines of the text report ("Mixed ..."): counts per reason, the
// overrides, the casts, loss scaling. REQUIRES: plan.placement.
std::string PlanPlacementText(const TrainingPlan& plan);

}  // namespace memplan
