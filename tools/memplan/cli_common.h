#pragma once
// What every memplan verb shares: exit codes, the one-line error contract, the analysis flags
// (--batch, --dim, --batch-dim, --json, --format), model loading and progress output.
//
// Contract (ARCHITECTURE.md): exit 0 on success, 1 when a check failed, 2 for bad input or
// usage with exactly one line "memplan: <message>" on stderr. Exceptions (CLI11's) stop in main.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/pipeline/model_request.h"
#include "graph/expected.h"
#include "graph/fusion/fusion_set.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan::cli {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;

// Prints "memplan: <message>" as one line on stderr (newlines in `message` become "; ") and
// returns kExitUsage.
int ReportError(std::string_view message);

// Checks, before any work, that `path` (the value of `flag`) can be written: its folder exists
// and is writable, and the path is not a folder or a special file. Long verbs call it first so
// a typo in an output path fails in a second, not after the run.
Status CheckOutputPath(std::string_view flag, const std::string& path);

// Writes `text` to the file `path` (through a temporary file renamed over it, so a failed write
// leaves the old file: WriteTextFile), or to stdout when `path` is empty: what an output flag
// whose default is stdout (export --out, analyze --export-out) does with its value.
Status WriteToFileOrStdout(const std::string& path, std::string_view text);

// The one writer of a verb's stdout: `text` escaped for the terminal (analyzer/text/
// terminal_text.h), written and flushed. Error: "cannot write to standard output: <reason>"
// (a full disk, a closed pipe), which the verb reports with exit 2.
Status WriteStdout(std::string_view text);

// A file a command reads or writes, named as its messages name it: {"--svg", "t.svg"},
// {"the model", "m.onnx"}.
struct CommandFile {
  std::string what;
  std::string path;
};

// Refuses an output that is one of the command's inputs (the same file by device and inode, so
// a link or another spelling of the path is caught too) or that another output also names
// (the same file, or for files not yet there the same normalized absolute path). Outputs with an
// empty path (stdout) are skipped. Checked before any work, so nothing is read half and nothing
// is overwritten.
Status CheckOutputsApart(const std::vector<CommandFile>& inputs,
                         const std::vector<CommandFile>& outputs);

// A verb: its CLI11 subcommand and what runs when it was chosen (returns the exit code).
struct Verb {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

// The start of every verb's registration: its subcommand, added to `app`, and the flags struct
// its options write to. The flags are shared so that the Verb's run (VerbRunning) keeps them
// alive after the registration returns: CLI11 writes to them during the parse.
template <class Flags>
std::pair<CLI::App*, std::shared_ptr<Flags>> AddVerb(CLI::App& app, const std::string& name,
                                                     const std::string& description) {
  return {app.add_subcommand(name, description), std::make_shared<Flags>()};
}

// The registered verb: `run(*flags)` runs when `command` was chosen.
template <class Flags, class Run>
Verb VerbRunning(CLI::App* command, std::shared_ptr<Flags> flags, Run run) {
  return Verb{command, [flags = std::move(flags), run] { return run(*flags); }};
}

// A verb registered (so its flags parse and `--help` describes it) but not implemented in this
// build: running it prints "memplan <verb>: not available in this build yet" and exits 2, whatever
// the arguments (none is required, extras are allowed). `flag_storage` holds the variables the
// command's options write to; the returned Verb keeps it alive.
Verb NotAvailableVerb(CLI::App* command, std::shared_ptr<const void> flag_storage);

// Adds the model positional and --batch/--dim/--batch-dim/--json/--format to `command`.
// REQUIRES: `flags` outlives the parse (CLI11 keeps pointers to its members).
void AddAnalysisFlags(CLI::App& command, AnalysisFlags& flags);

// Progress lines ("memplan: importing model.onnx...") on stderr, only when stderr is a terminal
// and the output is not JSON, so pipes and CI logs stay clean.
class Progress {
 public:
  explicit Progress(OutputFormat format);
  void Report(std::string_view message) const;
  // As a ProgressSink (analyzer/pipeline/progress_sink.h): the pipeline reports through it.
  void operator()(std::string_view message) const { Report(message); }

 private:
  bool enabled_ = false;
};

}  // namespace memplan::cli
