// `memplan check`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct CheckFlags {
  AnalysisFlags analysis;
  std::string gpu;
  std::string baseline;
};

}  // namespace

Verb AddCheckCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("check", "CI gate: exit 1 when over budget or regressed");
  auto flags = std::make_shared<CheckFlags>();
  AddAnalysisFlags(*command, flags->analysis);
  command->add_option("--gpu", flags->gpu, "the GPU the plan is for: a memory size or a name");
  command->add_option("--baseline", flags->baseline,
                      "the baseline JSON written by `memplan baseline`");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
