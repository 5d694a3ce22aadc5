// `memplan verify`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct VerifyFlags {
  AnalysisFlags analysis;
  std::string gpu;
};

}  // namespace

Verb AddVerifyCommand(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("verify", "run the plan on the runtime, compare measured memory");
  auto flags = std::make_shared<VerifyFlags>();
  AddAnalysisFlags(*command, flags->analysis);
  command->add_option("--gpu", flags->gpu, "the GPU the plan is for: a memory size or a name");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
