// `memplan check --baseline memplan.baseline.json [--tolerance 1%] [--format FORMAT]
// [--configs memplan.configs.json]`: analyses every configuration of the baseline again (or those
// of the config list, so added and removed configurations show) and compares the predicted peaks
// with the recorded ones (analyzer/baseline/check_report.h, docs/ci_checks.md).
// Exit 0 when every configuration passed, improved or is new; 1 on a regression or a configuration
// missing from the list; 2 on an error before any comparison (one line on stderr). The report goes
// to stdout and is deterministic.
#include <cstdio>
#include <memory>
#include <string>

#include "analyzer/baseline/baseline.h"
#include "analyzer/baseline/check_format.h"
#include "analyzer/baseline/check_report.h"
#include "analyzer/baseline/config_list.h"
#include "analyzer/baseline/json_file.h"
#include "analyzer/text/tolerance.h"
#include "tools/memplan/check_configuration.h"
#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct CheckFlags {
  std::string baseline;
  std::string tolerance = std::string(kDefaultTolerance);
  std::string format = "text";
  std::string configs;
  int top_nodes = 5;
};

// The configurations to analyse now, with model paths written relative to the baseline file so
// an unchanged configuration compares equal to its recorded one.
Expected<std::vector<CheckConfiguration>> CurrentConfigurations(const CheckFlags& flags,
                                                                const Baseline& recorded) {
  std::vector<CheckConfiguration> configs;
  if (flags.configs.empty()) {
    for (const BaselineEntry& entry : recorded.entries) configs.push_back(entry.config);
    return configs;
  }
  MEMPLAN_TRY(ConfigList list, ReadConfigList(flags.configs));
  for (CheckConfiguration& config : list.configurations) {
    config.model =
        ModelPathRelativeTo(ResolveModelPath(list.directory, config.model), flags.baseline);
    configs.push_back(std::move(config));
  }
  return configs;
}

// An error after the format is known (exit 2): the one stderr line, and for the machine formats
// the same error in the format CI reads (a JUnit file with an <error>, a GitHub ::error), so a
// pipeline that keeps the report never finds it empty.
int ReportCheckError(const CheckFlags& flags, CheckFormat format, const std::string& message) {
  std::string out = FormatCheckError(message, flags.baseline, format);
  static_cast<void>(WriteStdout(out));  // the error below is what counts
  return ReportError(message);
}

int RunCheck(const CheckFlags& flags) {
  Expected<CheckFormat> format = ParseCheckFormat(flags.format);
  if (!format.ok()) return ReportError("--format: " + format.error().message);
  if (flags.baseline.empty())
    return ReportCheckError(flags, *format,
                            "check: --baseline is required (the file `memplan baseline` wrote)");
  Expected<Tolerance> tolerance = ParseTolerance(flags.tolerance);
  if (!tolerance.ok())
    return ReportCheckError(flags, *format, "--tolerance: " + tolerance.error().message);
  if (flags.top_nodes < 0)
    return ReportCheckError(flags, *format, "--top-nodes: expected a count >= 0");
  Expected<Baseline> recorded = ReadBaseline(flags.baseline);
  if (!recorded.ok()) return ReportCheckError(flags, *format, recorded.error().message);
  auto configs = CurrentConfigurations(flags, *recorded);
  if (!configs.ok()) return ReportCheckError(flags, *format, configs.error().message);

  Baseline current;
  for (CheckConfiguration& config : *configs) {
    // The recorded plan is replayed when the configuration is the one recorded: re-planning
    // would let a grown model pick a smaller micro-batch and hide the growth.
    const BaselineEntry* before = recorded->Find(config.name);
    const PlanFlags* replay =
        before != nullptr && before->plan && before->config == config ? &*before->plan : nullptr;
    Expected<ConfigurationAnalysis> result =
        AnalyseConfiguration(config, recorded->directory, replay);
    if (!result.ok()) return ReportCheckError(flags, *format, result.error().message);
    BaselineEntry entry{std::move(config), std::move(result->memory)};
    entry.plan = std::move(result->plan);
    entry.largest_fitting_micro_batch = result->largest_fitting_micro_batch;
    current.entries.push_back(std::move(entry));
  }
  CompareOptions options;
  options.top_nodes = static_cast<size_t>(flags.top_nodes);
  options.baseline_path = flags.baseline;
  if (Expected<std::string> text = ReadTextFile(flags.baseline); text.ok())
    options.baseline_lines = ConfigurationLines(*text);
  CheckReport report = CompareToBaseline(*recorded, current, *tolerance, options);
  std::string out = FormatCheckReport(report, *format);
  if (Status written = WriteStdout(out); !written.ok()) return ReportError(written.error().message);
  return report.ExitCode();
}

}  // namespace

Verb AddCheckCommand(CLI::App& app) {
  const auto [command, flags] = AddVerb<CheckFlags>(
      app, "check", "CI gate: compare predicted memory with a baseline; exit 1 on a regression");
  command->add_option("--baseline", flags->baseline, "the baseline JSON `memplan baseline` wrote")
      ->type_name("FILE");
  command
      ->add_option("--tolerance", flags->tolerance,
                   "how much a peak may grow: a percentage of the recorded peak (2%) or a size "
                   "(64MiB); default " +
                       std::string(kDefaultTolerance))
      ->type_name("T");
  command->add_option("--format", flags->format, "text (default), markdown, github, junit or json")
      ->type_name("FORMAT");
  command
      ->add_option("--configs", flags->configs,
                   "analyse this config list instead of the baseline's configurations (shows "
                   "added and removed ones)")
      ->type_name("LIST.json");
  command
      ->add_option("--top-nodes", flags->top_nodes,
                   "nodes whose saved activations grew to name per configuration (default 5)")
      ->type_name("N");
  return VerbRunning(command, flags, RunCheck);
}

}  // namespace memplan::cli
