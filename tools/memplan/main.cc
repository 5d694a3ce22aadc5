// memplan CLI entry point: registers the verbs, parses the command line, runs the chosen verb.
// CLI11's parse exceptions become one line on stderr and exit code 2 here; anything else that
// escapes (std::bad_alloc among them) stops in RunCatchingEscapes (escaped_exceptions.h).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/memplan/cli_common.h"
#include "tools/memplan/commands.h"
#include "tools/memplan/escaped_exceptions.h"

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

// Every verb keeps an option's value as text and reads '' as "not given", so `--global-batch ''`
// (an unset shell variable) silently planned without it: a value given empty is refused here,
// for every value-taking option and positional of every verb.
Status CheckNoEmptyValues(const CLI::App& command) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_type_size() <= 0 || option->count() == 0) continue;
    for (const std::string& value : option->results()) {
      if (!value.empty()) continue;
      return MakeError(command.get_name() + ": " + option->get_name() +
                       ": an empty value; give one or leave it out");
    }
  }
  return OkStatus();
}

// A verb's exit code, unless what it wrote to stdout did not all arrive (a full disk, a closed
// pipe): then exit 2, as for any other file that could not be written. Each verb's own writes
// already went through WriteStdout; closing here catches what is still buffered.
int CloseStdout(int code) {
  // A verb that failed has said why in its one line (WriteStdout's own error among them).
  if (code == kExitUsage) {
    std::fclose(stdout);
    return code;
  }
  errno = 0;
  const bool failed = std::ferror(stdout) != 0 || std::fflush(stdout) != 0;
  const int error = errno;
  if (std::fclose(stdout) != 0 || failed) {
    const int reason = error != 0 ? error : errno;
    return ReportError(std::string("cannot write to standard output: ") +
                       (reason != 0 ? std::strerror(reason) : "write failed"));
  }
  return code;
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

  for (const Verb& verb : verbs) {
    if (!verb.command->parsed()) continue;
    if (Status given = CheckNoEmptyValues(*verb.command); !given.ok())
      return ReportError(given.error().message);
    return CloseStdout(verb.run());
  }
  return ReportError("a verb is required: one of " + VerbNames(verbs));
}

}  // namespace
}  // namespace memplan::cli

int main(int argc, char** argv) {
  return memplan::cli::RunCatchingEscapes([&] { return memplan::cli::Main(argc, argv); });
}
