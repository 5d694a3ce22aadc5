// `memplan analyze`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct AnalyzeFlags {
  AnalysisFlags analysis;
  std::string gpu;
  std::string global_batch;
  std::string reserve;
};

}  // namespace

Verb AddAnalyzeCommand(CLI::App& app) {
  CLI::App* command =
      app.add_subcommand("analyze", "plan micro-batch, accumulation, precision, recompute");
  auto flags = std::make_shared<AnalyzeFlags>();
  AddAnalysisFlags(*command, flags->analysis);
  command->add_option("--gpu", flags->gpu,
                      "the GPU: a memory size (24G = 24 GiB, 80GB = 80e9 bytes) or a name "
                      "(A100-80GB, H100, RTX3090)");
  command->add_option("--global-batch", flags->global_batch,
                      "the target batch per optimizer step (micro-batch x accumulation steps)");
  command->add_option("--reserve", flags->reserve, "memory to keep free on the GPU, e.g. 1G");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
