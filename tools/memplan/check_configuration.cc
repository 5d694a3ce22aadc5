#include "tools/memplan/check_configuration.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "analyzer/baseline/pinned_plan.h"
#include "analyzer/report/plan_report.h"

namespace memplan::cli {

std::string UnrecordableOption(const CLI::App& command, const std::vector<std::string>& own) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0) continue;
    std::string name = option->get_name();
    if (name == "model" || std::find(own.begin(), own.end(), name) != own.end()) continue;
    bool recordable = false;
    for (const PlanFlagSpec& spec : kPlanFlagTable) recordable |= spec.argument == name;
    if (!recordable) return name;
  }
  return {};
}

namespace {

// One `memplan analyze` run of `flags` on `model`, without progress lines (several
// configurations in a CI log read better without them).
Expected<std::unique_ptr<AnalysisSession>> AnalyseFlags(const PlanFlags& flags,
                                                        const std::string& model) {
  MEMPLAN_TRY(PlanRequest request,
              ResolvePlanFlags(PlanArgumentsOf(flags, model), /*require_gpu=*/true));
  return RunAnalysisSession(std::move(request), Progress(OutputFormat::kJson));
}

}  // namespace

Expected<ConfigurationAnalysis> AnalyseConfiguration(const CheckConfiguration& config,
                                                     const std::filesystem::path& directory,
                                                     const PlanFlags* replay) {
  const std::string where = "configuration '" + config.name + "': ";
  std::string model = ResolveModelPath(directory, config.model).string();
  if (!config.flags.gpu)
    return MakeError(where + "flag 'gpu' is required (a size like 24G or a name like A100-80GB)");
  const PlanFlags flags = replay ? OverlayPlanFlags(config.flags, *replay) : config.flags;
  auto session = AnalyseFlags(flags, model);
  if (!session.ok()) return MakeError(where + session.error().message);
  ConfigurationAnalysis analysis;
  // The typed facts `analyze --json` prints (analyzer/report/plan_report.h).
  analysis.memory = (*session)->report.plan_report.memory;
  analysis.plan = PinnedPlanOf((*session)->plan);
  analysis.fits = (*session)->plan.feasible;
  if (replay == nullptr && !FixesMicroBatch(config.flags)) {
    analysis.largest_fitting_micro_batch = (*session)->plan.largest_fitting_micro_batch;
    return analysis;
  }
  // Searched with the configuration's own flags, as the baseline searched it.
  auto searched = AnalyseFlags(WithoutFixedMicroBatch(config.flags), model);
  if (!searched.ok()) return MakeError(where + searched.error().message);
  analysis.largest_fitting_micro_batch = (*searched)->plan.largest_fitting_micro_batch;
  return analysis;
}

}  // namespace memplan::cli
