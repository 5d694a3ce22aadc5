#pragma once
// ONNX import: reads a .onnx file into a Graph with symbolic shapes.
//
//   parse (protobuf) -> import fusions (graph/fusion/fusion_table.h: exporters' decompositions of
//   LayerNorm, GELU, SiLU, HardSwish, p=0 Dropout back into one node) -> structural checks
//   (subgraph ops, dangling inputs, cycles, negative or overflowing dims, external-data locations)
//   -> onnx::checker -> onnx shape inference (both on the model as written, before fusion, and only
//   where libonnx knows the model's opsets and ops, graph/libonnx_support.h; otherwise a warning
//   says they were skipped) ->
//   memplan shape propagation (op registry rules, symbolic folding of shape sub-graphs).
//
// Weight bytes are never read: initializers contribute metadata only, so models whose external
// data files are absent import fine, and large inline float payloads are skipped while parsing
// (graph/weight_free_model.h), so import time and memory follow the graph, not the weights.
// Every bad input is an Error with one line naming the problem.

#include <string>
#include <string_view>

#include "graph/expected.h"
#include "graph/fusion/fusion_set.h"
#include "graph/graph.h"

namespace memplan {

struct ImportOptions {
  std::string batch_symbol;  // name of the symbol that is the batch; "" = first dim of the first
                             // graph input
  // Which exporter decompositions are rewritten into the one op PyTorch runs, so saved bytes follow
  // its autograd node (graph/fusion/fusion_table.h): by default LayerNorm, GELU (erf and tanh),
  // SiLU, HardSwish and p=0 Dropout; kAll adds hand-written formulas (RMSNorm, gelu_new); kNone
  // keeps the graph as exported.
  FusionSet fusions = FusionSet::kFusedOps;
};

// Reads `path` only when it is a regular file under 2 GiB (graph/regular_file.h): a device or a
// FIFO is an error at once, never an unbounded read.
Expected<Graph> ImportOnnxModel(const std::string& path, const ImportOptions& options = {});

// The same import from bytes in memory (the fuzz target, tests); `name` stands for the path in
// messages. External-data locations are validated lexically, as for a file.
Expected<Graph> ImportOnnxModelFromBytes(std::string_view bytes, const std::string& name,
                                         const ImportOptions& options = {});

}  // namespace memplan
