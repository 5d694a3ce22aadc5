#pragma once
// ONNX import: reads a .onnx file into a Graph with symbolic shapes.
//
//   parse (protobuf) -> GELU fusion (graph/gelu_fusion.h) -> structural checks (subgraph ops,
//   dangling inputs, cycles, negative or overflowing dims, external-data locations) ->
//   onnx::checker -> onnx shape inference (both only where libonnx knows the model's opsets and
//   ops, graph/libonnx_support.h; otherwise a warning says they were skipped) ->
//   memplan shape propagation (op registry rules, symbolic folding of shape sub-graphs).
//
// Weight bytes are never read: initializers contribute metadata only, so models whose external
// data files are absent import fine. Every bad input is an Error with one line naming the problem.

#include <string>

#include "graph/expected.h"
#include "graph/graph.h"

namespace memplan {

struct ImportOptions {
  std::string batch_symbol;  // name of the symbol that is the batch; "" = first dim of the first
                             // graph input
  // Rewrite exporters' five-node exact GELU (Div, Erf, Add, Mul, Mul) into one Gelu node, which
  // is what frameworks run and what autograd saves for (graph/gelu_fusion.h).
  bool fuse_gelu = true;
};

Expected<Graph> ImportOnnxModel(const std::string& path, const ImportOptions& options = {});

}  // namespace memplan
