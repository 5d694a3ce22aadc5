// `memplan baseline MODEL.onnx [plan flags] --out memplan.baseline.json [--name NAME]` or
// `memplan baseline --configs memplan.configs.json --out memplan.baseline.json`: records the
// predicted peak, its breakdown and the saved bytes per node of one or more configurations, for
// `memplan check` to compare against (docs/ci_checks.md), with the plan each was measured on
// (micro-batch, accumulation, precision, recompute; `check` replays it) and the largest
// micro-batch that fits. It prints what it pinned.
// Exit 0 when the file was written, 2 on bad input (nothing is written then).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/baseline/baseline.h"
#include "analyzer/baseline/config_list.h"
#include "analyzer/text/memory_size.h"
#include "tools/memplan/check_configuration.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/plan_flags.h"

namespace memplan::cli {
namespace {

struct BaselineFlags {
  PlanArguments plan;
  std::string out;
  std::string configs;
  std::string name;
};

// The first option on `command`'s line that a config list replaces (the model, plan flags,
// --name), or empty.
std::string OptionReplacedByConfigList(const CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    std::string name = option->get_name();
    if (option->count() > 0 && name != "--out" && name != "--configs") return name;
  }
  return {};
}

// The configurations to record: the config list's, or the one the command line describes.
Expected<ConfigList> ConfigurationsToRecord(const BaselineFlags& flags, const CLI::App& command) {
  if (!flags.configs.empty()) {
    if (std::string option = OptionReplacedByConfigList(command); !option.empty())
      return MakeError("baseline: " + option +
                       " conflicts with --configs (the list names the models and their flags)");
    return ReadConfigList(flags.configs);
  }
  if (flags.plan.analysis.model.empty())
    return MakeError(
        "baseline: a model (MODEL.onnx [plan flags]) or --configs LIST.json is required");
  MEMPLAN_TRY(PlanRequest request, ResolvePlanFlags(flags.plan, /*require_gpu=*/true));
  (void)request;  // validated here so RecordedFlagsOf may parse the integers
  if (std::string option = UnrecordableOption(command, {"--out", "--name", "--json", "--format"});
      !option.empty())
    return MakeError("baseline: " + option + " cannot be recorded in a baseline yet");
  CheckConfiguration config;
  config.name = flags.name.empty()
                    ? std::filesystem::path(flags.plan.analysis.model).stem().string()
                    : flags.name;
  // Relative to the baseline file, like every model path in it (baseline.h).
  config.model = ModelPathRelativeTo(flags.plan.analysis.model, flags.out);
  config.flags = RecordedFlagsOf(flags.plan);
  ConfigList list;
  list.configurations.push_back(std::move(config));
  list.directory = std::filesystem::absolute(flags.out).lexically_normal().parent_path();
  return list;
}

int RunBaseline(const BaselineFlags& flags, const CLI::App& command) {
  if (flags.out.empty())
    return ReportError("baseline: --out is required (e.g. --out memplan.baseline.json)");
  if (flags.plan.analysis.json || !flags.plan.analysis.format.empty())
    return ReportError("baseline: --json and --format do not apply (the baseline is JSON)");
  if (Status apart = CheckOutputsApart(
          {{"the model", flags.plan.analysis.model}, {"the config list", flags.configs}},
          {{"--out", flags.out}});
      !apart.ok())
    return ReportError(apart.error().message);
  Expected<ConfigList> list = ConfigurationsToRecord(flags, command);
  if (!list.ok()) return ReportError(list.error().message);
  std::vector<CommandFile> models;
  for (const CheckConfiguration& config : list->configurations)
    models.push_back({"the model of configuration '" + config.name + "'",
                      ResolveModelPath(list->directory, config.model).string()});
  if (Status apart = CheckOutputsApart(models, {{"--out", flags.out}}); !apart.ok())
    return ReportError(apart.error().message);

  Baseline baseline;
  for (const CheckConfiguration& config : list->configurations) {
    Expected<ConfigurationAnalysis> result = AnalyseConfiguration(config, list->directory);
    if (!result.ok()) return ReportError(result.error().message);
    // Model paths are rewritten relative to the baseline file, which may live elsewhere.
    CheckConfiguration recorded = config;
    recorded.model =
        ModelPathRelativeTo(ResolveModelPath(list->directory, config.model), flags.out);
    BaselineEntry entry{std::move(recorded), std::move(result->memory)};
    entry.plan = std::move(result->plan);
    entry.largest_fitting_micro_batch = result->largest_fitting_micro_batch;
    baseline.entries.push_back(std::move(entry));
  }
  Status written = WriteBaseline(baseline, flags.out);
  if (!written.ok()) return ReportError(written.error().message);

  std::string out;
  for (const BaselineEntry& entry : baseline.entries) {
    // What `check` will replay, so nobody has to open the file to learn what was pinned.
    out += "recorded " + entry.config.name + ": peak " + FormatBytes(entry.result.peak_bytes) +
           " (" + std::to_string(entry.result.peak_bytes) + " B); pinned plan " +
           PlanFlagsAsArguments(*entry.plan) + "; largest micro-batch that fits " +
           std::to_string(*entry.largest_fitting_micro_batch) + "\n";
  }
  out += "wrote " + flags.out + " (" + std::to_string(baseline.entries.size()) +
         (baseline.entries.size() == 1 ? " configuration)\n" : " configurations)\n");
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return kExitSuccess;
}

}  // namespace

Verb AddBaselineCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<BaselineFlags>(
      app, "baseline", "record predicted memory of one or more configurations for `memplan check`");
  AddPlanFlags(*command, flags->plan, /*gpu_required=*/true);
  // The model is optional here: --configs names the models instead.
  command->get_option("model")->required(false);
  command->add_option("--out,--output", flags->out, "the baseline JSON to write (required)")
      ->type_name("FILE");
  command
      ->add_option("--configs", flags->configs,
                   "a config list (memplan-configs/1 JSON) naming several model + flags pairs")
      ->type_name("LIST.json");
  command->add_option("--name", flags->name, "the configuration's name (default: the model's stem)")
      ->type_name("NAME");
  return VerbRunning(command, flags, [command = command](const BaselineFlags& parsed) {
    return RunBaseline(parsed, *command);
  });
}

}  // namespace memplan::cli
