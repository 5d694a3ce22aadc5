// `memplan analyze model.onnx --gpu 24G [plan flags]`: what fits, the fastest plan, why.
// Exit 0 when the plan fits, 1 when nothing fits (or a fixed --micro-batch does not), 2 on bad
// input.
#include <cstdio>
#include <memory>
#include <string>

#include "tools/memplan/analysis_session.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {
namespace {

int RunAnalyze(const PlanFlags& flags) {
  Expected<PlanRequest> request = ResolvePlanFlags(flags, /*require_gpu=*/true);
  if (!request.ok()) return ReportError(request.error().message);
  Progress progress(request->analysis.format);
  auto session = RunAnalysisSession(std::move(*request), progress);
  if (!session.ok()) return ReportError(session.error().message);
  const AnalysisSession& s = **session;

  std::string out;
  switch (s.request.analysis.format) {
    case OutputFormat::kJson:
      out = AnalysisToJson(s.report).dump(2) + "\n";
      break;
    case OutputFormat::kMarkdown:
      out = FormatAnalysisMarkdown(s.report);
      break;
    case OutputFormat::kText:
      out = FormatAnalysisText(s.report);
      break;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return s.plan.feasible ? kExitSuccess : kExitCheckFailed;
}

}  // namespace

Verb AddAnalyzeCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "analyze", "plan micro-batch, accumulation, FP16 placement and recompute for a GPU");
  auto flags = std::make_shared<PlanFlags>();
  AddPlanFlags(*command, *flags);
  return Verb{command, [flags] { return RunAnalyze(*flags); }};
}

}  // namespace memplan::cli
