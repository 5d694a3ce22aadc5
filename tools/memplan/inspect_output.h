#pragma once
// Renders a ModelSummary for `memplan inspect`: text (80 columns), JSON (memplan/1) and markdown.
// All three are pure functions of the summary and the model path, so identical inputs give
// identical bytes.

#include <string>

#include "graph/model_summary.h"

namespace memplan::cli {

// The JSON object (docs/json_schema.md, "memplan inspect --json"), keys in a fixed order:
// schema, command, model {path, graph_name, producer_name, ir_version, opset_imports},
// node_count, parameter_count, parameter_bytes, parameters_by_dtype {dtype: {count, bytes}},
// ops {op type: count}, inputs/outputs [{name, dtype, dims [strings], bound_dims [ints]|null}],
// symbols [{name, is_batch, value|null}], unknown_ops [strings], warnings [strings].
std::string RenderInspectJson(const ModelSummary& summary, const std::string& model_path);
std::string RenderInspectText(const ModelSummary& summary, const std::string& model_path);
std::string RenderInspectMarkdown(const ModelSummary& summary, const std::string& model_path);

}  // namespace memplan::cli
