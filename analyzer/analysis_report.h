#pragma once
// The result of `memplan analyze` rendered three ways: the memplan/1 JSON (docs/json_schema.md),
// human text readable in 80 columns, and markdown. All three read the same AnalysisReport, so
// they never disagree; JSON keys are written in a fixed order for byte-identical output.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzer/advice.h"
#include "analyzer/planner.h"
#include "analyzer/vocabulary/step_phase.h"
#include "graph/graph.h"

namespace memplan {

struct AnalysisReport {
  std::string model_path;
  std::string model_name;  // file stem
  const Graph* graph = nullptr;
  const PlannerOptions* options = nullptr;
  const TrainingPlan* plan = nullptr;
  std::vector<AdviceItem> advice;
  std::vector<std::string> warnings;
  // Node names for the plan's lists (recompute, fp16/fp32 placement).
  std::vector<std::string> recompute_nodes;
  std::vector<std::string> checkpoint_nodes;
  std::vector<std::string> fp16_nodes;
  std::vector<std::string> fp32_nodes;
  std::string choice_explanation;  // one sentence on why this plan (the joint search fills it)
};

// Fills the node lists of `report` from the plan's program (recomputed nodes, per-node dtypes).
void CollectPlanNodeLists(AnalysisReport& report);

nlohmann::ordered_json AnalysisToJson(const AnalysisReport& report);
std::string FormatAnalysisText(const AnalysisReport& report);
std::string FormatAnalysisMarkdown(const AnalysisReport& report);

}  // namespace memplan
