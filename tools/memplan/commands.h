#pragma once
// One registration function per verb, each in its own <verb>_command.cc. main.cc adds them all
// as subcommands, parses, and runs the chosen one.

#include <CLI/CLI.hpp>

#include "tools/memplan/cli_common.h"

namespace memplan::cli {

Verb AddAnalyzeCommand(CLI::App& app);
Verb AddInspectCommand(CLI::App& app);
Verb AddVerifyCommand(CLI::App& app);
Verb AddProfileCommand(CLI::App& app);
Verb AddCheckCommand(CLI::App& app);
Verb AddBaselineCommand(CLI::App& app);
Verb AddExportCommand(CLI::App& app);
Verb AddReportCommand(CLI::App& app);
Verb AddReplayCommand(CLI::App& app);
Verb AddExplainCommand(CLI::App& app);

}  // namespace memplan::cli
