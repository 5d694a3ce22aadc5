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
#include "analyzer/vocabulary/tolerance.h"
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

int RunCheck(const CheckFlags& flags) {
  if (flags.baseline.empty())
    return ReportError("check: --baseline is required (the file `memplan baseline` wrote)");
  Expected<Tolerance> tolerance = ParseTolerance(flags.tolerance);
  if (!tolerance.ok()) return ReportError("--tolerance: " + tolerance.error().message);
  Expected<CheckFormat> format = ParseCheckFormat(flags.format);
  if (!format.ok()) return ReportError("--format: " + format.error().message);
  if (flags.top_nodes < 0) return ReportError("--top-nodes: expected a count >= 0");
  Expected<Baseline> recorded = ReadBaseline(flags.baseline);
  if (!recorded.ok()) return ReportError(recorded.error().message);
  auto configs = CurrentConfigurations(flags, *recorded);
  if (!configs.ok()) return ReportError(configs.error().message);

  Baseline current;
  for (CheckConfiguration& config : *configs) {
    Expected<MemoryResult> result = AnalyseConfiguration(config, recorded->directory);
    if (!result.ok()) return ReportError(result.error().message);
    current.entries.push_back(BaselineEntry{std::move(config), std::move(*result)});
  }
  CompareOptions options;
  options.top_nodes = static_cast<size_t>(flags.top_nodes);
  options.baseline_path = flags.baseline;
  CheckReport report = CompareToBaseline(*recorded, current, *tolerance, options);
  std::string out = FormatCheckReport(report, *format);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return report.ExitCode();
}

}  // namespace

Verb AddCheckCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand(
      "check", "CI gate: compare predicted memory with a baseline; exit 1 on a regression");
  auto flags = std::make_shared<CheckFlags>();
  command->add_option("--baseline", flags->baseline, "the baseline JSON `memplan baseline` wrote")
      ->type_name("FILE");
  command
      ->add_option("--tolerance", flags->tolerance,
                   "how much a peak may grow: a percentage of the recorded peak (2%) or a size "
                   "(64MiB); default " +
                       std::string(kDefaultTolerance))
      ->type_name("T");
  command->add_option("--format", flags->format, "text (default), markdown, github or junit")
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
  return Verb{command, [flags] { return RunCheck(*flags); }};
}

}  // namespace memplan::cli
