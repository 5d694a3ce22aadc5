// `memplan baseline`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct BaselineFlags {
  AnalysisFlags analysis;
  std::string gpu;
  std::string output;
};

}  // namespace

Verb AddBaselineCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("baseline", "write a baseline JSON for `memplan check`");
  auto flags = std::make_shared<BaselineFlags>();
  AddAnalysisFlags(*command, flags->analysis);
  command->add_option("--gpu", flags->gpu, "the GPU the plan is for: a memory size or a name");
  command->add_option("--output", flags->output, "where to write the baseline JSON");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
