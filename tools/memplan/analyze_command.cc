// `memplan analyze model.onnx --gpu 24G [plan flags] [--svg timeline.svg] [--profile profile.json]
// [--export TARGET [--export-out FILE]] [--no-alternatives]`: what fits, the fastest plan, why.
// When nothing fits it also plans the alternatives (analyzer/pipeline/session_alternatives.h)
// unless
// --no-alternatives.
// --svg also writes the memory timeline as a static picture. --export writes the chosen plan as a
// training-framework config (what `memplan export` makes from the --json output): to --export-out,
// or, without it, to stdout in place of the analysis (`analyze ... --export deepspeed > ds.json`).
// Exit 0 when the plan fits, 1 when nothing fits (or a fixed --micro-batch does not; then no
// config is exported), 2 on bad input or a file that cannot be written.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "analyzer/config_export/export_target.h"
#include "analyzer/pipeline/analysis_session.h"
#include "analyzer/pipeline/session_alternatives.h"
#include "analyzer/pipeline/session_fused_loss.h"
#include "analyzer/report/timeline_svg.h"
#include "analyzer/text/markup.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/measured_profile_use.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {
namespace {

struct AnalyzeFlags {
  PlanArguments plan;
  std::string svg;
  std::string export_target;
  std::string export_out;
  std::string profile;
  bool no_alternatives = false;
};

// `plan` resolved as analyze plans it: without --amp-mode, the regime the --export target runs;
// with --profile, the measured times (unless `with_profile` is false). The alternatives of a plan
// that does not fit are resolved the same way.
Expected<PlanRequest> ResolveAnalyzeRequest(const AnalyzeFlags& flags, const PlanArguments& plan,
                                            bool with_profile) {
  MEMPLAN_TRY(PlanRequest request, ResolvePlanFlags(plan, /*require_gpu=*/true));
  if (!flags.export_target.empty()) {
    Expected<ExportTarget> target = ParseExportTarget(flags.export_target);
    if (!target.ok()) return MakeError("--export: " + target.error().message);
    // Without --amp-mode / --optimizer-impl the plan (and each strategy --parallel auto tries,
    // among those the target runs) is made in the regime the target runs (DeepSpeed: master
    // weights, FusedAdam), so the exported config is the plan that was simulated.
    SetExportRegime(*target, request);
  }
  if (with_profile && !flags.profile.empty())
    MEMPLAN_RETURN_IF_ERROR(ApplyMeasuredProfile(flags.profile, request));
  return request;
}

int RunAnalyze(const AnalyzeFlags& flags) {
  if (!flags.export_out.empty() && flags.export_target.empty())
    return ReportError("analyze: --export-out needs --export TARGET");
  if (Status apart = CheckOutputsApart(
          {{"the model", flags.plan.analysis.model}, {"--profile", flags.profile}},
          {{"--svg", flags.svg}, {"--export-out", flags.export_out}});
      !apart.ok())
    return ReportError(apart.error().message);
  // Checked before the analysis so a typo in --export costs no planning time.
  Expected<PlanRequest> request = ResolveAnalyzeRequest(flags, flags.plan, /*with_profile=*/false);
  if (!request.ok()) return ReportError(request.error().message);
  std::optional<PlanRequest> roofline_request;
  if (!flags.profile.empty()) {
    roofline_request = *request;
    Status applied = ApplyMeasuredProfile(flags.profile, *request);
    if (!applied.ok()) return ReportError(applied.error().message);
  }
  Progress progress(request->analysis.format);
  auto session = RunAnalysisSession(std::move(*request), progress);
  if (!session.ok()) return ReportError(session.error().message);
  // When nothing fits: what would (each alternative resolved as the request was).
  if (!flags.no_alternatives)
    AddSessionAlternatives(
        **session, flags.plan,
        [&flags](const PlanArguments& plan) {
          return ResolveAnalyzeRequest(flags, plan, /*with_profile=*/true);
        },
        progress);
  // When the loss is at the peak: what --fused-loss would fit.
  AddFusedLossAdvice(**session, progress);
  const AnalysisSession& s = **session;
  std::optional<ProfileComparison> comparison;
  if (roofline_request) {
    auto compared = CompareWithRoofline(flags.profile, s, std::move(*roofline_request), progress);
    if (!compared.ok()) return ReportError(compared.error().message);
    comparison = std::move(*compared);
  }

  if (!flags.svg.empty()) {
    Status svg = WriteTimelineSvg(s.report, flags.svg);
    if (!svg.ok()) return ReportError(svg.error().message);
    progress.Report("wrote " + flags.svg);
  }
  // A plan that does not fit is not exported (its config would run out of memory); the analysis
  // below says why.
  bool exporting = !flags.export_target.empty() && s.plan.feasible;
  if (exporting) {
    Expected<std::string> config = ExportSessionConfig(s, flags.export_target);
    if (!config.ok()) return ReportError(config.error().message);
    Status written = WriteToFileOrStdout(flags.export_out, *config);
    if (!written.ok()) return ReportError(written.error().message);
    if (flags.export_out.empty()) return kExitSuccess;  // the config took the analysis' place
    progress.Report("wrote " + flags.export_out);
  }

  return PrintSessionAnalysis(s, comparison ? &*comparison : nullptr);
}

}  // namespace

Verb AddAnalyzeCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<AnalyzeFlags>(
      app, "analyze", "plan micro-batch, accumulation, FP16 placement and recompute for a GPU");
  AddPlanFlags(*command, flags->plan, /*gpu_required=*/true);
  command->add_option("--svg", flags->svg, "also write the memory timeline as a static SVG")
      ->type_name("FILE.svg");
  command
      ->add_option(
          "--export", flags->export_target,
          "also export the plan as a config: " + JoinNames(kExportTargetNames, ", ", " or ") +
              " (to stdout instead of the analysis unless --export-out)")
      ->type_name("TARGET");
  command->add_option("--export-out", flags->export_out, "write the --export config here")
      ->type_name("FILE");
  command
      ->add_option("--profile", flags->profile,
                   "use the per-node times `memplan profile` measured instead of the roofline, "
                   "and say how much that changed the estimate")
      ->type_name("profile.json");
  command->add_flag("--no-alternatives", flags->no_alternatives,
                    "when nothing fits, exit 1 without planning the alternatives that would fit");
  return VerbRunning(command, flags, RunAnalyze);
}

}  // namespace memplan::cli
