// `memplan report`: registered with its documented flags; not implemented in this build yet.
#include <memory>
#include <string>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

struct ReportFlags {
  std::string input;
  std::string output;
};

}  // namespace

Verb AddReportCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("report", "render a report from `analyze --json` output");
  auto flags = std::make_shared<ReportFlags>();
  command->add_option("input", flags->input, "the JSON written by analyze --json");
  command->add_option("--output", flags->output, "where to write the report");
  return NotAvailableVerb(command, flags);
}

}  // namespace memplan::cli
