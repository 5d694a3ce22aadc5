// memplan CLI entry point: registers the verbs, parses the command line, runs the chosen verb.
// This is the exception boundary: CLI11's parse exceptions (and anything unexpected) become one
// line on stderr and exit code 2; nothing propagates past main.
#include <CLI/CLI.hpp>
#include <exception>
#include <string>
#include <vector>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"

namespace memplan::cli {
namespace {

std::string VerbNames(const std::vector<Verb>& verbs) {
  std::string names;
  for (const Verb& verb : verbs) names += (names.empty() ? "" : ", ") + verb.command->get_name();
  return names;
}

const Verb* FindVerb(const std::vector<Verb>& verbs, const std::string& name) {
  for (const Verb& verb : verbs)
    if (verb.command->get_name() == name) return &verb;
  return nullptr;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "memplan plans GPU memory for training deep networks: which micro-batch, gradient\n"
      "accumulation, FP16 placement and recompute points fit a GPU, and why.",
      "memplan"};
  app.footer(
      "Run `memplan <verb> --help` for a verb's flags.\n"
      "Exit codes: 0 success; 1 a check failed; 2 bad input or usage (one line on stderr).");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("memplan ") + MEMPLAN_VERSION,
                       "print memplan's version and exit");

  std::vector<Verb> verbs = {AddAnalyzeCommand(app), AddInspectCommand(app),
                             AddVerifyCommand(app),  AddProfileCommand(app),
                             AddCheckCommand(app),   AddBaselineCommand(app),
                             AddExportCommand(app),  AddReportCommand(app),
                             AddReplayCommand(app),  AddExplainCommand(app)};

  // Name the two commonest mistakes ourselves; CLI11 would call them "extra arguments".
  if (argc < 2) {
    return ReportError("a verb is required: one of " + VerbNames(verbs) + " (see memplan --help)");
  }
  std::string first = argv[1];
  if (!first.empty() && first[0] != '-' && FindVerb(verbs, first) == nullptr) {
    return ReportError("unknown verb '" + first + "': expected one of " + VerbNames(verbs) +
                       " (see memplan --help)");
  }
  if (!first.empty() && first[0] == '-' && first != "-h" && first != "--help" &&
      first != "--version") {
    return ReportError("unknown option '" + first +
                       "' before the verb: flags go after it, e.g. memplan inspect model.onnx "
                       "--json (see memplan --help)");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      // --help (of the app or the chosen verb) and --version print to stdout, exit 0.
      return app.exit(e);
    }
    std::string where;
    for (const Verb& verb : verbs)
      if (verb.command->parsed()) where = verb.command->get_name();
    if (where.empty()) return ReportError(std::string(e.what()) + " (see memplan --help)");
    return ReportError(where + ": " + e.what() + " (see memplan " + where + " --help)");
  }

  for (const Verb& verb : verbs)
    if (verb.command->parsed()) return verb.run();
  return ReportError("a verb is required: one of " + VerbNames(verbs));
}

}  // namespace
}  // namespace memplan::cli

int main(int argc, char** argv) {
  try {
    return memplan::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    return memplan::cli::ReportError(std::string("internal error: ") + e.what());
  } catch (...) {
    return memplan::cli::ReportError("internal error: unknown exception");
  }
}
