// `memplan profile`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct ProfileFlags {
  AnalysisFlags analysis;
  std::string gpu;
};

}  // namespace

Verb AddProfileCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("profile", "trace a step with CUPTI and attribute memory");
  auto flags = std::make_shared<ProfileFlags>();
  AddAnalysisFlags(*command, flags->analysis);
  command->add_option("--gpu", flags->gpu, "the GPU the plan is for: a memory size or a name");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
