#include "analyzer/pipeline/model_request.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "analyzer/pipeline/hugging_face_config.h"
#include "graph/onnx_import.h"

namespace memplan {

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

Expected<Graph> LoadModel(const AnalysisRequest& request, FusionSet fusions,
                          const ProgressSink& progress) {
  ImportOptions options;
  options.batch_symbol = request.batch_dim;
  options.fusions = fusions;
  if (LooksLikeHubId(request.model)) {
    MEMPLAN_TRY(std::string config, HubConfigPath(request.model, progress));
    MEMPLAN_TRY(std::string converted, HuggingFaceConfigAsOnnx(config, progress));
    return ImportOnnxModel(converted, options);
  }
  if (IsHuggingFaceConfig(request.model)) {
    MEMPLAN_TRY(std::string converted, HuggingFaceConfigAsOnnx(request.model, progress));
    return ImportOnnxModel(converted, options);
  }
  std::error_code ec;
  auto status = std::filesystem::status(request.model, ec);
  if (ec || !std::filesystem::exists(status)) {
    return MakeError("cannot open model '" + request.model + "': no such file");
  }
  if (std::filesystem::is_directory(status)) {
    return MakeError("cannot open model '" + request.model +
                     "': it is a directory without a Hugging Face config.json");
  }
  return ImportOnnxModel(request.model, options);
}

}  // namespace memplan
