#pragma once
// What `memplan inspect` reports about an imported model: op histogram, parameters by dtype,
// inputs/outputs with symbolic (and, where bound, concrete) dims, symbols, ops the registry does
// not know, and warnings — the importer's plus checks for exports that will mislead a training
// memory estimate. An inference-mode (eval) export is recognised only by what such an export
// leaves, never by a layer being absent (SqueezeNet has no BatchNorm, LLaMA no Dropout):
//  * BatchNormalization in inference mode: training_mode = 0 at opset >= 14, or, before 14, a
//    node without the running-statistics outputs a training export writes (torch 1.13: 5 outputs
//    at opset 13, 3 with training_mode = 1 at opset 15);
//  * BatchNorm folded into Conv: torch.onnx's eval export constant-folds each BatchNorm into the
//    Conv before it, and the folded weight and bias become initializers that no module owns,
//    named "onnx::Conv_<n>"; a Conv whose weight and bias both carry such names is that
//    (a training export keeps the parameters' own names, "features.0.weight").
//
// Every collection is in a deterministic order (maps sorted by key, tensors in graph order), so
// rendering a summary twice gives identical bytes.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/symbols.h"

namespace memplan {

struct TensorSummary {
  std::string name;
  std::string dtype;              // DTypeName ("float32")
  bool shape_known = true;        // false: not even the rank is known (dims is empty)
  std::vector<std::string> dims;  // one per axis, symbolic: "batch", "3", "seq + 1"
  // The dims evaluated under the bindings, when every one of them is bound.
  std::optional<std::vector<int64_t>> bound_dims;
};

struct SymbolSummary {
  std::string name;
  bool is_batch = false;         // the graph's batch symbol (what --batch binds)
  std::optional<int64_t> value;  // bound value, if any
};

struct DTypeTotals {
  int64_t count = 0;  // elements
  int64_t bytes = 0;
};

struct ModelSummary {
  std::string graph_name;
  std::string producer_name;
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // domain ("" = ai.onnx) -> version

  int64_t node_count = 0;
  // Op type -> number of nodes; ops outside the default domain are keyed "domain:OpType".
  std::map<std::string, int64_t> ops;

  // Only ValueKind::kParameter values count: trained floating initializers. Non-trainable
  // buffers (BatchNorm running statistics imported as constants) are not parameters.
  int64_t parameter_count = 0;
  int64_t parameter_bytes = 0;
  // Floating initializers training does not update (no gradient reaches them): BatchNorm
  // running statistics, float masks. They take memory but are not parameters.
  int64_t buffer_count = 0;
  int64_t buffer_bytes = 0;
  std::map<std::string, DTypeTotals> parameters_by_dtype;  // DTypeName -> totals

  std::vector<TensorSummary> inputs;  // graph inputs fed per step (not initializers)
  std::vector<TensorSummary> outputs;
  std::vector<SymbolSummary> symbols;    // in SymbolTable order
  std::vector<std::string> unknown_ops;  // sorted, unique; registry has no entry for them
  std::vector<std::string> warnings;     // importer's first, then the summary's own checks
};

// REQUIRES: bindings were made for this graph's symbol table (or are empty).
ModelSummary SummarizeModel(const Graph& graph, const Bindings& bindings);

}  // namespace memplan
