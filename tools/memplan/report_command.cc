// `memplan report model.onnx --gpu 24G [plan flags] --html report.html [--svg timeline.svg]`:
// the analysis of `analyze` rendered as one self-contained HTML page (timeline, plan, candidates
// chart, advice) and optionally the static timeline SVG. Stdout carries what `analyze` prints in
// the same --format, so a CI job gets the JSON and the page from one run.
// Exit 0 when the plan fits, 1 when nothing fits (the report is still written: it shows why and,
// as `analyze` does, the alternatives that would fit),
// 2 on bad input or when a file cannot be written.
#include <cstdio>
#include <memory>
#include <string>

#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/session_alternatives.h"
#include "analyzer/pipeline/session_fused_loss.h"
#include "analyzer/report/html_report.h"
#include "analyzer/report/timeline_svg.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/measured_profile_use.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {
namespace {

struct ReportFlags {
  PlanArguments plan;
  std::string html;
  std::string svg;
};

int RunReport(const ReportFlags& flags) {
  if (flags.html.empty())
    return ReportError("report: --html is required (the page to write, e.g. --html report.html)");
  if (Status apart = CheckOutputsApart({{"the model", flags.plan.analysis.model}},
                                       {{"--html", flags.html}, {"--svg", flags.svg}});
      !apart.ok())
    return ReportError(apart.error().message);
  Expected<PlanRequest> request = ResolvePlanFlags(flags.plan, /*require_gpu=*/true);
  if (!request.ok()) return ReportError(request.error().message);
  Progress progress(request->analysis.format);
  auto session = RunAnalysisSession(std::move(*request), progress);
  if (!session.ok()) return ReportError(session.error().message);
  // When nothing fits, the page shows the alternatives `analyze` prints, resolved the same way.
  AddSessionAlternatives(
      **session, flags.plan,
      [](const PlanArguments& plan) { return ResolvePlanFlags(plan, /*require_gpu=*/true); },
      progress);
  // When the loss is at the peak: what --fused-loss would fit.
  AddFusedLossAdvice(**session, progress);
  const AnalysisSession& s = **session;

  Status html = WriteHtmlReport(s.report, flags.html);
  if (!html.ok()) return ReportError(html.error().message);
  progress.Report("wrote " + flags.html);
  if (!flags.svg.empty()) {
    Status svg = WriteTimelineSvg(s.report, flags.svg);
    if (!svg.ok()) return ReportError(svg.error().message);
    progress.Report("wrote " + flags.svg);
  }

  return PrintSessionAnalysis(s, /*comparison=*/nullptr);
}

}  // namespace

Verb AddReportCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<ReportFlags>(
      app, "report",
      "write the analysis as a self-contained HTML page (timeline, plan, candidates)");
  AddPlanFlags(*command, flags->plan, /*gpu_required=*/true);
  command->add_option("--html", flags->html, "the HTML page to write (required)");
  command->add_option("--svg", flags->svg, "also write the memory timeline as a static SVG");
  return VerbRunning(command, flags, RunReport);
}

}  // namespace memplan::cli
