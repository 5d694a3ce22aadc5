// `memplan export`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct ExportFlags {
  AnalysisFlags analysis;
  std::string gpu;
  std::string output;
};

}  // namespace

Verb AddExportCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("export", "export the chosen plan as a training config");
  auto flags = std::make_shared<ExportFlags>();
  AddAnalysisFlags(*command, flags->analysis);
  command->add_option("--gpu", flags->gpu, "the GPU the plan is for: a memory size or a name");
  command->add_option("--output", flags->output, "where to write the config");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
