#include "tools/memplan/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "analyzer/text/markup.h"
#include "analyzer/text/terminal_text.h"

namespace memplan::cli {

Status CheckOutputPath(std::string_view flag, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string named = std::string(flag) + " '" + path + "'";
  if (path.empty()) return MakeError(std::string(flag) + ": an empty path");
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::exists(status)) {
    if (fs::is_directory(status)) return MakeError(named + " is a folder, not a file");
    if (!fs::is_regular_file(status)) return MakeError(named + " is not a regular file");
  }
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, error)) {
    return MakeError(named + ": the folder '" + folder.string() + "' does not exist");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    return MakeError(named + ": the folder '" + folder.string() + "' is not writable");
  }
  return OkStatus();
}

Status WriteToFileOrStdout(const std::string& path, std::string_view text) {
  if (!path.empty()) return WriteTextFile(path, text);
  return WriteStdout(text);
}

Status WriteStdout(std::string_view text) {
  const std::string escaped = EscapeForTerminal(text);
  errno = 0;
  const size_t written = std::fwrite(escaped.data(), 1, escaped.size(), stdout);
  if (written != escaped.size() || std::fflush(stdout) != 0) {
    const int error = errno;
    return MakeError(std::string("cannot write to standard output: ") +
                     (error != 0 ? std::strerror(error) : "write failed"));
  }
  return OkStatus();
}

namespace {

// The identity of an existing file, or nullopt.
std::optional<std::pair<dev_t, ino_t>> FileIdentity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return std::nullopt;
  return std::make_pair(info.st_dev, info.st_ino);
}

std::string NormalPath(const std::string& path) {
  std::error_code error;
  std::filesystem::path normal = std::filesystem::weakly_canonical(path, error);
  if (error) normal = std::filesystem::absolute(path, error).lexically_normal();
  return normal.string();
}

}  // namespace

Status CheckOutputsApart(const std::vector<CommandFile>& inputs,
                         const std::vector<CommandFile>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const CommandFile& out = outputs[i];
    if (out.path.empty()) continue;
    const auto identity = FileIdentity(out.path);
    for (const CommandFile& in : inputs) {
      if (in.path.empty() || !identity || FileIdentity(in.path) != identity) continue;
      return MakeError(out.what + " '" + out.path + "' is " + in.what + " '" + in.path +
                       "' this command reads; refusing to overwrite it");
    }
    for (size_t j = 0; j < i; ++j) {
      const CommandFile& other = outputs[j];
      if (other.path.empty()) continue;
      const bool same = identity ? FileIdentity(other.path) == identity
                                 : NormalPath(other.path) == NormalPath(out.path);
      if (same)
        return MakeError(other.what + " and " + out.what + " both name '" + out.path +
                         "'; give each output its own file");
    }
  }
  return OkStatus();
}

int ReportError(std::string_view message) {
  std::string line = ReplaceChars(message, {{'\n', "; "}, {'\r', ""}});
  while (!line.empty() && (line.back() == ' ' || line.back() == ';')) line.pop_back();
  line = EscapeForTerminal(line);
  std::fprintf(stderr, "memplan: %s\n", line.c_str());
  return kExitUsage;
}

Verb NotAvailableVerb(CLI::App* command, std::shared_ptr<const void> flag_storage) {
  // Neither a missing model nor a flag not registered yet may hide the real reason.
  command->allow_extras();
  for (CLI::Option* option : command->get_options()) option->required(false);
  std::string name = command->get_name();
  return Verb{command, [name, storage = std::move(flag_storage)] {
                std::fprintf(stderr, "memplan %s: not available in this build yet\n", name.c_str());
                return kExitUsage;
              }};
}

void AddAnalysisFlags(CLI::App& command, AnalysisFlags& flags) {
  command.add_option("model", flags.model, "the model: an ONNX file")
      ->required()
      ->type_name("MODEL.onnx");
  command.add_option("--batch", flags.batch, "bind the batch dimension to N")->type_name("N");
  command.add_option("--dim", flags.dims, "bind a symbolic dim, e.g. seq=512 (repeatable)")
      ->type_name("NAME=N");
  command
      .add_option("--batch-dim", flags.batch_dim,
                  "the symbol that is the batch (default: input 0, axis 0)")
      ->type_name("NAME");
  command.add_flag("--json", flags.json, "JSON output (schema memplan/1)");
  command.add_option("--format", flags.format, "text (default), json or markdown")
      ->type_name("FORMAT");
}

Progress::Progress(OutputFormat format)
    : enabled_(format != OutputFormat::kJson && isatty(STDERR_FILENO) == 1) {}

void Progress::Report(std::string_view message) const {
  if (!enabled_) return;
  const std::string line = EscapeForTerminal(message);
  std::fprintf(stderr, "memplan: %s\n", line.c_str());
}

}  // namespace memplan::cli
