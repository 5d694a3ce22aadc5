#pragma once
// The model a verb analyses and how its output is asked for: the model path, --batch, --dim,
// --batch-dim and the output format, as text (AnalysisFlags, which the CLI binds) and validated
// (AnalysisRequest); and the import of the model they name.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/pipeline/progress_sink.h"
#include "graph/expected.h"
#include "graph/fusion/fusion_set.h"
#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

enum class OutputFormat { kText, kJson, kMarkdown };

// The raw flag values shared by analysis verbs, bound by AddAnalysisFlags. Values are kept as
// text and validated by ResolveAnalysisFlags so errors use memplan's own one-line messages.
struct AnalysisFlags {
  std::string model;              // positional: path to the .onnx file
  std::string batch;              // --batch N
  std::vector<std::string> dims;  // --dim name=value, repeatable
  std::string batch_dim;          // --batch-dim NAME
  bool json = false;              // --json
  std::string format;             // --format text|json|markdown
};

// The flags, validated: --batch positive, each --dim name=positive, --format known, --json not
// contradicting --format.
struct AnalysisRequest {
  std::string model;
  std::optional<int64_t> batch;
  std::vector<DimBinding> dims;
  std::string batch_dim;
  OutputFormat format = OutputFormat::kText;
};
Expected<AnalysisRequest> ResolveAnalysisFlags(const AnalysisFlags& flags);

// Imports the model (errors: missing/unreadable file, anything the importer rejects), applying
// the import fusions `fusions` selects (the planning verbs' --fusions; inspect uses the default).
// A Hugging Face config (a config.json or its folder) is converted to ONNX first
// (analyzer/pipeline/hugging_face_config.h), which `progress` reports.
Expected<Graph> LoadModel(const AnalysisRequest& request, FusionSet fusions = FusionSet::kFusedOps,
                          const ProgressSink& progress = NoProgress());

}  // namespace memplan
