#pragma once
// `memplan analyze --profile profile.json`: the cost model takes the per-node times that
// `memplan profile` measured instead of the roofline, and the analysis says how much that moved
// the estimate. The comparison runs the same request once more without the profile, so the
// figure is "what the roofline alone would have said", plan choice included.

#include <nlohmann/json.hpp>

#include <string>

#include "analyzer/pipeline/analysis_session.h"
#include "graph/expected.h"

namespace memplan::cli {

struct ProfileComparison {
  std::string path;
  int64_t measured_nodes = 0;  // profile entries that name a node of this graph
  int64_t profile_nodes = 0;   // entries in the profile
  double step_seconds = 0;     // the chosen plan, with measured times
  double roofline_step_seconds = 0;
  bool plan_changed = false;  // micro-batch, accumulation or precision differ
  std::string roofline_plan;  // "m=8 k=4 fp16" of the roofline-only choice
};

// Reads `path` into request.planner.cost.measured. Errors: unreadable or malformed profile.
Status ApplyMeasuredProfile(const std::string& path, PlanRequest& request);

// Runs `roofline_request` (the request before ApplyMeasuredProfile) and compares its choice with
// `session`'s.
Expected<ProfileComparison> CompareWithRoofline(const std::string& path,
                                                const AnalysisSession& session,
                                                PlanRequest roofline_request,
                                                const ProgressSink& progress);

std::string FormatProfileComparison(const ProfileComparison& comparison);
nlohmann::ordered_json ProfileComparisonJson(const ProfileComparison& comparison);

// Prints the session's analysis to stdout in the request's --format (JSON, Markdown or text),
// with `comparison` appended when there is one, as `analyze` and `report` end. Returns their exit
// code: success when the plan fits, check-failed when it does not.
int PrintSessionAnalysis(const AnalysisSession& session, const ProfileComparison* comparison);

}  // namespace memplan::cli
