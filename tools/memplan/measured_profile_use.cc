#include "tools/memplan/measured_profile_use.h"

#include <cstdio>

#include "analyzer/text/json_fields.h"
#include "graph/graph.h"
#include "profiler/profile_json.h"
#include "tools/memplan/cli_common.h"

namespace memplan::cli {
namespace {

std::string PlanSummary(const TrainingPlan& plan) {
  return "m=" + std::to_string(plan.chosen.micro_batch) +
         " k=" + std::to_string(plan.chosen.accumulation_steps) + " " +
         std::string(PrecisionName(plan.chosen.precision));
}

}  // namespace

Status ApplyMeasuredProfile(const std::string& path, PlanRequest& request) {
  auto profile = profiler::ReadProfile(path);
  if (!profile.ok()) return MakeError("--profile: " + profile.error().message);
  request.planner.cost.measured = profiler::ToMeasuredNodeTimes(*profile);
  if (request.planner.cost.measured.empty())
    return MakeError("--profile: '" + path + "' has no per-node times");
  return OkStatus();
}

Expected<ProfileComparison> CompareWithRoofline(const std::string& path,
                                                const AnalysisSession& session,
                                                PlanRequest roofline_request,
                                                const ProgressSink& progress) {
  progress("estimating the same request with the roofline only, for comparison");
  MEMPLAN_TRY(auto roofline, RunAnalysisSession(std::move(roofline_request), progress));
  ProfileComparison c;
  c.path = path;
  const auto& measured = session.request.planner.cost.measured;
  c.profile_nodes = static_cast<int64_t>(measured.size());
  for (const auto& [name, time] : measured)
    c.measured_nodes += session.graph.FindNode(name) ? 1 : 0;
  c.step_seconds = session.plan.chosen.step_seconds;
  c.roofline_step_seconds = roofline->plan.chosen.step_seconds;
  c.roofline_plan = PlanSummary(roofline->plan);
  c.plan_changed = c.roofline_plan != PlanSummary(session.plan);
  return c;
}

std::string FormatProfileComparison(const ProfileComparison& c) {
  char line[512];
  const double change =
      c.roofline_step_seconds > 0 ? 100.0 * (c.step_seconds / c.roofline_step_seconds - 1) : 0;
  std::snprintf(line, sizeof line,
                "\nProfile\n  %s: measured times for %lld nodes of this graph (%lld in the "
                "profile)\n  estimated step %.4f s; roofline alone %.4f s (%+.1f%%); %s\n",
                c.path.c_str(), static_cast<long long>(c.measured_nodes),
                static_cast<long long>(c.profile_nodes), c.step_seconds, c.roofline_step_seconds,
                change,
                c.plan_changed ? ("the roofline alone would choose " + c.roofline_plan).c_str()
                               : "same plan as the roofline alone");
  return line;
}

nlohmann::ordered_json ProfileComparisonJson(const ProfileComparison& c) {
  nlohmann::ordered_json j;
  MEMPLAN_JSON_FIELDS(j, c, path, measured_nodes, profile_nodes, step_seconds,
                      roofline_step_seconds, plan_changed, roofline_plan);
  return j;
}

namespace {

std::string FormatSessionAnalysis(const AnalysisSession& session,
                                  const ProfileComparison* comparison) {
  switch (session.request.analysis.format) {
    case OutputFormat::kJson: {
      nlohmann::ordered_json j = SessionJson(session);
      if (comparison) j["profile"] = ProfileComparisonJson(*comparison);
      return j.dump(2) + "\n";
    }
    case OutputFormat::kMarkdown:
      return FormatAnalysisMarkdown(session.report) +
             (comparison ? FormatProfileComparison(*comparison) : "");
    case OutputFormat::kText:
      return FormatAnalysisText(session.report) +
             (comparison ? FormatProfileComparison(*comparison) : "");
  }
  return "";
}

}  // namespace

int PrintSessionAnalysis(const AnalysisSession& session, const ProfileComparison* comparison) {
  const std::string out = FormatSessionAnalysis(session, comparison);
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return session.plan.feasible ? kExitSuccess : kExitCheckFailed;
}

}  // namespace memplan::cli
