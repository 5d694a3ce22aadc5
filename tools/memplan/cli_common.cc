#include "tools/memplan/cli_common.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "analyzer/text/markup.h"
#include "graph/onnx_import.h"

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
  std::fwrite(text.data(), 1, text.size(), stdout);
  return OkStatus();
}

int ReportError(std::string_view message) {
  std::string line = ReplaceChars(message, {{'\n', "; "}, {'\r', ""}});
  while (!line.empty() && (line.back() == ' ' || line.back() == ';')) line.pop_back();
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

Expected<AnalysisRequest> ResolveAnalysisFlags(const AnalysisFlags& flags) {
  AnalysisRequest request;
  request.model = flags.model;
  request.batch_dim = flags.batch_dim;
  if (!flags.batch.empty()) {
    MEMPLAN_TRY(int64_t batch, ParsePositiveInt(flags.batch, "--batch"));
    request.batch = batch;
  }
  for (const std::string& text : flags.dims) {
    MEMPLAN_TRY(DimBinding dim, ParseDimBinding(text));
    request.dims.push_back(std::move(dim));
  }
  if (flags.format.empty() || flags.format == "text") {
    request.format = OutputFormat::kText;
  } else if (flags.format == "json") {
    request.format = OutputFormat::kJson;
  } else if (flags.format == "markdown") {
    request.format = OutputFormat::kMarkdown;
  } else {
    return MakeError("--format: expected text, json or markdown, got '" + flags.format + "'");
  }
  if (flags.json) {
    if (!flags.format.empty() && request.format != OutputFormat::kJson) {
      return MakeError("--json conflicts with --format " + flags.format);
    }
    request.format = OutputFormat::kJson;
  }
  return request;
}

Expected<Graph> LoadModel(const AnalysisRequest& request, FusionSet fusions) {
  std::error_code ec;
  auto status = std::filesystem::status(request.model, ec);
  if (ec || !std::filesystem::exists(status)) {
    return MakeError("cannot open model '" + request.model + "': no such file");
  }
  if (std::filesystem::is_directory(status)) {
    return MakeError("cannot open model '" + request.model + "': it is a directory");
  }
  ImportOptions options;
  options.batch_symbol = request.batch_dim;
  options.fusions = fusions;
  return ImportOnnxModel(request.model, options);
}

Progress::Progress(OutputFormat format)
    : enabled_(format != OutputFormat::kJson && isatty(STDERR_FILENO) == 1) {}

void Progress::Report(std::string_view message) const {
  if (!enabled_) return;
  std::fprintf(stderr, "memplan: %.*s\n", static_cast<int>(message.size()), message.data());
}

}  // namespace memplan::cli
