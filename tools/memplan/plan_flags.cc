#include "tools/memplan/plan_flags.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/baseline/plan_flags.h"

namespace memplan::cli {

void AddPlanFlags(CLI::App& command, PlanArguments& flags, bool gpu_required) {
  AddAnalysisFlags(command, flags.analysis);
  std::vector<const PlanFlagSpec*> listed;
  for (const PlanFlagSpec& spec : kPlanFlagTable)
    if (!spec.analysis_flag) listed.push_back(&spec);
  std::sort(listed.begin(), listed.end(), [](const PlanFlagSpec* a, const PlanFlagSpec* b) {
    return a->help_position < b->help_position;
  });
  for (const PlanFlagSpec* spec : listed) {
    const std::string argument(spec->argument);
    const std::string help(spec->help);
    if (spec->type == PlanFlagType::kSwitch) {
      command.add_flag(argument, flags.Switch(spec->key), help);
      continue;
    }
    // --gpu has no default: a verb that needs it says so in its help rather than leaving it to
    // the error after the fact.
    const std::string shown_help = spec->key == "gpu" && gpu_required ? help + " (required)" : help;
    CLI::Option* option = command.add_option(argument, flags.Text(spec->key), shown_help);
    // Every default is shown, not only the ones the table marks: a user should not have to
    // read the source to learn that the optimizer is adam.
    if (spec->help_shows_default || !spec->cli_default.empty()) option->capture_default_str();
  }
}

}  // namespace memplan::cli
